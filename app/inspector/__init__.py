"""The inspector: the selected layer (or the net) as a form generated from the schema."""

from app.inspector.panel import Inspector

__all__ = ["Inspector"]
