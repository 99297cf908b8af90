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
    ]
    return lines + multi


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
