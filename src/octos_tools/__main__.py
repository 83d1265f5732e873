"""``python -m octos_tools`` runs the ``octos-tools`` command."""

from .cli import main

if __name__ == "__main__":
    main()
