"""The subcommands that use a trained model (deploy, classify, extract_features, evaluate): their
parsers, added to main.py's in one call so main.py names them once."""

from __future__ import annotations

import argparse
import importlib

COMMANDS = ("deploy", "classify", "extract_features", "evaluate")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    for name in COMMANDS:
        importlib.import_module(f"engine.cli.{name}").add_parser(sub)
