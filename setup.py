"""Build hook for the optional native scanner (metadata lives in pyproject.toml).

The cffi extension ``awl._native`` is built from native/scanner.c.  If it
cannot be compiled (no compiler, broken toolchain, unsupported platform)
the build does not fail: it warns and installs the pure-Python package,
whose ``awl.scanner`` then uses the numpy/orjson fallback.  Set
``AWL_REQUIRE_NATIVE=1`` to make a failed native build an error (CI).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

# Compiler failures surface as any of these, depending on the toolchain.
_BUILD_ERRORS = (CCompilerError, ExecError, PlatformError, OSError, ValueError)


class BuildFailed(Exception):
    """The native extension could not be built."""


class OptionalBuildExt(build_ext):
    """build_ext that turns any compiler failure into BuildFailed."""

    def run(self) -> None:
        try:
            super().run()
        except _BUILD_ERRORS as exc:
            raise BuildFailed(str(exc)) from exc

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except _BUILD_ERRORS as exc:
            raise BuildFailed(str(exc)) from exc


def _banner(*lines: str) -> None:
    bar = "*" * 76
    print(bar, *lines, bar, sep="\n", file=sys.stderr)


def _forget_created_dirs() -> None:
    """Clear distutils' cache of directories mkpath() already made.

    A failed first attempt leaves entries for temporary directories that
    pip/setuptools have since deleted (editable builds reuse the same egg-info
    path), and the retry would then skip recreating them.
    """
    try:
        from setuptools._distutils import dir_util
    except ImportError:  # pragma: no cover - layout of older setuptools
        return
    cache = getattr(dir_util, "SkipRepeatAbsolutePaths", None)
    if cache is not None and hasattr(cache, "instance"):
        cache.clear()
    created = getattr(dir_util, "_path_created", None)
    if isinstance(created, dict):
        created.clear()


def _run(with_native: bool) -> None:
    kwargs: dict[str, Any] = {"cmdclass": {"build_ext": OptionalBuildExt}}
    if with_native:
        kwargs["cffi_modules"] = ["native/build_scanner.py:ffibuilder"]
        if not sysconfig.get_config_var("Py_GIL_DISABLED"):
            # cffi builds against the stable ABI (_native.abi3.so): one wheel serves
            # every CPython from 3.11 on, and its tag says so.  A free-threaded
            # CPython has no stable ABI (bdist_wheel refuses the option).
            kwargs["options"] = {"bdist_wheel": {"py_limited_api": "cp311"}}
    setup(**kwargs)


if os.environ.get("AWL_REQUIRE_NATIVE") == "1":
    _run(with_native=True)
else:
    try:
        _run(with_native=True)
    except BuildFailed as exc:
        _banner(
            "WARNING: the native scanner (awl._native) could not be built:",
            f"  {exc}",
            "Installing without it: awl will use the slower pure-Python scanner.",
        )
        _forget_created_dirs()
        _run(with_native=False)
        _banner("WARNING: installed WITHOUT the native scanner (pure-Python fallback).")
