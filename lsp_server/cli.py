"""Command line entry point."""


def main() -> int:
    """Run the agent-assist command line."""
    return 0
