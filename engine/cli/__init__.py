"""The headless subcommands of main.py that need only the engine (no Qt)."""
