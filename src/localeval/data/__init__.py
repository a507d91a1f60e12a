"""Items and the loaders that make them."""
