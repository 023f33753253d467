"""Core subcommands: import, runs, train, predict, serve."""


def register(subparsers) -> None:
    """Add the core subcommands."""
