"""Thin callbacks: validate, call model_core, call a figure function, return. One module per tab."""
