"""Weight initialisation: a filler per parameter blob, a preview of its draw, and how the net starts."""
