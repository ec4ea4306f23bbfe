"""The report's power page: curves of power against grid size per test, labelled synthetic."""

from __future__ import annotations

import matplotlib.pyplot as plt

from deliberation.paper.power import power_curves_figure
from deliberation.paper.site import build_report
from deliberation.stats.power import PowerRow, designs


def row(name: str, kind: str, bank: int | None) -> PowerRow:
    design = next(d for d in designs() if d.name == name)
    curve = ((5, 0.1), (20, 0.5), (80, 0.9))
    return PowerRow(design, 10.0, "test", 20, 0.5, 0.02, 60, 0.81, "test", 0, curve, kind, bank)


def test_each_test_gets_a_panel_that_says_where_its_variance_comes_from():
    rows = [
        row("H3", "sim", 60),
        row("HiddenBench R1 - B3", "published", None),
        row("H2", "paper", 60),  # the SD paper 1's H3 interval implies
    ]
    fig = power_curves_figure(rows, title="the profile's power [synthetic (sim backend)]")
    try:
        assert fig._suptitle.get_text() == "the profile's power [synthetic (sim backend)]"
        visible = [ax for ax in fig.axes if ax.get_visible()]
        assert len(visible) == 3
        h3, hb, h2 = (ax.get_title() for ax in visible)
        assert "H2" in h2 and "paper 1's H3 interval" in h2 and "synthetic" not in h2
        assert "H3" in h3 and "synthetic (sim backend)" in h3
        assert "HiddenBench" in hb and "synthetic" not in hb and "profile's rows" in hb
        assert [tuple(line.get_xdata()) for line in visible[0].lines][0] == (5, 20, 80)
        # past the bank's 60 templates is shaded; HiddenBench has no bank here
        assert len(visible[0].patches) == 1 and len(visible[1].patches) == 0
    finally:
        plt.close(fig)


def test_the_report_has_a_power_page_unless_told_not_to(tmp_path):
    index = build_report("smoke", out=tmp_path / "report")
    assert 'href="power.html"' in index.read_text()
    page = (index.parent / "power.html").read_text()
    assert 'class="banner synthetic"' in page and '<img src="power.png"' in page
    assert "synthetic (sim backend)" in page  # the figure's title, in its alt text
    for design in designs():
        assert design.name in page
    assert "not planned" not in page  # the table once, without the plan's columns
    assert "points from" in page  # each test's effect and variance source
    assert (index.parent / "power.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    index = build_report("smoke", out=tmp_path / "bare", power=False)
    assert "not built (--no-power)" in index.read_text()
    assert not (index.parent / "power.html").exists()
