"""What serve-sim injects for tests and benchmarks: latency and faults at given rates."""

from __future__ import annotations

from dataclasses import dataclass

FAULT_KINDS = ("429", "500", "hang", "malformed")
# What a "malformed" fault sends with status 200: a JSON body cut off mid-way.
MALFORMED_BODY = b'{"id": "chatcmpl-sim-broken", "object": "chat.completion", "choices": [{"ind'


@dataclass(frozen=True)
class FaultOptions:
    """Latency and fault injection. Rates are per arrival and mutually exclusive (one seeded
    draw picks at most one fault), so their sum must not exceed 1."""

    latency_ms: float = 0.0
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_hang: float = 0.0
    rate_malformed: float = 0.0
    retry_after_s: float = 1.0
    hang_s: float = 30.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("rate_429", "rate_500", "rate_hang", "rate_malformed"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"fault rate {name} must be in [0, 1], got {value}")
        if self.total_rate > 1.0 + 1e-9:
            raise ValueError(f"fault rates add up to {self.total_rate:.3f} > 1")
        for name in ("latency_ms", "retry_after_s", "hang_s"):
            value = getattr(self, name)
            if not 0 <= value < float("inf"):
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")

    @property
    def total_rate(self) -> float:
        return self.rate_429 + self.rate_500 + self.rate_hang + self.rate_malformed

    def pick(self, draw: float) -> str | None:
        """The fault for a uniform draw in [0, 1), or None to answer normally."""
        edge = 0.0
        for kind, rate in zip(
            FAULT_KINDS,
            (self.rate_429, self.rate_500, self.rate_hang, self.rate_malformed),
            strict=True,
        ):
            edge += rate
            if draw < edge:
                return kind
        return None

    def retry_after_header(self) -> str:
        """``Retry-After`` as sent with an injected 429 (whole seconds without a fraction)."""
        value = self.retry_after_s
        return str(int(value)) if float(value).is_integer() else f"{value:g}"
