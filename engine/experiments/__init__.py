"""Experiments on a net: one net trained under several initialisations side by side (compare_init)."""
