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


def run_levels(
    drivers: dict[str, Path], args: list[str], timeout: float = 60
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Each driver run on ``args``, the SIMD build twice: at the SSE2 level and at
    the best the CPU has (AVX2 on most x86_64 machines), chosen through
    awl_simd().  ``{"sse2", "best", "swar": the process}``; fails the test on a
    sanitizer report or a non-zero exit, and unless the SSE2 and portable builds
    report their levels (the first line of stderr) and all three print the same."""
    env = dict(
        os.environ,
        ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
        UBSAN_OPTIONS="print_stacktrace=1",
    )
    runs = [
        ("sse2", drivers["sse2"], "1"),
        ("best", drivers["sse2"], "2"),
        ("swar", drivers["swar"], ""),
    ]
    done = {}
    for name, exe, level in runs:
        r = subprocess.run(
            [str(exe), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dict(env, AWL_SIMD=level) if level else env,
        )
        assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-4000:]
        assert r.returncode == 0, f"{name}: exit {r.returncode}\n{r.stderr[-4000:]}"
        done[name] = r
    levels = {name: r.stderr.splitlines()[0] for name, r in done.items()}
    assert levels["sse2"] == "simd 1" and levels["swar"] == "simd 0", levels
    assert done["sse2"].stdout == done["swar"].stdout, "SSE2 and portable builds disagree"
    assert done["best"].stdout == done["sse2"].stdout, f"{levels['best']} and SSE2 disagree"
    return done
