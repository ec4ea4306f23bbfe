"""CLI: ``deliberation replies`` (prompts and raw replies from the response cache) and
``deliberation compare`` (several profiles' headline numbers side by side)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import add_command, add_list, add_profile

    replies = add_command(
        subparsers,
        "replies",
        description=(
            "Shows each call's prompt as sent and the model's raw reply, read from the profile's "
            "response cache (read-only): the calls of the profile's latest `deliberation run` "
            "(the newest rows in build/runs/<profile>/), those of --rows files, or --all. "
            "Validity, reason and task come from the rows the runs wrote "
            "(tables/<profile>/*_rows.csv, build/runs/<profile>/, and any --rows file); "
            "a reply no rows mention is checked against its request's output spec."
        ),
    )
    add_profile(replies, default="sim")
    replies.add_argument("--stage", help="a stage (crossprofile.decision) or its prefix (dhd)")
    replies.add_argument("--task", help="a task id (template/variant) or a template id")
    order = replies.add_mutually_exclusive_group()
    order.add_argument(
        "--invalid-first", action="store_true", help="invalid replies first, then failed calls"
    )
    order.add_argument(
        "--only", choices=("invalid", "failed", "valid", "unchecked"), help="only these calls"
    )
    replies.add_argument("--limit", type=int, default=5, help="replies shown (default 5; 0: all)")
    scope = replies.add_mutually_exclusive_group()
    scope.add_argument(
        "--rows",
        type=Path,
        nargs="+",
        default=[],
        help="only the calls these rows files name (a run's: deliberation run --out);"
        " default: the latest run's",
    )
    scope.add_argument("--all", action="store_true", help="every call in the cache")
    replies.add_argument("--cache", type=Path, help="cache file (default: the profile's)")
    replies.set_defaults(func=_replies)

    compare = add_command(
        subparsers,
        "compare",
        description=(
            "The papers' headline numbers beside each profile's, one row per headline, read "
            "from its published tables (tables/<profile>/, written by make paper); also writes "
            "a report page. --full: every table the claims tables of figures/README.md name, "
            "estimate [95% interval] side by side."
        ),
    )
    add_profile(compare, several=True, help="profile names (commas or spaces)")
    compare.add_argument(
        "--full",
        action="store_true",
        help="every headline table in full, side by side, instead of one row per headline",
    )
    add_list(compare, "--tables", help="with --full: only these tables (file stems)")
    compare.add_argument(
        "--papers",
        action="store_true",
        help="the headline view (the default; kept for older scripts)",
    )
    compare.add_argument(
        "--readme",
        action="store_true",
        help="also rewrite the side-by-side table of docs/results.md (headline view)",
    )
    compare.add_argument(
        "--out",
        type=Path,
        help="page folder (default build/report/papers-<P1>-<P2>..., with --full compare-...)",
    )
    compare.set_defaults(func=_compare)

    corpus = add_command(
        subparsers,
        "parse-corpus",
        description=(
            "collect: send the corpus's decision and vote prompts through a profile whose"
            " structured output is off (cache first) and write one JSON line per reply, keeping"
            " the hand-written labels of unchanged replies (new replies come without one: read"
            " and label them). score: parse_choice's precision and recall on a labelled corpus."
        ),
    )
    actions = corpus.add_subparsers(dest="corpus_command", required=True)
    collect = actions.add_parser("collect", help="send the prompts, write the replies")
    add_profile(collect, help="a profile with structured output off")
    collect.add_argument("--out", type=Path, required=True, help="the corpus (JSONL)")
    collect.add_argument("--labels", type=Path, help="labelled corpus to keep labels from")
    collect.add_argument("--templates", type=int, help="CrossProfile templates (default all)")
    collect.add_argument("--hiddenbench", type=int, help="HiddenBench tasks (default all)")
    collect.add_argument("--vote-tasks", type=int, default=24, help="tasks voted on (default 24)")
    collect.set_defaults(func=_collect_corpus)
    score = actions.add_parser("score", help="parse_choice against the labels")
    score.add_argument("corpus", type=Path, help="a labelled corpus (JSONL)")
    score.add_argument("--show", action="store_true", help="print every reply read wrongly")
    score.set_defaults(func=_score_corpus)


def _replies(args: argparse.Namespace) -> int:
    from deliberation.results.replies import find_replies, format_selection

    missing = [path for path in args.rows if not path.is_file()]
    if missing:
        print(f"deliberation replies: --rows: no such file {missing[0]}")
        return 2
    from deliberation.results.replies import latest_run_rows

    scope = None
    if args.rows:
        scope = args.rows
    elif not args.all:
        latest = latest_run_rows(_profile_name(args.profile))
        scope = [latest] if latest is not None else None
    selection = find_replies(
        args.profile,
        cache_file=args.cache,
        rows=args.rows,
        scope=scope,
        stage=args.stage,
        task=args.task,
        only=args.only,
        invalid_first=args.invalid_first,
        limit=args.limit or None,
    )
    for line in format_selection(selection):
        print(line)
    return 0


def _profile_name(profile: str) -> str:
    from deliberation.profiles.profile import load_profile

    return load_profile(profile).name


def _compare(args: argparse.Namespace) -> int:
    from deliberation.results.compare import compare_profiles, write_comparison_page

    if args.full and (args.papers or args.readme):
        print("deliberation compare: --full shows the tables; --papers and --readme the headlines")
        return 2
    if args.tables and not args.full:
        print("deliberation compare: --tables applies with --full (one row per headline without)")
        return 2
    if not args.full:
        return _compare_with_papers(args)

    comparison = compare_profiles(args.profiles, tables=args.tables)
    for line in comparison.lines():
        print(line)
    page = write_comparison_page(comparison, args.out)
    print(f"\npage: {page}")
    made = any(not block.frame.empty for block in comparison.blocks)
    if not made:
        print("no headline table exists for these profiles yet: run make paper PROFILE=<name>")
    return 0 if made else 1


def _compare_with_papers(args: argparse.Namespace) -> int:
    from deliberation.results.compare import _synthetic as profile_is_synthetic
    from deliberation.results.side_by_side import (
        PaperNumbersError,
        compare_with_papers,
        write_papers_page,
        write_readme_section,
    )

    synthetic = {p: profile_is_synthetic(p) for p in dict.fromkeys(args.profiles)}
    try:
        comparison = compare_with_papers(args.profiles, synthetic)
    except PaperNumbersError as exc:
        print(f"deliberation compare: {exc}")
        return 2
    for line in comparison.lines():
        print(line)
    print(f"\npage: {write_papers_page(comparison, args.out)}")
    if args.readme:
        print(f"side-by-side table rewritten: {write_readme_section(comparison)}")
    return 0


def _collect_corpus(args: argparse.Namespace) -> int:
    from deliberation.inference import make_client
    from deliberation.inference.model_server import model_server
    from deliberation.profiles.profile import load_profile
    from deliberation.results import choice_corpus as corpus

    profile = load_profile(args.profile)
    items = corpus.corpus_prompts(
        crossprofile_templates=args.templates,
        hiddenbench_tasks=args.hiddenbench,
        vote_tasks=args.vote_tasks,
        seed=profile.seed,
    )
    with model_server(profile):
        records = corpus.collect(profile, items, make_client(profile))
    labelled = []
    for path in (args.labels, args.out):
        if path is not None and path.is_file():
            labelled += corpus.read_corpus(path)
    records = corpus.merge_labels(records, labelled)
    corpus.write_corpus(records, args.out)
    todo = sum("label" not in r for r in records)
    print(f"{len(records)} replies of {len(items)} prompts in {args.out}; {todo} to label by hand")
    return 0 if len(records) == len(items) else 1


def _score_corpus(args: argparse.Namespace) -> int:
    from deliberation.results import choice_corpus as corpus

    score, wrong = corpus.measure(corpus.read_corpus(args.corpus))
    print(
        f"replies {score.replies}, labelled with an option {score.labelled_choices},"
        f" parsed {score.parsed}, correct {score.correct}:"
        f" precision {score.precision:.3f}, recall {score.recall:.3f}"
    )
    if args.show:
        for record, got in wrong:
            print(f"--- {record['source']}: label {record['label']!r}, parsed {got!r}")
            print(record["reply"])
    return 0
