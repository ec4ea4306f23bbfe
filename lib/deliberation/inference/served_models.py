"""Model names a server answered as, when not the profile's ``model:``, for provenance.

A reply may name another model than the one asked for: a dated snapshot (``gpt-4o`` answered as
``gpt-4o-2024-08-06``) or an alias the profile accepts (``openai.allow_model_alias``). Such an
answer keeps the name (``ChatResponse.served_model``, stored with it in the cache), and every
response a client returns, sent now or served from the cache, is noted here under the name
asked for. The provenance of each output written afterwards in the process (tables, figures, a
run's rows) lists the names as ``served_as``, and ``deliberation run`` prints them in its
summary. Kept per process, like the failed-calls tally: a notebook's outputs name what its own
calls were answered as, and a rerun from the cache names the same.
"""

from __future__ import annotations

_SERVED: dict[str, set[str]] = {}


def note(asked: str, served: str) -> None:
    """Record that a call asking for model ``asked`` was answered as ``served``."""
    if served and served != asked:
        _SERVED.setdefault(asked, set()).add(served)


def served_as(asked: str) -> list[str]:
    """The other names calls asking for ``asked`` were answered as in this process, sorted."""
    return sorted(_SERVED.get(asked, ()))


def clear() -> None:
    _SERVED.clear()
