"""Experiments on the document's net in the window: Compare Initialisations."""
