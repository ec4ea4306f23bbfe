"""Cross-fitting: units never straddle folds, nothing is chosen and scored on the same draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deliberation.stats import cross_fit, fold_assignment


def replays() -> pd.DataFrame:
    """10 problems x 4 replays x 3 messages; message m2 is the best of each problem."""
    rng = np.random.default_rng(0)
    index = pd.MultiIndex.from_product(
        [[f"p{k}" for k in range(10)], range(4), ["m1", "m2", "m3"]],
        names=["problem", "replay", "message"],
    )
    frame = index.to_frame(index=False)
    rate = frame["message"].map({"m1": 0.3, "m2": 0.8, "m3": 0.5})
    frame["correct"] = (rng.random(len(frame)) < rate).astype(int)
    return frame


def test_fold_assignment_is_balanced_and_deterministic():
    folds = fold_assignment(11, 3, np.random.default_rng(1))
    assert sorted(np.bincount(folds)) == [3, 4, 4]
    np.testing.assert_array_equal(folds, fold_assignment(11, 3, np.random.default_rng(1)))
    with pytest.raises(ValueError, match="cannot split 2"):
        fold_assignment(2, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="folds"):
        fold_assignment(5, 1, np.random.default_rng(0))


@pytest.mark.parametrize("by", ["problem", ["problem", "replay"]])
def test_training_and_held_out_units_never_overlap_and_each_is_held_out_once(by):
    frame = replays()
    keys = [by] if isinstance(by, str) else by
    seen_train: list[set] = []
    seen_test: list[set] = []

    def units(rows: pd.DataFrame) -> set:
        return set(rows[keys].itertuples(index=False, name=None))

    def fit(train: pd.DataFrame) -> set:
        seen_train.append(units(train))
        return units(train)

    def evaluate(model: set, test: pd.DataFrame) -> float:
        seen_test.append(units(test))
        assert not (model & units(test))
        return float(test["correct"].mean())

    result = cross_fit(frame, fit, evaluate, folds=4, by=by, seed=2)
    assert len(seen_test) == 4
    all_units = units(frame)
    assert set().union(*seen_test) == all_units
    assert sum(len(s) for s in seen_test) == len(all_units)  # each held out exactly once
    for train, test in zip(seen_train, seen_test, strict=True):
        assert train | test == all_units and not train & test
    assert result.scores["n_test"].sum() == len(frame)
    pooled = np.average(result.scores["score"], weights=result.scores["n_test"])
    assert pooled == pytest.approx(frame["correct"].mean())
    assert len(result.assignment) == len(all_units)


def test_selection_chosen_on_training_replays_is_scored_on_held_out_replays():
    """A selector picks the message with the best training accuracy; cross-fitted, it should
    find m2 in every fold and score near its true rate, not its in-sample (optimistic) rate."""
    frame = replays()

    def fit(train: pd.DataFrame) -> str:
        return str(train.groupby("message")["correct"].mean().idxmax())

    def evaluate(choice: str, test: pd.DataFrame) -> dict[str, float]:
        return {
            "selected": test.loc[test["message"] == choice, "correct"].mean(),
            "baseline": test.loc[test["message"] == "m1", "correct"].mean(),
        }

    result = cross_fit(frame, fit, evaluate, folds=2, by=["problem", "replay"], seed=0)
    assert result.models == ("m2", "m2")
    weights = result.scores["n_test"]
    selected, baseline = (
        np.average(result.scores[c], weights=weights) for c in ("selected", "baseline")
    )
    assert selected > baseline
    assert list(result.scores.columns) == ["fold", "n_test", "selected", "baseline"]


def test_cross_fit_is_deterministic_given_seed_and_accepts_frame_results():
    frame = replays()

    def evaluate(model: None, test: pd.DataFrame) -> pd.DataFrame:
        return test.groupby("problem", as_index=False)["correct"].mean()

    first = cross_fit(frame, lambda train: None, evaluate, folds=5, seed=7)
    again = cross_fit(frame, lambda train: None, evaluate, folds=5, seed=7)
    other = cross_fit(frame, lambda train: None, evaluate, folds=5, seed=8)
    pd.testing.assert_frame_equal(first.scores, again.scores)
    assert sorted(first.scores["problem"]) == sorted(frame["problem"].unique())
    assert not first.assignment["fold"].equals(other.assignment["fold"])


def test_clear_errors_for_missing_fold_columns_and_bad_evaluations():
    frame = replays()
    with pytest.raises(KeyError, match="'block'"):
        cross_fit(frame, lambda t: None, lambda m, t: 0.0, by="block")
    with pytest.raises(TypeError, match="evaluate must return"):
        cross_fit(frame, lambda t: None, lambda m, t: [1, 2])  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="cannot split 10"):
        cross_fit(frame, lambda t: None, lambda m, t: 0.0, folds=11)
