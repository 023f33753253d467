"""Subcommands of the dag area (registered by jobgauge.cli)."""


def register(subparsers) -> None:
    """Add this area's subcommands to the jobgauge parser."""
