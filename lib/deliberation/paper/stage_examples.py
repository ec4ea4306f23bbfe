"""One request of every stage a profile's notebooks send, for the engine contract checks.

The plan (:func:`deliberation.paper.plan.plan_calls`) builds the very requests a run builds and
sends nothing; run at the smoke profile's experiment sizes it meets every stage in seconds. The
first request of each stage and kind of constraint (a choice list, a JSON schema, free text) is
what ``tests/contract/`` hands to the engines' own code (the ``openai`` SDK's request types,
vLLM's ``SamplingParams`` and server request model), so a field an engine does not know is found
without a GPU, a key or a model.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from deliberation.inference.base import ChatRequest
from deliberation.profiles.profile import Profile, load_profile


def smoke_sized(profile: Profile | str) -> Profile:
    """``profile`` with the smoke profile's experiment sizes (every stage, the smallest grid)."""
    if not isinstance(profile, Profile):
        profile = load_profile(profile)
    return profile.model_copy(update={"experiments": load_profile("smoke").experiments})


def stage_examples(profile: Profile | str) -> dict[tuple[str, str], ChatRequest]:
    """``(stage, kind) -> request`` for every stage and constraint kind (``choice``, ``json``,
    ``free``) of the profile's notebooks, built by the plan at smoke size (sends nothing), and
    DHD's judge (:func:`_judge_example`)."""
    from deliberation.paper.plan import plan_calls

    profile = smoke_sized(profile)
    examples = plan_calls(profile).examples
    examples.setdefault(("dhd.judge", "choice"), _judge_example(profile.seed))
    return dict(sorted(examples.items()))


def _judge_example(seed: int) -> ChatRequest:
    """DHD's judge call, which the plan meets only on items no rule can grade (Omni-MATH's,
    with ``make data``): built for the first synthetic problem and a made-up reply."""
    from deliberation.experiments.dhd.judge import judge_request
    from deliberation.experiments.dhd.run import load_problems

    (problem,) = load_problems("synthetic", 1, seed=seed)
    return judge_request(problem, "The final answer is 42.")


def request_to_dict(request: ChatRequest) -> dict[str, Any]:
    """A request as JSON, for a checker running in another environment (vLLM's: the inverse
    is ``request_from_dict`` in ``tests/contract/vllm_contract.py``)."""
    data = dataclasses.asdict(request)
    data["messages"] = request.messages_as_dicts()
    data["structured"] = None if request.structured is None else request.structured.to_dict()
    return data
