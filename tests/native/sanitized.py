"""Building a test driver under AddressSanitizer + UBSan (the scanner's and the
search's sanitizer tests share it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
CFLAGS = ["-g", "-O1", "-std=c99", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'native'}"]


def compiler() -> str | None:
    """``$CC``, else gcc or clang, if on the PATH."""
    cc = os.environ.get("CC", "cc")
    return shutil.which(cc) or shutil.which("gcc") or shutil.which("clang")


def build_drivers(out: Path, name: str, sources: list[str]) -> dict[str, Path]:
    """``sources`` built under the sanitizers into ``out``: ``{"sse2": the SIMD build,
    "swar": the portable one (-DAWL_NO_SIMD)}``. Skips the test, with the reason,
    when no compiler here can build and run a sanitized program."""
    cc = compiler()
    if cc is None:
        pytest.skip("no C compiler found (set CC)")
    probe = out / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    r = subprocess.run(
        [cc, *SANITIZE, str(probe), "-o", str(out / "probe")], capture_output=True, text=True
    )
    if (
        r.returncode != 0
        or subprocess.run([str(out / "probe")], capture_output=True).returncode != 0
    ):
        pytest.skip(
            f"{cc} cannot build/run -fsanitize=address,undefined programs: {r.stderr.strip()[:200]}"
        )
    built = {}
    for build, extra in (("sse2", []), ("swar", ["-DAWL_NO_SIMD"])):
        exe = out / f"{name}-{build}"
        r = subprocess.run(
            [cc, *SANITIZE, *CFLAGS, *extra, *sources, "-o", str(exe)],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, f"{name} build failed ({build}):\n{r.stderr}"
        built[build] = exe
    return built
