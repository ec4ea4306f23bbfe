"""The sim's DHD behaviours: recruiter, hypothesizers, integrator and judge, as a mechanism model.

In full: ``docs/sim.md``, section "DHD (experiments/dhd/sim.py)".
"""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np

from deliberation.experiments.dhd import synthetic
from deliberation.experiments.dhd.messages import LABELS, MASK_PLACEHOLDER
from deliberation.experiments.dhd.prompts import INTEGRATOR_INSTRUCTION
from deliberation.inference.sim_registry import SimAnswer, SimContext, sim_behaviour
from deliberation.seeds import stable_seed

PARAMETERS = {
    "dhd_answer_skill": 0.6,
    "dhd_step_coverage": 0.6,
    "dhd_step_skill_when_right": 0.85,
    "dhd_step_skill_when_wrong": 0.75,
    "dhd_caveat_error": 0.15,
    "dhd_format_error": 0.02,
    "dhd_integrator_self_skill": 0.88,
    "dhd_uptake": 0.8,
    "dhd_error_uptake": 0.05,
    "dhd_answer_pull_per_vote": 0.05,
    "dhd_judge_error": 0.0,
}

_ROLE_CATALOGUE = (
    ("Decomposer", "You split the problem into named intermediate quantities."),
    ("Unit checker", "You track what every number counts and in which unit."),
    ("Estimator", "You bound the answer by rough arithmetic before computing it."),
    ("Backward solver", "You start from the question and work back to the givens."),
    ("Skeptic", "You look for the step most likely to be miscounted."),
    ("Tabulator", "You lay the quantities out in a table and fill it in."),
    ("Algebraist", "You write the whole computation as one expression."),
    ("Verifier", "You recompute each step a second way."),
)
_MESSAGE = re.compile(r"^Message \d+ \(role: [^)\n]*\)\s*$", re.MULTILINE)
_ANSWER = re.compile(r"^Proposed final answer:\s*(.+?)\s*$", re.MULTILINE | re.IGNORECASE)
_OPTION = re.compile(r"^\s*\(?([A-E])[.)]\s", re.MULTILINE)
# The judge prompt (prompts.JUDGE_USER): each answer on the lines after its label.
_REFERENCE = re.compile(r"Reference answer:\s*(.+?)\s*(?:\n\n|$)", re.IGNORECASE | re.DOTALL)
_CANDIDATE = re.compile(r"Candidate final answer:\s*(.+?)\s*$", re.IGNORECASE | re.DOTALL)


def _param(context: SimContext, name: str) -> float:
    return context.param(name)


def _rng(*parts: object) -> np.random.Generator:
    """A generator from stable parts (common random numbers across prompts)."""
    return np.random.default_rng(stable_seed("sim-dhd", *parts))


def _draw_id(context: SimContext) -> int:
    seed = context.request.effective_seed()
    return 0 if seed is None else seed


def _slip(value: int, rng: np.random.Generator) -> int:
    """A plausible wrong value: off by a small amount, doubled or halved."""
    kind = int(rng.integers(3))
    if kind == 0:
        return value + int(rng.choice([-1, 1])) * int(rng.integers(1, max(2, abs(value) // 10 + 2)))
    if kind == 1:
        return value * 2
    return value // 2 if value // 2 != value else value + 1


def _problem_text(prompt: str) -> str:
    return prompt.split("Problem:", 1)[-1].split("\n\n", 1)[0].strip()


@sim_behaviour("dhd.recruiter")
def recruit(context: SimContext) -> SimAnswer:
    """Five distinct roles from the catalogue, chosen per problem; never sees an answer."""
    picks = _rng("recruit", _problem_text(context.prompt)).choice(
        len(_ROLE_CATALOGUE), size=5, replace=False
    )
    roles = [{"name": _ROLE_CATALOGUE[i][0], "focus": _ROLE_CATALOGUE[i][1]} for i in picks]
    payload = {"roles": roles}
    return SimAnswer(text=json.dumps(payload), parsed=payload)


def _role(context: SimContext) -> str:
    system = context.request.messages[0].content if context.request.messages else ""
    match = re.match(r"You are (.+?)\.", system)
    return match.group(1) if match else "Solver"


@sim_behaviour("dhd.hypothesizer")
def hypothesize(context: SimContext) -> SimAnswer:
    rng = context.rng
    role = _role(context)
    steps = synthetic.solve(context.prompt)
    if steps is None:
        options = _OPTION.findall(context.prompt)
        answer = str(rng.choice(options)) if options else str(int(rng.integers(1, 100)))
        fields = {
            "role_name": role,
            "proposed_answer": answer,
            "reasoning_direction": "A guess: the sim cannot read this problem.",
            "key_idea": "None.",
            "critical_assumption": "None.",
            "what_to_check": "Everything.",
            "confidence": "low, synthetic noise",
        }
        return SimAnswer(text="\n".join(f"{LABELS[k]}: {v}" for k, v in fields.items()))
    right = rng.random() < _param(context, "dhd_answer_skill")
    truth = steps[-1].value
    answer = truth if right else _slip(truth, rng)
    skill = _param(context, "dhd_step_skill_when_right" if right else "dhd_step_skill_when_wrong")
    stated = []
    for step in steps:
        if rng.random() < _param(context, "dhd_step_coverage"):
            value = step.value if rng.random() < skill else _slip(step.value, rng)
            stated.append(f"{step.name} = {step.how} = {value}")
    caveat = "that each stated quantity is used once"
    if rng.random() < _param(context, "dhd_caveat_error"):
        step = steps[int(rng.integers(len(steps)))]
        caveat = f"I believe {step.name} = {_slip(step.value, rng)}, so check it"
    fields = {
        "role_name": role,
        "proposed_answer": str(answer),
        "reasoning_direction": "; ".join(stated) if stated else "I went straight to the answer.",
        "key_idea": stated[0] if stated else "The answer follows from the givens.",
        "critical_assumption": "Every number in the problem is exact.",
        "what_to_check": caveat,
        "confidence": "high" if right else "medium",
    }
    lines = [f"{LABELS[k]}: {v}" for k, v in fields.items()]
    if rng.random() < _param(context, "dhd_format_error"):
        lines = [line for line in lines if not line.startswith(LABELS["key_idea"])]
    return SimAnswer(text="\n".join(lines))


def _message_blocks(prompt: str) -> list[str]:
    """The text of each message shown, without its header or the closing instruction (so a
    message reads the same wherever it stands in the prompt)."""
    prompt = prompt.split(INTEGRATOR_INSTRUCTION.split(".")[0])[0]
    headers = list(_MESSAGE.finditer(prompt))
    ends = [h.start() for h in headers[1:]] + [len(prompt)] * bool(headers)
    return [prompt[h.end() : end].strip() for h, end in zip(headers, ends, strict=True)]


def _stated_answer(block: str) -> str | None:
    match = _ANSWER.search(block)
    if match is None or match.group(1) == MASK_PLACEHOLDER:
        return None
    return match.group(1)


@sim_behaviour("dhd.integrator")
def integrate(context: SimContext) -> SimAnswer:
    prompt = context.prompt
    problem = _problem_text(prompt)
    blocks = _message_blocks(prompt)
    answers = [a for a in (_stated_answer(b) for b in blocks) if a is not None]
    popular, votes = Counter(answers).most_common(1)[0] if answers else (None, 0)
    draw = _draw_id(context)
    steps = synthetic.solve(problem)
    if steps is None:  # not a synthetic problem: noise
        fallback = popular if popular is not None else str(int(context.rng.integers(1, 100)))
        return SimAnswer(text=f"(synthetic noise)\nFinal answer: {fallback}")
    own = _rng("integrator-self", problem, draw)
    known: dict[str, int | None] = {
        s.name: s.value if own.random() < _param(context, "dhd_integrator_self_skill") else None
        for s in steps
    }
    truth = {s.name: s.value for s in steps}
    misled: dict[str, int] = {}
    for block in blocks:
        # Keyed on the message without its answer line: masking the answer then leaves the
        # reading of the steps exactly as it was (component masking changes only what it hides).
        reader = _rng("integrator-read", problem, draw, _ANSWER.sub("", block))
        for name, value in synthetic.stated_steps(block, set(truth)):
            if value == truth[name]:
                if known[name] is None and reader.random() < _param(context, "dhd_uptake"):
                    known[name] = value
            elif reader.random() < _param(context, "dhd_error_uptake"):
                misled.setdefault(name, value)
    known.update(misled)
    chain_wrong = any(known[n] is not None and known[n] != truth[n] for n in truth)
    complete = all(v is not None for v in known.values())
    final = steps[-1].value
    if chain_wrong:
        answer: str | None = str(
            _slip(final, _rng("integrator-slip", problem, draw, sorted(misled)))
        )
    elif complete:
        answer = str(final)
    else:
        answer = None
    pull = _rng("integrator-pull", problem, draw)
    if popular is not None and (
        answer is None
        or pull.random() < min(1.0, _param(context, "dhd_answer_pull_per_vote") * votes)
    ):
        answer = popular
    if answer is None:
        answer = str(_slip(final, _rng("integrator-guess", problem, draw)))
    worked = "; ".join(f"{n} = {v}" for n, v in known.items() if v is not None) or "no steps"
    return SimAnswer(text=f"Working: {worked}.\nFinal answer: {answer}")


def _normal(text: str) -> str:
    return re.sub(r"[\s$\\{}]+", "", text).lower().rstrip(".")


@sim_behaviour("dhd.judge")
def judge(context: SimContext) -> SimAnswer:
    reference = _REFERENCE.search(context.prompt)
    candidate = _CANDIDATE.search(context.prompt)
    same = bool(reference and candidate and _normal(reference[1]) == _normal(candidate[1]))
    if context.rng.random() < _param(context, "dhd_judge_error"):
        same = not same
    verdict = "equivalent" if same else "not equivalent"
    return SimAnswer(text=verdict, parsed=verdict)
