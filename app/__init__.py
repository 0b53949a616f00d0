"""The application: the document model, its commands, and the Qt window and panels around it."""
