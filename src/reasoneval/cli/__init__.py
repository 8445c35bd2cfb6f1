"""The command line: every command's argument parsing, one module per command group."""

from reasoneval.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
