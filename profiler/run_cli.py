"""Subcommands of this profiler piece (registered by jobgauge.cli)."""


def register(subparsers) -> None:
    """Add this piece's subcommands to the jobgauge parser."""
