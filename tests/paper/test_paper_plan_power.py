"""``deliberation plan`` prints the power table after the cost (``--no-power`` skips it)."""

from __future__ import annotations

from deliberation.cli import main
from deliberation.stats.power import designs


def test_plan_prints_every_tests_power_after_its_cost_unless_told_not_to(capsys):
    assert main(["plan", "smoke", "--notebooks", "00"]) == 0
    out = capsys.readouterr().out
    plan, header, power = out.partition("power: profile smoke (synthetic (sim backend))")
    assert header, out
    assert "total:" in plan and "cost: none" in plan  # the cost comes first
    for design in designs():
        assert design.name in power
    assert "tests simulated in" in power and "--no-power" in power
    assert main(["plan", "smoke", "--notebooks", "00", "--no-power"]) == 0
    out = capsys.readouterr().out
    assert "total:" in out and "power: profile" not in out
