"""Published tables as the table writer leaves them: a CSV and a provenance sidecar holding its
sha256 (readers refuse a table without one: deliberation.results.published_tables)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from deliberation.io import paths


def vouch_for(csv: Path) -> Path:
    """(Re)write ``csv``'s sidecar with its current hash, as a writer of the set would."""
    sidecar = csv.with_name(f"{csv.stem}.provenance.json")
    digest = hashlib.sha256(csv.read_bytes()).hexdigest()
    sidecar.write_text(json.dumps({"files": {csv.name: digest}}, indent=2) + "\n")
    return sidecar


def publish_table(profile: str, name: str, frame: pd.DataFrame) -> Path:
    """``tables/<profile>/<name>.csv`` under the output root, with its sidecar."""
    folder = paths.output_root() / "tables" / profile
    folder.mkdir(parents=True, exist_ok=True)
    csv = folder / f"{name}.csv"
    frame.to_csv(csv, index=False)
    vouch_for(csv)
    return csv
