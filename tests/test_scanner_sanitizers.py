"""native/scanner.c under AddressSanitizer + UBSan, on the shared corpus.

tests/native/driver.c is compiled together with scanner.c (the SIMD build,
run at the SSE2 level and at the best the CPU has, usually AVX2, and the
portable SWAR build, -DAWL_NO_SIMD), run over the corpus with every
input in a heap block of exactly its size, and must exit 0 with no
sanitizer report.  Its verdicts are also checked against orjson, and the two
builds must agree record for record.  Skipped, with the reason, when no C
compiler with sanitizers is available.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import orjson
import pytest

from tests.native import corpus as C
from tests.native.sanitized import build_drivers, run_levels

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [str(ROOT / "native" / "scanner.c"), str(ROOT / "tests" / "native" / "driver.c")]
TIMEOUT = 60


@pytest.fixture(scope="module")
def drivers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_drivers(tmp_path_factory.mktemp("asan"), "driver", SOURCES)


def _inputs() -> list[bytes]:
    lines = C.corpus()
    small = [x for x in lines if b"\n" not in x and len(x) < 5000]
    multi = [
        b"\n".join(C.SAMPLE_LINES) + b"\n",
        b"\n".join(C.SAMPLE_LINES),
        b"\n".join(small[:400]) + b"\n",
        b"\r\n".join(C.SAMPLE_LINES[:3]),
        b"",
        b"\n",
        b"\n\n\n",
        b"{}\n" * 100 + b'{"type":"checkpoint"',
        b'{"n":12345678901234567890123}',
        b"x" * 40 + b"1" * 19,
        b"1" * 18 + b"x" + b"2" * 19,
    ]
    return lines + multi


def _first_run(b: bytes, n: int) -> int:
    found = re.search(rb"[0-9]{%d}" % n, b) if n else None
    return 0 if n == 0 else -1 if found is None else found.start()


def _oracle(b: bytes) -> bool:
    try:
        return isinstance(orjson.loads(b), dict)
    except orjson.JSONDecodeError:
        return False


def test_scanner_under_sanitizers(drivers: dict[str, Path], tmp_path: Path) -> None:
    inputs = _inputs()
    path = tmp_path / "corpus.bin"
    with open(path, "wb") as f:
        for item in inputs:
            f.write(struct.pack("<Q", len(item)))
            f.write(item)
    outputs = {name: r.stdout for name, r in run_levels(drivers, [str(path)], TIMEOUT).items()}
    verdicts = [line == "V 1" for line in outputs["sse2"].splitlines() if line.startswith("V ")]
    assert len(verdicts) == len(inputs)
    for item, got in zip(inputs, verdicts, strict=True):
        assert got == _oracle(item), item[:200]
    # Where the first run of n digits starts, against a regular expression.
    runs = [line.split() for line in outputs["sse2"].splitlines() if line.startswith("D ")]
    want = [["D", str(n), str(_first_run(item, n))] for item in inputs for n in (0, 1, 3, 19)]
    assert runs == want
