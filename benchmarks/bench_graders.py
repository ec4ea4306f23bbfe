"""Benchmark of the DHD graders (issue 11): 10,000 realistic replies, and the slowest single one.

Replies are built on real items of all five benchmarks (``../shared/data``, or ``--root``) the
way chat models write them: reasoning of 0.2-100 KB with numbers and option letters in it, then
one of the answer forms the graders read (boxes, answer lines, headings, ``[ANSWER]`` tags,
corrections, letter lists, grouped digits, superscripts, ranges), with the gold or a wrong
answer. One reply in fifty is hostile: 100 KB of unclosed ``\\boxed{``, ``\\boxed{1e400}``,
a 5000-digit exponent, or a power tower such as ``9^{9^{9}}`` for the symbolic checker.

Goal: no reply takes more than a second to grade. Measured per reply as wall time and as CPU
time (this process plus the symbolic worker): the machine is shared, so the goal is checked on
CPU time and wall time is printed with the load average beside it. Before issue 11, the
issue's own 10,000 replies took 6.9 s in total, but single replies took 27 s (100 KB of
unclosed boxes) and minutes (power towers), so this mix could not be run to the end. Most of
the time now goes to math-verify on Omni-MATH items (over half of the pooled items).
The symbolic worker is started before timing (its one-time start-up is printed separately).

Then the held-out-like corpus (issue 25: ``tests/fixtures/dhd_replies/heldout_like.jsonl``, built
by its ``build.py`` from real items, each reply with the score its author meant): the slowest
reply's CPU time, the grading failures on non-pathological replies (goal: none) and the share of
clear-cut replies graded as meant. Since issue 25 a pathological answer is refused from the
expression itself (``benchmarks/problems/expression_cost.py``) before any timed call, so the symbolic time
limit is only a safety net and no grade depends on the machine's speed.
Run: ``python benchmarks/bench_graders.py`` (prints a table; exits 1 if a reply used over 1 s of
CPU, or a non-pathological corpus reply failed to grade).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from deliberation.benchmarks import problems
from deliberation.benchmarks.problems import AnswerType, symbolic
from deliberation.io.paths import shared_data_dir
from deliberation.paper.bench import BenchRow, write_rows

N_REPLIES = 10_000
LIMIT_S = 1.0
CORPUS = Path(__file__).parent.parent / "tests" / "fixtures" / "dhd_replies" / "heldout_like.jsonl"
PARAGRAPH = (
    "We start from the conservation law and substitute the given values: 12 J / 4 s = 3 W, and "
    "the ratio is 3/4. Option (A) fails the limiting case, and (C) ignores the boundary term, so "
    "neither can be the whole story; the answer is not obvious yet, so we check units again. "
)
HOSTILE = [
    "\\boxed{" * 14_000 + "5",
    "The result overflows: \\boxed{1e400}",
    "\\boxed{3 \\times 10^{" + "9" * 5000 + "}}",
    "So the final answer is $\\boxed{9^{9^{9}}}$.",
    "So the final answer is $\\boxed{2^{2^{40}}}$.",
    "Final answer: " + "(A) " * 25_000,
]


def letter_endings(letters: str) -> list[str]:
    spaced = ", ".join(letters)
    oxford = ", ".join(letters[:-1]) + f", and {letters[-1]}" if len(letters) > 2 else spaced
    return [
        f"Answer: {letters}",
        f"**Answer:** ({letters[0].lower()})" if len(letters) == 1 else f"**Answer:** {oxford}",
        f"### Final Answer\n\n{spaced}",
        f"[ANSWER]{letters}[/ANSWER]",
        ", ".join(f"\\boxed{{{x}}}" for x in letters),
        f"\\boxed{{Z}}\n\nWait, I misread the second condition. The answer is {spaced}.",
        f"Final answer: Z is wrong, so {spaced}",
        f"Proposed final answer: {' and '.join(f'({x})' for x in letters)} since both conditions hold.",
    ]


def number_endings(text: str) -> list[str]:
    return [
        f"Therefore $\\boxed{{{text}}}$.",
        f"**Final Answer:** {text}",
        f"### Final Answer\n\n$$ {text} $$",
        f"The answer is {text}.",
        f"\\boxed{{0}}\n\nWait, the sign convention is reversed; the correct answer is {text}.",
    ]


def grouped(value: float) -> str:
    """A number written the way models do: thin-space or space groups, or plain."""
    if value == int(value) and abs(value) >= 10_000:
        return f"{int(value):,}".replace(",", "\u2009")
    return f"{value:.6g}"


def gold_text(item: problems.Item) -> tuple[str, bool]:
    """(an answer text for the item, whether it is the gold) from the item's own gold."""
    rendered = problems.render_answer(item)
    if item.answer_type in (AnswerType.MCQ_SINGLE, AnswerType.MCQ_MULTIPLE):
        letters = "".join(sorted(set(c for c in item.gold if c.isalpha() and c.isupper())))
        return letters or "A", True
    if item.benchmark == "omnimath":
        return item.gold, True
    span = problems.extract.answer_span(rendered) or "0"
    value = problems.extract.parse_number(span)
    return (grouped(value) if value is not None else span), True


def build_replies(items: list[problems.Item], n: int, seed: int = 0) -> list[tuple[int, str]]:
    rng = np.random.default_rng(seed)
    replies = []
    for k in range(n):
        index = int(rng.integers(len(items)))
        item = items[index]
        if k % 50 == 49:
            replies.append((index, HOSTILE[(k // 50) % len(HOSTILE)]))
            continue
        text, _ = gold_text(item)
        if rng.random() < 0.3:  # a wrong answer
            text = "C" if text != "C" and text.isalpha() and len(text) <= 4 else "7.25"
        letters = item.answer_type in (AnswerType.MCQ_SINGLE, AnswerType.MCQ_MULTIPLE)
        endings = letter_endings(text) if letters and text.isalpha() else number_endings(text)
        size = int(min(100_000, 200 * 10 ** rng.uniform(0, 2.7)))
        body = (PARAGRAPH * (size // len(PARAGRAPH) + 1))[:size]
        replies.append((index, body + "\n\n" + endings[int(rng.integers(len(endings)))]))
    return replies


def cpu_now() -> float:
    """CPU seconds of this process plus those the symbolic worker spent on our calls."""
    return time.process_time() + symbolic.worker_cpu_seconds()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=shared_data_dir())
    parser.add_argument("--replies", type=int, default=N_REPLIES)
    parser.add_argument("--rows", help="write this benchmark's rows of the make-bench table here")
    args = parser.parse_args(argv)
    if args.root is None:
        print("bench_graders: no ../shared/data (set DELIBERATION_SHARED_DATA); skipped")
        write_rows(args.rows, [BenchRow("DHD graders", "skipped", "no ../shared/data")])
        return 0
    logging.basicConfig(level=logging.ERROR)  # a timed-out tower is counted, not logged
    items = [it for name in problems.BENCHMARKS for it in problems.load(name, args.root / name)]
    replies = build_replies(items, args.replies)
    started = time.perf_counter()
    symbolic.start()
    startup = time.perf_counter() - started

    parent_cpu = time.process_time()
    times, cpu_times, outcomes = [], [], Counter()
    per_benchmark: Counter[str] = Counter()
    for index, reply in replies:
        item = items[index]
        started, started_cpu = time.perf_counter(), cpu_now()
        try:
            result = problems.grade(item, reply)
            if result.failed:
                refused = result.failure.startswith("math-verify not run")
                outcomes["failed: refused as too costly" if refused else "failed: time limit"] += 1
            else:
                outcomes[f"score {result.score:g}"] += 1
        except problems.omnimath.JudgeRequired:
            outcomes["needs judge"] += 1
        elapsed = time.perf_counter() - started
        times.append((elapsed, len(reply), item.id))
        cpu_times.append((cpu_now() - started_cpu, len(reply), item.id))
        per_benchmark[item.benchmark] += elapsed
    total = sum(t for t, _, _ in times)
    slowest, slowest_cpu = max(times), max(cpu_times)
    sizes = [size for _, size, _ in times]
    print(
        f"{'replies':28s} {len(replies):>10d}  ({sum(sizes) / 1e6:.1f} MB, max {max(sizes) / 1e3:.0f} KB)"
    )
    print(f"{'symbolic worker start-up':28s} {startup:>10.2f} s  (once, not counted below)")
    print(f"{'total grading time':28s} {total:>10.2f} s")
    print(f"{'mean per reply':28s} {1e3 * total / len(times):>10.2f} ms")
    print(
        f"{'CPU: this process, worker':28s} {time.process_time() - parent_cpu:>10.2f} s, {symbolic.worker_cpu_seconds():.2f} s"
    )
    print(
        f"{'slowest reply, CPU':28s} {slowest_cpu[0]:>10.2f} s  ({slowest_cpu[1] / 1e3:.0f} KB, {slowest_cpu[2]})"
    )
    print(
        f"{'slowest reply, wall':28s} {slowest[0]:>10.2f} s  ({slowest[1] / 1e3:.0f} KB, {slowest[2]}; load average {os.getloadavg()[0]:.1f})"
    )
    for name, seconds in sorted(per_benchmark.items()):
        print(f"{'  time on ' + name:28s} {seconds:>10.2f} s")
    for name, count in sorted(outcomes.items()):
        print(f"{'  ' + name:28s} {count:>10d}")
    over = [t for t in cpu_times if t[0] > LIMIT_S]
    print(f"{'replies over ' + str(LIMIT_S) + ' s CPU':28s} {len(over):>10d}  (goal: 0)")
    corpus_row, corpus_ok = grade_corpus({it.id: it for it in items})
    write_rows(
        args.rows,
        [
            BenchRow(
                f"DHD graders: {len(replies):,} replies, slowest reply (CPU)",
                f"{slowest_cpu[0]:.2f} s",
                f"total {total:.1f} s, mean {1e3 * total / len(times):.2f} ms per reply",
                f"<= {LIMIT_S:g} s each: {'met' if not over else 'NOT met'}",
            ),
            corpus_row,
        ],
    )
    return 1 if over or not corpus_ok else 0


def grade_corpus(items: dict[str, problems.Item]) -> tuple[BenchRow, bool]:
    """Grade the held-out-like corpus: slowest reply (CPU), failures, share graded as meant."""
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    slowest, failures, clear, right = (0.0, "", ""), [], 0, 0
    for row in rows:
        started = cpu_now()
        result = problems.grade(items[row["item"]], row["reply"])
        used = cpu_now() - started
        slowest = max(slowest, (used, row["item"], row["form"]))
        if row["pathological"]:
            continue
        clear += 1
        failures += [row] if result.failed else []
        right += result.score is not None and abs(result.score - row["expected"]) < 1e-9
    print(f"{'corpus replies (clear-cut)':28s} {len(rows):>10d}  ({clear})")
    print(f"{'corpus slowest reply, CPU':28s} {slowest[0]:>10.2f} s  ({slowest[1]}, {slowest[2]})")
    print(f"{'corpus failures (clear-cut)':28s} {len(failures):>10d}  (goal: 0)")
    print(f"{'corpus graded as meant':28s} {100 * right / clear:>10.1f} %  (goal: >= 97%)")
    row = BenchRow(
        f"DHD graders: held-out-like corpus, {len(rows):,} replies, slowest reply (CPU)",
        f"{slowest[0]:.2f} s",
        f"{len(failures)} failures on {clear:,} clear-cut replies; "
        f"{100 * right / clear:.1f}% graded as meant",
        f"no failure: {'met' if not failures else 'NOT met'}",
    )
    return row, not failures


if __name__ == "__main__":
    sys.exit(main())
