"""numpy, imported without starting OpenBLAS's thread pool.

numpy's OpenBLAS starts a thread per core when it loads, and each spins for
a while waiting for work: about 0.1 s of CPU a core on every start of awl,
which does no linear algebra.  Every awl module takes numpy from here, so
the first import, whichever module makes it, loads OpenBLAS with one
thread.  The variable is set only around that import: the user's
environment, and so what a tool's subprocess inherits, is left as it was.
A value the user set is kept, and numpy loaded before awl is not touched.
"""

from __future__ import annotations

import os

_VAR = "OPENBLAS_NUM_THREADS"
_ours = _VAR not in os.environ
if _ours:
    os.environ[_VAR] = "1"
try:
    import numpy as np
    import numpy.typing as npt
finally:
    if _ours:
        os.environ.pop(_VAR, None)

__all__ = ["np", "npt"]
