"""Forms generated from protobuf descriptors (the schema drives the UI): layers, nets, solvers."""

from app.forms.form import FormOptions, MessageForm

__all__ = ["FormOptions", "MessageForm"]
