"""Dataset tools for safety teams: annotation agreement and aggregation, the cultural
content-generation builder, the diversity map, and training an embedding guard."""
