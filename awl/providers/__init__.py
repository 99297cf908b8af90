"""Model providers: Anthropic, OpenAI (and compatible local servers), and an offline echo.

Importing this package is cheap: the SDK of a provider is imported only when
:func:`get_provider` is asked for that provider, so ``awl`` starts fast and the
offline provider works without either SDK installed.
"""

from __future__ import annotations

import os

from awl.errors import missing_dependency as _missing_dependency
from awl.providers._base import (
    CANCELLED,
    InvalidBaseURL,
    InvalidModel,
    NullSink,
    Provider,
    ProviderError,
    Response,
    SettingError,
    StopReason,
    StreamSink,
    ToolSpec,
    Usage,
    WaitingSink,
    check_base_url,
    check_model,
    is_loopback_url,
    shown_url,
)
from awl.providers._base import NO_ANTHROPIC_KEY as _NO_ANTHROPIC_KEY
from awl.providers._base import NO_OPENAI_KEY as _NO_OPENAI_KEY

__all__ = [
    "CANCELLED",
    "PROVIDER_NAMES",
    "InvalidBaseURL",
    "InvalidModel",
    "NullSink",
    "Provider",
    "ProviderError",
    "Response",
    "SettingError",
    "StopReason",
    "StreamSink",
    "ToolSpec",
    "Usage",
    "WaitingSink",
    "check_base_url",
    "check_model",
    "default_provider_name",
    "get_provider",
    "is_loopback_url",
    "shown_url",
]

PROVIDER_NAMES = ("anthropic", "openai", "offline")


def get_provider(name: str, *, base_url: str | None = None) -> Provider:
    """The provider called ``name``, configured from the environment.

    ``base_url`` overrides the provider's base-URL variable (``ANTHROPIC_BASE_URL``,
    ``OPENAI_BASE_URL``); the offline provider ignores it. Raises
    :class:`ProviderError` for an unknown name, a missing API key or a missing SDK,
    and :class:`InvalidBaseURL` for a base URL that is not one.
    """
    if name == "offline":
        from awl.providers._offline import OfflineProvider

        return OfflineProvider()
    # A missing key is said before the SDK is imported (Anthropic's takes seconds).
    if name == "anthropic":
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise ProviderError(_NO_ANTHROPIC_KEY)
        try:
            from awl.providers._anthropic import AnthropicProvider
        except ImportError as exc:
            raise ProviderError(_missing_sdk("anthropic", exc)) from exc
        return AnthropicProvider(base_url=base_url)
    if name == "openai":
        if not (os.environ.get("OPENAI_API_KEY") or base_url or os.environ.get("OPENAI_BASE_URL")):
            raise ProviderError(_NO_OPENAI_KEY)
        try:
            from awl.providers._openai import OpenAIProvider
        except ImportError as exc:
            raise ProviderError(_missing_sdk("openai", exc)) from exc
        return OpenAIProvider(base_url=base_url)
    raise ProviderError(f"unknown provider {name!r}; choose one of {', '.join(PROVIDER_NAMES)}")


def default_provider_name(base_url: str | None = None) -> str:
    """The provider to use when none is named.

    ``anthropic`` if ANTHROPIC_API_KEY is set, else ``openai`` if OPENAI_API_KEY
    is, or if a base URL is given (``base_url``, ``--base-url``, or
    OPENAI_BASE_URL: the local servers, which need no key, speak OpenAI's API),
    else ``anthropic`` if ANTHROPIC_BASE_URL is set, else ``offline``.
    """
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if os.environ.get("OPENAI_API_KEY") or base_url or os.environ.get("OPENAI_BASE_URL"):
        return "openai"
    if os.environ.get("ANTHROPIC_BASE_URL"):
        return "anthropic"  # a proxy's: it says so if it wants a key
    return "offline"


def _missing_sdk(package: str, exc: ImportError) -> str:
    # A dependency of awl: missing only from a broken environment.
    return _missing_dependency(exc) or f"the {package} SDK cannot be imported: {exc}"
