"""Behaviours for plumbing checks: ``echo``, the openai backend's ``preflight`` request and the
smoke notebook's ``smoke.arithmetic``."""

from __future__ import annotations

import json
import re

from deliberation.inference.sim_registry import SimAnswer, SimContext, sim_behaviour

PARAMETERS = {
    # Probability the sim adds two numbers correctly; otherwise it is off by one in a random
    # direction. Lets the smoke notebook show a non-trivial accuracy.
    "smoke_accuracy": 0.9,
}

_SUM = re.compile(r"What is (-?\d+) \+ (-?\d+)\?")


@sim_behaviour("echo")
def echo(context: SimContext) -> SimAnswer:
    """Repeat the prompt; with a choice list, pick one uniformly (seeded)."""
    if context.choices:
        pick = context.choices[int(context.rng.integers(len(context.choices)))]
        return SimAnswer(text=pick, parsed=pick)
    return SimAnswer(text=f"echo: {context.prompt}")


@sim_behaviour("preflight")
def preflight(context: SimContext) -> SimAnswer:
    """The pre-flight request (``OpenAIBackend.preflight``): the first option, as constrained."""
    pick = context.choices[0] if context.choices else "yes"
    return SimAnswer(text=pick, parsed=pick if context.choices else None)


@sim_behaviour("smoke.arithmetic")
def add_two_numbers(context: SimContext) -> SimAnswer:
    match = _SUM.search(context.prompt)
    if match is None:
        return SimAnswer(text="I cannot find the sum to compute.")
    total = int(match.group(1)) + int(match.group(2))
    if context.rng.random() >= context.param("smoke_accuracy"):
        total += int(context.rng.choice([-1, 1]))
    if context.request.structured is not None and context.request.structured.json_schema:
        return SimAnswer(text=json.dumps({"answer": total}), parsed={"answer": total})
    return SimAnswer(text=f"Answer: {total}")
