"""Reading labellers' answers (relevance and balance)."""

from __future__ import annotations

from deliberation.memory_policies import BalanceLabel
from deliberation.memory_policies.labels import json_object, read_balance, read_relevance

IDS = ["c1", "c2", "c3"]
OPTIONS = ["Alpha", "Beta"]


def test_relevance_from_plain_fenced_and_wrapped_json():
    for text in (
        '{"relevant": [1, 3]}',
        '```json\n{"relevant": [1, 3]}\n```',
        'Here are the labels: {"relevant": ["1", 3]} Hope this helps.',
    ):
        reading = read_relevance(text, IDS)
        assert reading.labels == {"c1": True, "c2": False, "c3": True}
        assert reading.error is None


def test_relevance_unreadable_or_out_of_range_is_recorded():
    reading = read_relevance("Statements 1 and 3 are relevant.", IDS)
    assert reading.error == "relevance labels unreadable"
    assert reading.labels == {"c1": False, "c2": False, "c3": False}
    reading = read_relevance('{"relevant": [1, 9]}', IDS)
    assert reading.labels["c1"] and "not statement numbers" in reading.error


def test_balance_labels_and_their_problems():
    text = (
        '{"labels": [{"statement": 1, "option": "alpha", "direction": "for"},'
        ' {"statement": 2, "option": "none", "direction": "neither"},'
        ' {"statement": 3, "option": "Delta", "direction": "against"}]}'
    )
    reading = read_balance(text, IDS, OPTIONS)
    assert reading.labels == {"c1": BalanceLabel("Alpha", 1), "c2": BalanceLabel(None, 0)}
    assert reading.error == "balance labels: 1 unreadable entries, 1 of 3 statements unlabelled"
    assert read_balance("no idea", IDS, OPTIONS).error == "balance labels unreadable"


def test_json_object_rejects_non_objects():
    assert json_object("[1, 2]") is None
    assert json_object("") is None


def test_a_balance_label_is_read_as_decisions_are_read():
    """The option field is read by parse_choice: "Option Beta" is Beta, "not Alpha" names
    none (an unreadable entry, never Alpha)."""
    text = (
        '{"labels": [{"statement": 1, "option": "Option Beta.", "direction": "for"},'
        ' {"statement": 2, "option": "not Alpha", "direction": "against"}]}'
    )
    reading = read_balance(text, IDS, OPTIONS)
    assert reading.labels == {"c1": BalanceLabel("Beta", 1)}
    assert "1 unreadable entries" in reading.error
