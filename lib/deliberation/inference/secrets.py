"""API keys: read from the environment variable a profile names, and never shown.

The profile holds only the variable's *name*, which must look like one (``[A-Z_][A-Z0-9_]*``);
a value that looks like a pasted key is refused without repeating it. The key itself is
stripped of surrounding whitespace (a common copy-paste accident) and refused, unshown, when it
holds a character an HTTP header cannot carry, so no HTTP library ever logs it in an error.
It lives in a :class:`Secret`, which prints as a mask.
"""

from __future__ import annotations

import os
import re

# Sent when the profile names no key variable: vLLM servers started without --api-key accept any.
PLACEHOLDER_KEY = "EMPTY"
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
# Prefixes of common providers' keys (OpenAI, Groq, xAI, Hugging Face, Anthropic, Google, AWS,
# GitHub) and, for any other provider, a long run of letters and digits mixing both.
_KEY_PREFIXES = ("sk-", "gsk_", "xai-", "hf_", "AIza", "AKIA", "ghp_", "github_pat_")
_KEY_LIKE_RUN = re.compile(r"(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{20,}")
# A key travels in the Authorization header: visible ASCII only (RFC 9110 field-value, no spaces).
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")
_NOT_SHOWN = "(the value is not shown, in case it is a key)"


class MissingAPIKeyError(RuntimeError):
    """The profile names an API-key variable that is not set."""


class InvalidAPIKeyError(ValueError):
    """An API-key setting that cannot be used; the message never contains the value."""


def looks_like_a_key(value: str) -> bool:
    """Whether ``value`` looks like a credential rather than a variable name."""
    return value.startswith(_KEY_PREFIXES) or _KEY_LIKE_RUN.search(value) is not None


def check_env_name(value: str, field: str = "api_key_env") -> str:
    """``value`` if it names an environment variable; else :class:`InvalidAPIKeyError` saying
    what is expected, never what was given."""
    if looks_like_a_key(value):
        raise InvalidAPIKeyError(
            f"{field}: this looks like an API key, not the name of an environment variable"
            f" {_NOT_SHOWN}. Put the key in an environment variable (export MY_API_KEY=...)"
            f" and write its name here: {field}: MY_API_KEY. If it is a real key, revoke it"
        )
    if not _ENV_NAME.fullmatch(value):
        raise InvalidAPIKeyError(
            f"{field}: must be the name of an environment variable: capital letters, digits"
            f" and '_', not starting with a digit (e.g. DEEPSEEK_API_KEY) {_NOT_SHOWN}"
        )
    return value


def _check_key(value: str, source: str = "the API key") -> str:
    """The key without surrounding whitespace; :class:`InvalidAPIKeyError` (not showing it)
    when it is empty or holds whitespace, control or non-ASCII characters inside."""
    key = value.strip()
    if not key:
        raise InvalidAPIKeyError(f"{source} is empty or only whitespace")
    if not _HEADER_SAFE.fullmatch(key):
        raise InvalidAPIKeyError(
            f"{source} holds a space, control or non-ASCII character inside it, which an HTTP"
            f" header cannot carry; set it to the key alone (the key is not shown)"
        )
    return key


def read_api_key(env_name: str | None, *, profile: str = "", field: str = "api_key_env") -> str:
    """The key from ``os.environ[env_name]`` (checked with :func:`_check_key`); the placeholder
    when ``env_name`` is None."""
    if env_name is None:
        return PLACEHOLDER_KEY
    where = f"profile {profile!r}: " if profile else ""
    check_env_name(env_name, f"{where}{field}")
    value = os.environ.get(env_name, "")
    if not value:
        raise MissingAPIKeyError(
            f"{where}{field} names the environment variable {env_name}, which is not"
            f" set; export {env_name}=<your key> before running"
        )
    return _check_key(value, f"{where}the value of {env_name}")


class Secret:
    """Holds the key; prints as a mask so it cannot leak through a repr or a traceback."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value if value == PLACEHOLDER_KEY else _check_key(value)

    def reveal(self) -> str:
        return self._value

    def scrub(self, text: str) -> str:
        """``text`` with every occurrence of the key masked (error bodies may echo it)."""
        if len(self._value) < 4 or self._value == PLACEHOLDER_KEY:
            return text
        return text.replace(self._value, "***")

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__
