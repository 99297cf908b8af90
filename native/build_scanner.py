"""cffi build script for the native scanner (API mode, out of line).

Used by setup.py through ``cffi_modules=["native/build_scanner.py:ffibuilder"]``
and runnable by hand (``python native/build_scanner.py``) to build
``awl/_native*.so`` in place for development.

The cdef is the AWL_CDEF_BEGIN..AWL_CDEF_END section of scanner.h, so the
declarations cffi sees can never drift from the header the C code compiles
against.
"""

from __future__ import annotations

import os
import sys

from cffi import FFI

_HERE = os.path.dirname(os.path.abspath(__file__))


def _cdef_from_header() -> str:
    with open(os.path.join(_HERE, "scanner.h"), encoding="utf-8") as fh:
        text = fh.read()
    begin = text.index("/* AWL_CDEF_BEGIN */") + len("/* AWL_CDEF_BEGIN */")
    end = text.index("/* AWL_CDEF_END */")
    return text[begin:end]


def _compile_args() -> list[str]:
    if sys.platform == "win32":
        return ["/O2"]
    # No -march=native: wheels must run on any CPU of the target arch; SSE2
    # is baseline on x86_64 and the code has a portable SWAR path elsewhere.
    return ["-O3", "-std=c99"]


def make_builder(root: str = "") -> FFI:
    """Return the FFI builder; paths are relative to ``root`` ("" = cwd)."""
    builder = FFI()
    builder.cdef(_cdef_from_header())
    builder.set_source(
        "awl._native",
        '#include "scanner.h"',
        # Relative by default: setuptools builds from the project root and
        # wants relative source paths.
        sources=[os.path.join(root, "native", name) for name in ("scanner.c", "search.c")],
        include_dirs=[os.path.join(root, "native")],
        # A changed header rebuilds the module (setuptools compares times only
        # with what it is told the module depends on).
        depends=[os.path.join(root, "native", name) for name in ("scanner.h", "string_blocks.h")],
        extra_compile_args=_compile_args(),
    )
    return builder


ffibuilder = make_builder()

if __name__ == "__main__":
    # Development build in place: awl/_native.*.so beside awl/*.py.  cffi
    # compiles inside tmpdir, hence absolute paths here.  Other builds of the
    # module (e.g. _native.abi3.so from `pip install -e .`) are removed, as
    # the interpreter would pick one of them and it may be stale.
    import glob

    project = os.path.dirname(_HERE)
    out = make_builder(project).compile(tmpdir=os.path.join(project, "build", "cffi"), verbose=True)
    for old in glob.glob(os.path.join(project, "awl", "_native.*")):
        if old.endswith((".so", ".pyd")):
            os.remove(old)
    target = os.path.join(project, "awl", os.path.basename(out))
    os.replace(out, target)
    print("built", target)
