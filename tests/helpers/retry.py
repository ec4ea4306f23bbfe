"""The wait the openai backend's tenacity policy takes before a retry (imported, not collected)."""

from __future__ import annotations

import numpy as np
import tenacity

from deliberation.inference.openai_api import RetryPolicy, _AttemptFailed


def retry_wait(
    policy: RetryPolicy, retry: int, rng: np.random.Generator, retry_after_s: float | None = None
) -> float:
    """Seconds tenacity waits before retry number ``retry`` (0-based) after a failure whose
    server asked for ``retry_after_s``, drawing from ``rng``."""
    state = tenacity.RetryCallState(None, None, (), {})
    state.attempt_number = retry + 1
    failure = _AttemptFailed("x", "x", retryable=True, retry_after_s=retry_after_s)
    state.outcome = tenacity.Future.construct(retry + 1, failure, True)
    return policy.wait(lambda: rng)(state)
