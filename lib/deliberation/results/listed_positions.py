"""Where each published answer's option was listed, read from the prompts that were sent.

Rows made before the rows carried ``answer_position`` (or rows from another run's published
answers) get it from the request behind each row: the published file holds every request, and
its prompt lists the options in the order the model saw them
(:func:`~deliberation.experiments.memory.prompts.listed_options`). Nothing is sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from deliberation.benchmarks.memory_benchmark import answer_position
from deliberation.experiments.memory.prompts import listed_options
from deliberation.inference.base import ChatRequest


def request_listings(entries: Iterable[tuple[str, ChatRequest, Any]]) -> dict[str, tuple[str, ...]]:
    """key -> the options its request's prompt lists (requests listing none are left out)."""
    listings = {}
    for key, request, _ in entries:
        text = "\n".join(m.content for m in request.messages)
        options = listed_options(text)
        if options:
            listings[key] = options
    return listings


def published_listings(file: Path, profile: Any) -> dict[str, tuple[str, ...]]:
    """:func:`request_listings` of a published answers file, checked against ``profile``."""
    from deliberation.inference.published import read_published

    return request_listings(read_published(file, profile))


def with_listed_positions(
    rows: pd.DataFrame, listings: Mapping[str, tuple[str, ...]], key: str = "key"
) -> pd.DataFrame:
    """``rows`` with ``answer_position`` and ``n_options`` from the listing of each row's
    request; a row whose call was not sent (empty key) gets neither. A row with an answer whose
    request is not in ``listings``, or whose answer the listing lacks, is an error naming it."""
    positions, counts = [], []
    for index, (call, answer) in enumerate(zip(rows[key], rows["answer"], strict=True)):
        answer = None if pd.isna(answer) or answer == "" else str(answer)
        if pd.isna(call) or call == "":
            positions.append(None)
            counts.append(None)
            continue
        if call not in listings:
            raise KeyError(f"row {index}: {key} {call}: no published request lists its options")
        options = listings[call]
        if answer is not None and answer not in options:
            raise ValueError(f"row {index}: answer {answer!r} is not among the listed {options}")
        positions.append(answer_position(options, answer))
        counts.append(len(options))
    return rows.assign(
        answer_position=pd.array(positions, dtype="Int64"),
        n_options=pd.array(counts, dtype="Int64"),
    )
