"""The version of awl (one place: the package, ``awl --version`` and the build read it)."""

__version__ = "0.1.0"
