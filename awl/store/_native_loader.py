"""Finding the compiled scanner (:mod:`awl._native`) without importing numpy.

:mod:`awl.store.scanner` (the facade, which needs numpy), the listing and
``awl --version`` all decide "native or fallback" here, so they cannot
disagree, and the quick commands never pay for numpy.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import Final

from ..environment import native_disabled

INSTRUCTION_SETS: Final = ("portable", "sse2", "avx2")
"""Names of ``awl_simd``'s levels, by level."""


@functools.cache
def load() -> tuple[ModuleType | None, ImportError | None]:
    """The compiled module and why it is missing.

    ``(module, None)``; ``(None, None)`` when ``AWL_NATIVE=0`` disables it;
    ``(None, error)`` when it is not built.
    """
    if native_disabled():
        return None, None
    try:
        return importlib.import_module("awl._native"), None
    except ImportError as exc:
        return None, exc


def scanner_description() -> str:
    """The implementation the scanner uses: ``"native (avx2)"``, ``"fallback (not
    built)"``, ``"fallback (AWL_NATIVE)"``..."""
    module, why = load()
    if module is None:
        # Why, in the words a user acts on: a switch, a build without a compiler,
        # or a module built but not loadable here (its loader's own words).
        if why is None:
            return "fallback (AWL_NATIVE)"
        if isinstance(why, ModuleNotFoundError) and why.name == "awl._native":
            return "fallback (not built)"
        return f"fallback (cannot load it: {why})"
    return f"native ({INSTRUCTION_SETS[int(module.lib.awl_simd(-1))]})"
