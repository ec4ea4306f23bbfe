"""The HTML pages' run label: real-model output is labelled as such, sim output as synthetic.
(The report built from executed notebooks and opened in Chromium: tests/notebooks/.)"""

from __future__ import annotations

from deliberation.publish import pages


def test_a_real_model_profile_is_labelled_as_model_output():
    label = pages.run_label("qwen2.5-7b-vllm")
    assert not label.synthetic and "Qwen/Qwen2.5-7B-Instruct" in label.banner()
    assert pages.run_label("smoke").synthetic
