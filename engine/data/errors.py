"""The one error a data source raises: a file that is missing, unreadable or not what it should be."""

from __future__ import annotations

from engine.errors import EngineError


class DataError(EngineError):
    """A data file (database, list, image, HDF5 file, mean file) cannot be used; the message names it."""
