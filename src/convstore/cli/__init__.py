"""The ``convstore`` command line."""

from convstore.cli.main import main

__all__ = ["main"]
