"""Every prompt text of paper 1's engine (CrossProfile and HiddenBench), in one place.

The decision prompt holds the task description, the stated criteria, the options and the memory
only. Labelling and summary prompts show the statements without holder tags, so a label never
depends on who said what. The sim backend reads these same texts (``experiments/memory/sim/``),
so a change here is a change to what every backend sees; the phrases the sim locates are the
``*_HEADER`` and ``*_MARKER`` constants below.
"""

from __future__ import annotations

from collections.abc import Sequence

# Section headers (the sim finds sections by these exact lines).
CRITERIA_HEADER = "Decision criteria:"
OPTIONS_HEADER = "Options:"
NOTES_HEADER_TAGGED = (
    "Notes kept from the group's discussion (the tag before each note lists the agents who"
    " stated it):"
)
NOTES_HEADER_PLAIN = "Notes kept from the group's discussion:"
SUMMARY_HEADER = "Summary of the group's discussion:"
NO_NOTES = "No notes from the group's discussion were kept."
STATEMENTS_HEADER = "Statements from the group's discussion:"
TRANSCRIPT_HEADER = "Transcript of the group's discussion:"
WORD_LIMIT_MARKER = "Use at most {limit} words"

DECISION_QUESTION = (
    "Based only on the information above, which option should be chosen? "
    "Answer with the name of exactly one option."
)

_RELEVANCE_QUESTION_CRITERIA = (
    "Which statements are relevant to the decision criteria, that is, bear on how well an"
    " option meets one of the criteria? Statements about anything else are not relevant."
)
_RELEVANCE_QUESTION_NO_CRITERIA = (
    "Which statements are relevant to the decision, that is, bear on which option should be"
    " chosen? Statements about anything else are not relevant."
)
_RELEVANCE_FORMAT = 'Answer in JSON: {"relevant": [the numbers of the relevant statements]}.'

_BALANCE_QUESTION = (
    "For every statement, say which option it bears on and whether it speaks for or against"
    " that option on the decision criteria. A statement that does not bear on the criteria is"
    ' "neither" (with option "none").'
)
_BALANCE_FORMAT = (
    'Answer in JSON: {"labels": [{"statement": <number>, "option": "<option name or none>",'
    ' "direction": "for" | "against" | "neither"}, ...]}, one entry per statement.'
)

_SUMMARY_INSTRUCTION = (
    "Summarise this discussion for the person who will make the decision. Keep the evidence"
    " that bears on the choice between the options. " + WORD_LIMIT_MARKER + " (every"
    " punctuation mark counts as a word)."
)


def task_header(description: str, criteria: Sequence[str], options: Sequence[str]) -> str:
    """Description, criteria (if the task states any) and the options, one per line."""
    parts = [description.strip()]
    if criteria:
        parts.append(f"{CRITERIA_HEADER} " + "; ".join(criteria) + ".")
    parts.append(OPTIONS_HEADER + "\n" + "\n".join(f"- {o}" for o in options))
    return "\n\n".join(parts)


def numbered(lines: Sequence[str]) -> str:
    return "\n".join(f"{k}. {line}" for k, line in enumerate(lines, start=1))


def decision_prompt(
    description: str,
    criteria: Sequence[str],
    options: Sequence[str],
    memory_lines: Sequence[str] | None,
    *,
    tagged: bool,
    summary: str | None = None,
) -> str:
    """The decision prompt: a summary (B3), tagged or plain note lines, or no notes."""
    if summary is not None:
        memory = f"{SUMMARY_HEADER}\n{summary.strip()}" if summary.strip() else NO_NOTES
    elif memory_lines:
        header = NOTES_HEADER_TAGGED if tagged else NOTES_HEADER_PLAIN
        memory = header + "\n" + "\n".join(memory_lines)
    else:
        memory = NO_NOTES
    return "\n\n".join([task_header(description, criteria, options), memory, DECISION_QUESTION])


def relevance_prompt(
    description: str, criteria: Sequence[str], options: Sequence[str], statements: Sequence[str]
) -> str:
    question = _RELEVANCE_QUESTION_CRITERIA if criteria else _RELEVANCE_QUESTION_NO_CRITERIA
    return "\n\n".join(
        [
            task_header(description, criteria, options),
            f"{STATEMENTS_HEADER}\n{numbered(statements)}",
            f"{question} {_RELEVANCE_FORMAT}",
        ]
    )


def balance_prompt(
    description: str, criteria: Sequence[str], options: Sequence[str], statements: Sequence[str]
) -> str:
    return "\n\n".join(
        [
            task_header(description, criteria, options),
            f"{STATEMENTS_HEADER}\n{numbered(statements)}",
            f"{_BALANCE_QUESTION} {_BALANCE_FORMAT}",
        ]
    )


def summary_prompt(
    description: str,
    criteria: Sequence[str],
    options: Sequence[str],
    turns: Sequence[tuple[str, str]],
    word_limit: int,
) -> str:
    """``turns`` are (agent, statement) pairs in speaking order, one transcript line each."""
    transcript = "\n".join(f"{agent}: {text}" for agent, text in turns)
    return "\n\n".join(
        [
            task_header(description, criteria, options),
            f"{TRANSCRIPT_HEADER}\n{transcript}",
            _SUMMARY_INSTRUCTION.format(limit=word_limit),
        ]
    )


# JSON schemas sent as structured output with the labelling prompts.
RELEVANCE_SCHEMA = {
    "type": "object",
    "properties": {"relevant": {"type": "array", "items": {"type": "integer"}}},
    "required": ["relevant"],
    "additionalProperties": False,
}


def balance_schema(options: Sequence[str]) -> dict:
    return {
        "type": "object",
        "properties": {
            "labels": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "statement": {"type": "integer"},
                        "option": {"type": "string", "enum": [*options, "none"]},
                        "direction": {"type": "string", "enum": ["for", "against", "neither"]},
                    },
                    "required": ["statement", "option", "direction"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["labels"],
        "additionalProperties": False,
    }
