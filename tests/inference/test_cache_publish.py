"""Published answers (``inference/published.py``): ``deliberation cache export`` writes a profile's
answers as deterministic gzip JSON lines, ``cache import`` checks every line and loads them all
or none; and a replay cannot send (``DELIBERATION_NO_SEND``: the client and the model server
refuse, naming what was missing)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from helpers.serve_sim import arithmetic_requests, openai_profile

from deliberation.inference import cache_path, make_client, open_run
from deliberation.inference.base import (
    NO_SEND_ENV,
    ChatRequest,
    ChatResponse,
    SendingForbiddenError,
    StructuredOutput,
)
from deliberation.inference.cache import CacheConflictError, ResponseCache, request_key
from deliberation.inference.model_server import ServerOptions, ServerStartError, model_server
from deliberation.inference.openai_api import OpenAIBackend
from deliberation.inference.published import (
    FILE_NAME,
    PublishedFileError,
    export_responses,
    import_responses,
    published_path,
    read_published,
)
from deliberation.profiles.profile import load_profile
from deliberation.testing import sim_server_in_thread

REQUESTS = [
    *arithmetic_requests(3),
    ChatRequest.from_prompt(
        "What is 2 + 2?",
        stage="smoke.arithmetic",
        structured=StructuredOutput(choices=("4", "5")),
        sample=2,
        seed=5,
    ),
]


@pytest.fixture
def answered(tmp_path) -> Path:
    """The smoke profile's cache holding four sim answers; the file it exports."""
    client = make_client(load_profile("smoke"), progress=False)
    assert all(r.ok for r in client.generate(REQUESTS))
    client.cache.close()
    return export_responses(load_profile("smoke"), out=tmp_path / FILE_NAME).path


def _lines(file: Path) -> list[dict]:
    with gzip.open(file, "rt", encoding="utf-8") as text:
        return [json.loads(line) for line in text]


def _rewrite(file: Path, lines: list[dict], target: Path) -> Path:
    with gzip.open(target, "wt", encoding="utf-8") as text:
        text.writelines(json.dumps(line) + "\n" for line in lines)
    return target


def test_export_is_sorted_deterministic_gzip_with_neither_time_nor_name(answered, tmp_path) -> None:
    raw = answered.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"  # mtime 0
    assert not raw[3] & 0x08  # FLG.FNAME unset: no file name stored
    header, *answers = _lines(answered)
    assert header["profile"] == "smoke" and header["answers"] == len(answers) == 4
    keys = [a["key"] for a in answers]
    assert keys == sorted(keys)
    # Only these fields, ever: no header, no key, no URL beyond the header's identity.
    for answer in answers:
        assert set(answer) == {"key", "request", "response", "attempts"}
        assert set(answer["request"]) == {
            "messages",
            "stage",
            "sample",
            "temperature",
            "max_tokens",
            "top_p",
            "seed",
            "structured",
        }
        assert set(answer["response"]) == {"text", "parsed", "finish_reason", "prompt_tokens",
                                           "completion_tokens", "latency_s"}  # fmt: skip
    choice = next(a for a in answers if a["request"]["structured"] is not None)
    assert choice["request"]["structured"]["choices"] == ["4", "5"]
    assert choice["request"]["sample"] == 2 and choice["request"]["seed"] == 5
    again = export_responses(load_profile("smoke"), out=tmp_path / "again.jsonl.gz")
    assert again.path.read_bytes() == raw


def test_the_default_file_is_under_results_of_the_profile(answered) -> None:
    done = export_responses(load_profile("smoke"))
    assert done.path == published_path("smoke")
    assert done.path.parts[-3:] == ("results", "smoke", FILE_NAME)


def test_import_into_a_fresh_cache_serves_every_answer_and_twice_is_a_no_op(
    answered, tmp_path
) -> None:
    profile = load_profile("smoke")
    fresh = tmp_path / "fresh.sqlite"
    first = import_responses(answered, profile, cache_file=fresh)
    second = import_responses(answered, profile, cache_file=fresh)
    assert (first.added, first.present) == (4, 0) and (second.added, second.present) == (0, 4)
    client = make_client(profile, cache_file=fresh, progress=False)
    served = client.generate(REQUESTS)
    assert all(r.cached for r in served)
    original = make_client(profile, progress=False).generate(REQUESTS)
    assert [r.text for r in served] == [r.text for r in original]
    # Exported again from the imported cache: the same bytes.
    client.cache.close()
    copy = export_responses(profile, out=tmp_path / "copy.jsonl.gz", cache_file=fresh)
    assert copy.path.read_bytes() == answered.read_bytes()


def test_a_different_answer_under_a_key_is_an_error_naming_it_and_nothing_is_imported(
    answered, tmp_path
) -> None:
    profile = load_profile("smoke")
    header, *answers = _lines(answered)
    answers[2]["response"]["text"] = "Answer: 999"
    fresh = tmp_path / "fresh.sqlite"
    with ResponseCache(fresh) as cache:  # one answer already there, differently
        key, request, response = read_published(answered, profile)[2]
        cache.put(key, request, ChatResponse(text="Answer: 999"), profile="smoke",
                  identity=make_client(profile).backend.identity)  # fmt: skip
    with pytest.raises(CacheConflictError, match=answers[2]["key"]) as caught:
        import_responses(answered, profile, cache_file=fresh)
    assert "nothing was imported" in str(caught.value)
    with ResponseCache(fresh) as cache:
        assert cache.keys() == {key}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda lines: lines[2]["request"].update(temperature="0.5"), "line 3: request.temperature"),
        (lambda lines: lines[1]["request"]["messages"][0].update(role="robot"),
         "line 2: request.messages.0.role"),
        (lambda lines: lines[3].update(extra=1), "line 4: extra"),
        (lambda lines: lines[1]["request"]["messages"][0].update(content="edited"),
         "line 2: key:"),
        (lambda lines: lines.append(dict(lines[1])), "line 6: answers"),
        (lambda lines: lines.pop(), "line 1: answers: the header says 4"),
        (lambda lines: lines[0]["identity"].update(revision="other"), "line 1: identity"),
        (lambda lines: lines[2]["response"].update(prompt_tokens=-3),
         "line 3: response.prompt_tokens"),
        (lambda lines: lines[2]["response"].update(latency_s=float("nan")),
         "line 3: response.latency_s"),
        (lambda lines: lines[0].update(profile="../params/x"), "line 1: profile"),
        (lambda lines: lines[2]["response"].update(parsed="not what the text says"),
         "line 3: response.parsed"),
        (lambda lines: lines[2]["response"].update(text="y" * (64 * 1024 + 256 * 4096 + 1)),
         "line 3: response.text: longer than"),
    ],
    ids=["type", "role", "unknown field", "edited request", "twice", "truncated", "identity",
         "negative tokens", "NaN latency", "profile path", "parsed edited", "answer too long"],
)  # fmt: skip
def test_bad_lines_are_refused_naming_file_line_and_field(
    answered, tmp_path, edit, message
) -> None:
    lines = _lines(answered)
    edit(lines)
    bad = _rewrite(answered, lines, tmp_path / "bad.jsonl.gz")
    fresh = tmp_path / "fresh.sqlite"
    with pytest.raises(PublishedFileError) as caught:
        import_responses(bad, load_profile("smoke"), cache_file=fresh)
    text = str(caught.value)
    assert str(bad) in text
    if message == "line 6: answers":  # a repeated line is found before the count
        assert "appears twice" in text
    else:
        assert message in text
    assert not fresh.exists() or not ResponseCache(fresh).keys()


def test_a_file_that_is_not_gzip_or_not_json_is_named(tmp_path) -> None:
    plain = tmp_path / "plain.jsonl.gz"
    plain.write_text('{"format": 1}\n')
    with pytest.raises(PublishedFileError, match="not a readable gzip"):
        read_published(plain, load_profile("smoke"))
    broken = tmp_path / "broken.jsonl.gz"
    with gzip.open(broken, "wt") as text:
        text.write("{not json\n")
    with pytest.raises(PublishedFileError, match="line 1: not JSON"):
        read_published(broken, load_profile("smoke"))


def test_failed_calls_and_other_identities_are_counted_and_left_out(answered, tmp_path) -> None:
    profile = load_profile("smoke")
    with ResponseCache(cache_path(profile)) as cache:  # an answer of another identity
        backend = OpenAIBackend.for_planning(openai_profile("http://127.0.0.1:9/v1"))
        request = ChatRequest.from_prompt("What is 1 + 1?", stage="smoke.arithmetic")
        cache.put(request_key(backend, request), request, ChatResponse(text="Answer: 2"),
                  profile="sim", identity=backend.identity)  # fmt: skip
        failed = ChatRequest.from_prompt("What is 9 + 9?", stage="smoke.arithmetic")
        cache.record_failure("f" * 64, failed, ChatResponse(text="", error="refused"),
                             profile="smoke")  # fmt: skip
    done = export_responses(profile, out=tmp_path / "out.jsonl.gz")
    assert (done.answers, done.other_identity, done.failed) == (4, 1, 1)
    assert "9 + 9" not in gzip.decompress(done.path.read_bytes()).decode()


def test_a_secret_in_an_answer_stops_the_export_without_repeating_it(tmp_path, monkeypatch) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("TEST_PUBLISH_KEY", secret)
    profile = openai_profile("http://127.0.0.1:9/v1", name="published-api",
                             api_key_env="TEST_PUBLISH_KEY")  # fmt: skip
    backend = OpenAIBackend.for_planning(profile)
    request = ChatRequest.from_prompt(f"my key is {secret}", stage="smoke.arithmetic")
    with ResponseCache(cache_path(profile)) as cache:
        cache.put(request_key(backend, request), request, ChatResponse(text="ok"),
                  profile=profile.name, identity=backend.identity)  # fmt: skip
    target = tmp_path / "out.jsonl.gz"
    with pytest.raises(PublishedFileError, match="API-key variable") as caught:
        export_responses(profile, out=target)
    assert secret not in str(caught.value) and not target.exists()


def test_while_sending_is_forbidden_a_miss_fails_naming_its_stage_and_hits_are_served(
    monkeypatch,
) -> None:
    client = make_client(load_profile("smoke"), progress=False)
    client.generate(REQUESTS[:1])
    monkeypatch.setenv(NO_SEND_ENV, "1")
    assert client.generate(REQUESTS[:1])[0].cached
    with pytest.raises(SendingForbiddenError, match="1 of 2 requests .*smoke.arithmetic"):
        client.generate(REQUESTS[:2])


def test_while_sending_is_forbidden_no_server_is_started(tmp_path, monkeypatch) -> None:
    marker = tmp_path / "started"
    profile = openai_profile("http://127.0.0.1:9/v1", name="no-send").model_copy(
        update={"server": ServerOptions(
            command=("{python}", "-c", f"open({str(marker)!r}, 'w')"),
            log_file=str(tmp_path / "server.log"),
        )}
    )  # fmt: skip
    monkeypatch.setenv(NO_SEND_ENV, "1")
    client = make_client(profile, cache_file=tmp_path / "c.sqlite", progress=False)
    with model_server(profile) as server:
        with pytest.raises(SendingForbiddenError, match="no-send|NO_SEND"):
            client.generate(arithmetic_requests(1))
        with pytest.raises(ServerStartError, match=NO_SEND_ENV):
            server.ensure()
    assert not marker.exists() and server.process is None


def test_a_replay_asks_no_server_what_it_is_and_labels_from_the_profile(
    tmp_path, monkeypatch
) -> None:
    with sim_server_in_thread() as running:
        profile = openai_profile(running.base_url, name="replayed-api")
        marked, _ = open_run(profile, cache_file=tmp_path / "a.sqlite", progress=False)
        assert marked.synthetic  # a live run against serve-sim is labelled synthetic
        monkeypatch.setenv(NO_SEND_ENV, "1")
        replayed, _ = open_run(profile, cache_file=tmp_path / "b.sqlite", progress=False)
        assert not replayed.synthetic  # it would be synthetic had it asked serve-sim


def test_replies_with_any_text_round_trip_as_ascii_lines(tmp_path) -> None:
    profile = load_profile("smoke")
    client = make_client(profile, progress=False)
    request = ChatRequest.from_prompt("Café? naïve — yes", stage="smoke.arithmetic")
    reply = ChatResponse(text="r\u00e9ponse \ud800 lone surrogate", finish_reason="stop")
    client.cache.put(client.key(request), request, reply, profile="smoke",
                     identity=client.backend.identity)  # fmt: skip
    done = export_responses(profile, out=tmp_path / "out.jsonl.gz")
    gzip.decompress(done.path.read_bytes()).decode("ascii")  # every line is ASCII
    fresh = tmp_path / "fresh.sqlite"
    assert import_responses(done.path, profile, cache_file=fresh).added == 1
    with ResponseCache(fresh) as cache:
        assert cache.get_many([client.key(request)])[client.key(request)].text == reply.text


def test_a_line_past_the_bound_is_refused_before_it_is_held_in_memory(
    answered, tmp_path, monkeypatch
) -> None:
    """A small gzip can expand to a huge answer: the reader stops at the line bound."""
    from deliberation.inference import published

    lines = _lines(answered)
    lines[2]["response"]["text"] = "y" * 5000
    bad = _rewrite(answered, lines, tmp_path / "bomb.jsonl.gz")
    monkeypatch.setattr(published, "MAX_LINE_CHARS", 4000)
    fresh = tmp_path / "fresh.sqlite"
    with pytest.raises(PublishedFileError, match="line 3: longer than 4,000 characters"):
        import_responses(bad, load_profile("smoke"), cache_file=fresh)
    assert not fresh.exists() or not ResponseCache(fresh).keys()
