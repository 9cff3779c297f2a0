"""Choosing shardings automatically."""
