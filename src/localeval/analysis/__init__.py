"""Analyses built on the metrics: language and cultural gaps, safeguard error analyses."""
