"""What ``deliberation run`` writes and prints beside the results frame.

:func:`command_rows` is the frame as the command writes it: the columns of
:mod:`deliberation.experiments.memory.runs` (or of ``deliberation.experiments.natural.runs``) with
the cache key named ``request_key`` (a hash of the request as sent, not an answer key) and four
more:

==============  ================================================================================
``profile``     the profile that ran
``model``       the model it names (``backend:model``)
``gold``        the correct option of the row's task
``outcome``     ``answered`` (one option named), ``invalid`` (a reply naming no single option:
                counted wrong) or ``failed`` (no usable reply, or a failed input: never counted)
==============  ================================================================================

:func:`summary_table` is the results table the command ends with: accuracy by policy and
budget over the answered and invalid rows, with the invalid and failed counts beside it.
:func:`write_command_rows` writes the CSV and its provenance sidecar
(``<out>.provenance.json``, e.g. ``rows.csv.provenance.json``: the record ``write_table``
writes) as one set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from deliberation.io.atomic import write_file_set
from deliberation.publish.provenance import provenance_record, sidecar_path


def outcome(valid: object) -> str:
    """A row's outcome from its ``valid`` cell (empty: failed)."""
    if valid is None or pd.isna(valid):
        return "failed"
    return "answered" if int(valid) == 1 else "invalid"


def command_rows(
    frame: pd.DataFrame,
    profile,
    gold: Mapping[str, str],
) -> pd.DataFrame:
    """``frame`` as ``deliberation run`` writes it (module docstring)."""
    out = frame.rename(columns={"key": "request_key"})
    if "profile" in out:
        out = out.drop(columns="profile")
    out.insert(0, "profile", profile.name)
    out.insert(1, "model", f"{profile.backend}:{profile.model}")
    answer_at = list(out.columns).index("answer")
    out.insert(answer_at, "gold", [gold.get(task, "") for task in out["task"]])
    out.insert(list(out.columns).index("valid") + 1, "outcome", [outcome(v) for v in out["valid"]])
    return out


def vote_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Natural discussions' votes: accuracy (%) by vote stage over the counted votes (invalid
    ones count wrong), with the invalid and failed counts."""
    votes = rows[rows["kind"] == "vote"]
    votes = votes.assign(outcome=[outcome(v) for v in votes["valid"]])
    table = []
    for stage, group in votes.groupby("stage", sort=False):
        counted = group[group["outcome"] != "failed"]
        accuracy = 100 * counted["correct"].astype(float).mean() if len(counted) else float("nan")
        table.append(
            {
                "votes": stage,
                "rows": len(group),
                "accuracy": "-" if pd.isna(accuracy) else f"{accuracy:.1f}",
                "invalid": int((group["outcome"] == "invalid").sum()),
                "failed": int((group["outcome"] == "failed").sum()),
            }
        )
    return pd.DataFrame(table, columns=["votes", "rows", "accuracy", "invalid", "failed"])


def summary_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (%) by policy and budget (and tag mode, when several): rows, answered, invalid,
    failed; accuracy counts invalid answers wrong and leaves failed rows out."""
    from deliberation.experiments.memory.analyses.accuracy import capacity_label

    rows = frame.assign(
        capacity=[
            capacity_label(b, n)
            for b, n in zip(
                frame["budget"],
                frame["item_limit"] if "item_limit" in frame else [None] * len(frame),
                strict=True,
            )
        ],
        outcome=[outcome(v) for v in frame["valid"]],
    )
    by = ["policy", "capacity"]
    if "tags" in rows and rows["tags"].nunique() > 1:
        by.append("tags")
    table = []
    for combo, group in rows.groupby(by, sort=False, dropna=False):
        counted = group[group["outcome"] != "failed"]
        accuracy = 100 * counted["correct"].astype(float).mean() if len(counted) else float("nan")
        table.append(
            {
                **dict(zip(by, combo, strict=True)),
                "rows": len(group),
                "accuracy": round(accuracy, 1),
                "invalid": int((group["outcome"] == "invalid").sum()),
                "failed": int((group["outcome"] == "failed").sum()),
            }
        )
    return pd.DataFrame(table)


def format_summary(table: pd.DataFrame) -> str:
    """The summary as aligned text: a line per policy (and tag mode), accuracy (%) per budget
    (``-`` where no row was counted), then that line's rows, invalid and failed counts."""
    keys = [c for c in ("policy", "tags") if c in table]
    lines = []
    for combo, group in table.groupby(keys, sort=False):
        combo = combo if isinstance(combo, tuple) else (combo,)
        line = dict(zip(keys, combo, strict=True))
        for capacity, accuracy in zip(group["capacity"], group["accuracy"], strict=True):
            line[f"{capacity}"] = "-" if pd.isna(accuracy) else f"{accuracy:.1f}"
        line |= {
            "rows": int(group["rows"].sum()),
            "invalid": int(group["invalid"].sum()),
            "failed": int(group["failed"].sum()),
        }
        lines.append(line)
    wide = pd.DataFrame(lines)
    counts = ["rows", "invalid", "failed"]
    wide = wide[[c for c in wide.columns if c not in counts] + counts].fillna("")
    title = "accuracy (%) by policy and budget (invalid answers count wrong; failed rows are not counted)"
    return title + "\n" + wide.to_string(index=False)


def write_command_rows(
    frame: pd.DataFrame,
    out: Path,
    profile,
    *,
    command: str,
    failed: int,
) -> Path:
    """The rows CSV and its provenance sidecar (``<out>.provenance.json``) as one set; returns
    the sidecar's path. A run with failed rows says so in the sidecar's caption."""
    out = Path(out)
    text = frame.to_csv(index=False, lineterminator="\n")
    caption = f"rows of `deliberation {command}` (one per model call)"
    if failed:
        caption = f"INCOMPLETE: {failed} rows failed (no usable reply; not counted). {caption}"
    sidecar = sidecar_path(out)

    def make_sidecar(files: Mapping[str, Path]) -> str:
        record = provenance_record(
            profile, notebook=f"deliberation {command}", caption=caption, files=files
        )
        return json.dumps(record, indent=2, sort_keys=True) + "\n"

    write_file_set(
        {out: lambda path: path.write_text(text, encoding="utf-8")},
        sidecar=sidecar,
        make_sidecar=make_sidecar,
    )
    return sidecar
