"""``python -m loopwarden`` runs the CLI."""

from loopwarden.cli import main

main()
