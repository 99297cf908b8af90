"""Public names of a package imported on first use (PEP 562).

``awl sessions`` and ``awl --help`` must start fast: they need a few light
names of :mod:`awl.store` and :mod:`awl.ui`, not numpy or prompt_toolkit.
A package lists each public name with the private module that defines it;
the name is imported the first time it is asked for, then cached.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose public names are ``homes``'
    keys, each defined in the submodule it maps to (``"name"`` alone for a
    submodule that is itself public)."""

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        full = f"{package}.{home}"
        # The import statement's machinery, not importlib's: -X importtime
        # (which the start-up tests read) sees only imports made through it.
        __import__(full)
        module = sys.modules[full]
        value = module if home == name else getattr(module, name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(homes))

    return getattr_, dir_
