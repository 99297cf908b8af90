"""The ``awl`` command's entry point (also ``python -m awl``).

Importing the ``awl`` package needs only the standard library, so a broken
environment — a dependency removed or never installed beside awl — ends in
one line naming the fix instead of a traceback, wherever the import happens
(at start-up, or when a command first needs an SDK or the terminal UI).
"""

from __future__ import annotations

import gc
import sys

from awl.errors import missing_dependency


def main() -> None:
    """Run the CLI; a missing or outdated dependency is one line on stderr and exit
    status 1."""
    try:
        # Importing the CLI makes many objects that live as long as the
        # process: collecting among them only costs start-up time.
        gc.disable()
        try:
            from awl.cli import main as cli
        except KeyboardInterrupt:
            # A Ctrl-C before awl is ready to say anything of it: the status a Ctrl-C
            # gives a command, not a traceback of the import it stopped.
            sys.exit(130)
        finally:
            gc.enable()
        cli(quick_exit=True)
    except ImportError as exc:
        line = missing_dependency(exc)
        if line is None:
            raise
        sys.stderr.write(f"awl: {line}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
