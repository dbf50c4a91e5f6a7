"""``python -m groundwatch`` runs the same CLI as the ``groundwatch`` command, for environments
where the console script is not on PATH."""

from groundwatch.cli.main import main

main()
