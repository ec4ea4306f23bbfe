"""Synthetic bank-v5 CrossProfile banks built from the hand-made fixtures: the key in slot E
(``key_in_e/hiring-02.yaml``), P (``valid/hiring-01.yaml``) or N (the same with its irrelevant
tones swapped), the options listed in any slot order, every text made unique by a tag."""

from __future__ import annotations

from pathlib import Path

import yaml

from deliberation.benchmarks.crossprofile import design
from deliberation.benchmarks.crossprofile.loader import load_template
from deliberation.benchmarks.crossprofile.schema import DOMAINS, Template

FIXTURES = Path(__file__).parents[1] / "fixtures" / "crossprofile"
SOURCES = {
    "E": FIXTURES / "key_in_e" / "hiring-02.yaml",
    "P": FIXTURES / "valid" / "hiring-01.yaml",
}
ORDERS = ("EPN", "ENP", "PEN", "PNE", "NEP", "NPE")


def v5_template(
    template_id: str, domain: str, *, pilot: bool, tag: str, slot: str = "P", order: str = "PEN"
) -> Template:
    """A valid bank-v5 template with the key in ``slot``, listing the options so that their
    slots read ``order`` (the description lists them the same way)."""
    source = load_template(SOURCES["E" if slot == "E" else "P"])
    data = source.model_dump(mode="json")
    if slot == "N":
        for fact in data["facts"]:
            if fact["role"] == "irrelevant":
                fact["tone"] = -fact["tone"]
    slots = design.option_slots(Template.model_validate(data))
    options = sorted(data["options"], key=lambda o: order.index(slots[o]))
    old, new = (f"{a}, {b} and {c}" for a, b, c in (data["options"], options))
    assert old in data["description"], data["description"]
    data.update(
        id=template_id,
        domain=domain,
        pilot=pilot,
        options=options,
        description=data["description"].replace(old, new),
    )
    for fact in data["facts"]:
        fact["text"] = fact["text"][:-1] + f" (record {tag})."
    return Template.model_validate(data)


def counterbalanced(index: int) -> tuple[str, str]:
    """(key slot, listed order) of the ``index``-th template of a counterbalanced bank: slots
    E, P, N in turn, each run of three sharing one of the six orders in turn."""
    return "EPN"[index % 3], ORDERS[(index // 3) % len(ORDERS)]


def v5_bank(layout=counterbalanced, pilot_layout=counterbalanced) -> list[Template]:
    """60 main + 10 pilot bank-v5 templates; ``layout(i)`` gives main slot i's (key slot,
    order), ``pilot_layout(k)`` the k-th pilot's."""
    out = []
    for d, domain in enumerate(DOMAINS):
        for k in range(1, 6):
            slot, order = layout(5 * d + k - 1)
            out.append(
                v5_template(
                    f"{domain}-0{k}",
                    domain,
                    pilot=False,
                    tag=f"{domain} {k}",
                    slot=slot,
                    order=order,
                )
            )
    for k, domain in enumerate(DOMAINS[:10]):
        slot, order = pilot_layout(k)
        out.append(
            v5_template(
                f"{domain}-p1", domain, pilot=True, tag=f"{domain} p{k}", slot=slot, order=order
            )
        )
    return out


def write_templates(directory: Path, templates: list[Template]) -> None:
    for t in templates:
        (directory / f"{t.id}.yaml").write_text(
            yaml.safe_dump(t.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
        )
