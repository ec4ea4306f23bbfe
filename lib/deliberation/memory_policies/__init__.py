"""Memory policies under a token budget (paper 1).

- :mod:`.budget`: item cost (statement tokens), the budget ``floor(r x total)``, the fixed
  item count, and filling a capacity by walking an order.
- :mod:`.registry`: the policy registry, the pool a policy reads, and :func:`build_memory`.
- :mod:`.policies`: R1, B4, Random, R1-rel, oracle relevance, B3 and the references.
- :mod:`.balance`: the balance audit (model labels) and its oracle variant.
- :mod:`.labels`: reading relevance and balance labels from a model's answer.

Kept items are always shown in first-mention order, whatever the policy's rank order.
"""

from deliberation.memory_policies.budget import (
    BUDGET_FRACTIONS,
    FIXED_ITEM_COUNT,
    PRIMARY_FRACTION,
    Capacity,
    budget_tokens,
    take_in_order,
)
from deliberation.memory_policies.registry import (
    BalanceLabel,
    Memory,
    MemoryPool,
    PolicySpec,
    build_memory,
    policy_legend,
    policy_spec,
    registered_policies,
)

# Importing a policy module registers its policies, in this order (registered_policies() keeps it).
# isort: off
from deliberation.memory_policies import policies  # noqa: F401
from deliberation.memory_policies import balance  # noqa: F401
# isort: on

__all__ = [
    "BUDGET_FRACTIONS",
    "FIXED_ITEM_COUNT",
    "PRIMARY_FRACTION",
    "BalanceLabel",
    "Capacity",
    "Memory",
    "MemoryPool",
    "PolicySpec",
    "budget_tokens",
    "build_memory",
    "policy_legend",
    "policy_spec",
    "registered_policies",
    "take_in_order",
]
