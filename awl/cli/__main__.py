"""``python -m awl.cli``: the ``awl`` command (through :mod:`awl.__main__`'s guard)."""

from awl.__main__ import main

main()
