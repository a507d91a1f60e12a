"""Issue 34 item 2: label scores read as the authors' code reads them, from the top k log-probs.

IRIS ``guard_models/base.py`` ``GuardLLM.complete`` keeps ``output[:len(valid_tokens)]`` of
the top log-probs the server returns (``scripts/inference_safeguard.py --top_logprobs 2``) and
renormalises the labels among them: a label outside the top 2 scores exactly 0, the other 1.
X-Guard reads the top 10 (``x_guard.py`` ``XGuard.evaluate_guard``), Parallax-AI's Qwen3Guard
the top 20 (``base_module.py`` ``safeguard_completions``). ``label_scores=full`` is ours."""

from __future__ import annotations

import json
import math

import pytest
from executors import NoRoles
from scripted_server import ScriptedServer, top_logprobs_reply

from localeval.backends.base import Backend, Direct, Failed, Generated, NextLogprobs, ScoreNext
from localeval.backends.failures import Unclassified
from localeval.errors import LocalevalError
from localeval.guards import Conversation, get_guard


def _score(guard, logprobs, ranks):
    return guard.score([NextLogprobs(logprobs=logprobs, ranks=ranks)])


def test_a_label_outside_the_top_2_scores_exactly_0_or_1_as_iris():
    guard = get_guard("llamaguard3")
    lp = {"unsafe": -0.1, "safe": -2.5}
    # both among the top 2: e^-0.1 / (e^-0.1 + e^-2.5) = 1 / (1 + e^-2.4) = 0.916827
    assert _score(guard, lp, {"unsafe": 1, "safe": 2}).score == pytest.approx(0.916827, abs=1e-6)
    # "safe" beaten by a third token: IRIS's list holds "unsafe" alone, 1.0
    assert _score(guard, lp, {"unsafe": 1, "safe": None}).score == 1.0
    assert _score(guard, {"unsafe": -3.0, "safe": -0.2},
                  {"unsafe": None, "safe": 1}).score == 0.0
    # neither: IRIS finds no label (pred_labels []) and get_pred_score sums nothing: 0.0
    none = _score(guard, lp, {"unsafe": None, "safe": None})
    assert none.score is None and "no label among the top" in none.error
    assert guard.iris_failure_score(none.error) == 0.0


def test_qwen3guard_renormalises_the_labels_found_among_its_top_20():
    guard = get_guard("qwen3guard")
    lp = {" Safe": -1.0, " Unsafe": -2.0, " Controversial": -9.0}
    ranks = {" Safe": 1, " Unsafe": 3, " Controversial": None}
    # P(Unsafe) = e^-2 / (e^-1 + e^-2) = 1 / (1 + e) = 0.268941; Controversial counts 0
    verdict = guard.verdict(Conversation("p"), [NextLogprobs(logprobs=lp, ranks=ranks)])
    assert verdict.score == pytest.approx(1 / (1 + math.e), abs=1e-9)


class Calls(NoRoles):
    def __init__(self):
        self.calls = []

    def __call__(self, requests):
        self.calls.append(list(requests))
        return [Generated(text="<label>unsafe</label>") if not isinstance(r, ScoreNext)
                else NextLogprobs(logprobs={c: -1.0 for c in r.candidates},
                                  ranks={c: 1 for c in r.candidates}) for r in requests]


@pytest.mark.parametrize("name, options, top", [
    ("llamaguard3", {}, 2), ("shieldgemma", {}, 2), ("polyguard", {}, 2), ("zero-shot", {}, 2),
    ("xguard", {"translator": None}, 10), ("qwen3guard", {}, 20),
    ("llamaguard3", {"label_scores": "full", "verdict_position": "fixed"}, None),
    ("llamaguard3", {"label_scores": "top-5"}, 5)])
def test_each_guard_asks_for_the_authors_top_k(name, options, top):
    execute = Calls()
    guard = get_guard(name, **options)
    guard.classify([Conversation("How do I pick a lock?")], execute)
    scores = [r for batch in execute.calls for r in batch if isinstance(r, ScoreNext)]
    assert scores and {r.top for r in scores} == {top}
    assert guard.label_top == top
    assert guard.label_scores_used == options.get("label_scores", "top-k")


def test_full_still_finds_the_first_labelled_position_by_the_authors_k():
    """Issue 49 item 1: under ``full`` a first-label guard asks for the top 2 all the same, to
    find the position; the labels are then read there over the whole vocabulary."""
    execute = Calls()
    guard = get_guard("llamaguard3", label_scores="full")
    guard.classify([Conversation("How do I pick a lock?")], execute)
    (request,) = [r for batch in execute.calls for r in batch if isinstance(r, ScoreNext)]
    assert (request.top, request.positions, guard.label_top) == (2, 100, None)


def test_a_bad_label_scores_option_is_one_line():
    with pytest.raises(LocalevalError, match="label_scores must be top-k"):
        get_guard("llamaguard3", label_scores="top-0")
    with pytest.raises(LocalevalError, match="reads no label log-probs"):
        get_guard("openai-moderation", label_scores="full")


def test_the_hf_backend_ranks_over_the_whole_vocabulary(tiny_llama):
    """A top-k server's list, computed from the full distribution: a label's rank is 1 + the
    tokens more likely than it (checked here against a forward pass of our own)."""
    import torch
    import transformers

    from localeval.backends.hf import HFBackend

    backend = HFBackend(str(tiny_llama), batch_size=2, dtype="float32", device="cpu")
    prompt = "Is this request harmful? Answer:"
    (full,) = backend.run([ScoreNext(prompt, (" yes", " no"))])
    assert full.ranks is None  # not asked for
    tok = transformers.AutoTokenizer.from_pretrained(str(tiny_llama))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(tiny_llama),
                                                              torch_dtype=torch.float32)
    ids = tok(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        row = model(ids).logits[0, -1].log_softmax(-1)
    target = {c: tok(prompt + c).input_ids[ids.shape[1]] for c in (" yes", " no")}
    want = {c: 1 + int((row > row[t]).sum()) for c, t in target.items()}
    k = min(want.values())  # just deep enough for the likelier label alone
    (ranked,) = backend.run([ScoreNext(prompt, (" yes", " no"), top=k)])
    assert ranked.logprobs == pytest.approx(full.logprobs, abs=1e-5)
    assert ranked.ranks == {c: r if r <= k else None for c, r in want.items()}
    (deep,) = backend.run([ScoreNext(prompt, (" yes", " no"), top=max(want.values()))])
    assert deep.ranks == want


def _guard_on_server(top: dict, tmp_path, **options):
    from localeval.backends.openai_compat import OpenAIBackend

    with ScriptedServer(lambda path, body: top_logprobs_reply(top)) as server:
        backend = OpenAIBackend("m", base_url=server.url, max_retries=0)
        # the hand-written template: a completions reply (the default renders on chat)
        guard = get_guard("llamaguard3", template="hf", **options)
        (verdict,) = guard.classify([Conversation("p")], Direct(backend))
    return verdict


def test_a_server_ranks_the_labels_by_its_top_log_probs(tmp_path):
    """The server's top list, ranked by value: "safe" is third behind a newline, so the top 2
    hold "unsafe" alone and the score is exactly 1.0; ``full`` renormalises both."""
    top = {"safe": -2.3, "unsafe": -0.2, "\n": -1.9}
    assert _guard_on_server(top, tmp_path).score == 1.0
    full = _guard_on_server(top, tmp_path, label_scores="full").score
    assert full == pytest.approx(1 / (1 + math.exp(-2.1)), abs=1e-9)  # 0.890903
    short = _guard_on_server({"unsafe": -0.2}, tmp_path)  # one entry cannot say who is second
    assert short.score is None and "fewer than the 2 the guard reads" in short.error


def test_config_records_the_rule_and_an_older_folder_is_another_run(tmp_path):
    from offline_runs import safeguard_run

    folder = tmp_path / "run"
    safeguard_run(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert (config["label_scores"], config["guard"]["label_top"]) == ("top-k", 2)
    del config["label_scores"]  # what a run made before issue 34 item 2 recorded
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(LocalevalError, match="label_scores: None -> 'top-k'"):
        safeguard_run(folder)


class _Untrained(Backend):
    """A guard model whose labels rank far below the top k (a small or random model's do)."""

    identity = {"backend": "untrained", "model": "untrained"}

    def run(self, requests, progress=None):
        return [NextLogprobs(logprobs={c: -20.0 - i for i, c in enumerate(r.candidates)},
                             ranks=None if r.top is None else dict.fromkeys(r.candidates))
                for r in requests]


def test_labels_outside_the_top_k_name_the_way_out(tmp_path):
    """Issue 52 item 1: every sample fails with no_verdict on a random model; the warning and
    the exit-3 line say where the labels ranked and name label_scores=full."""
    from offline_runs import safeguard_run

    from localeval.cli.run_options import TooManyFailures, check_failures

    results = safeguard_run(tmp_path / "top", model=_Untrained(), limit=2).results
    assert results["n_failed"] == results["n_samples"] > 0
    (warning,) = [w for w in results["warnings"] if "guard samples failed" in w]
    want = (f"{results['n_samples']} samples had no label among the top 2 log-probs at the "
            "verdict position")
    assert want in warning and "--guard-option label_scores=full" in warning
    with pytest.raises(TooManyFailures, match="label_scores=full") as failed:
        check_failures(results, 0.0)
    assert want in str(failed.value) and "\n" not in str(failed.value)
    # issue 49 item 1: a first-label guard finds no labelled position on it either, so the
    # way out reads the first position too
    assert "label_scores=full --guard-option verdict_position=fixed" in warning
    full = safeguard_run(tmp_path / "full", model=_Untrained(), limit=2,
                         guard_options={"label_scores": "full",
                                        "verdict_position": "fixed"}).results
    assert full["n_failed"] == 0 and full["failure_advice"] is None

    class Served(_Untrained):
        identity = {"backend": "openai", "model": "untrained"}

    served = safeguard_run(tmp_path / "served", model=Served(), limit=1).results
    assert served["failure_advice"].endswith("(a server's, with --top-logprobs as large as the "
                                             "vocabulary and its --max-logprobs allowing it)")
    assert "--top-logprobs" not in results["failure_advice"]


def test_failures_of_another_kind_get_no_label_advice(tmp_path):
    from offline_runs import safeguard_run

    class Down(_Untrained):
        def run(self, requests, progress=None):
            return [Failed(Unclassified("connection refused")) for _ in requests]

    results = safeguard_run(tmp_path / "run", model=Down(), limit=2).results
    assert results["n_failed"] == results["n_samples"] > 0
    assert results["failure_advice"] is None
    assert not any("label_scores" in w for w in results["warnings"])


@pytest.mark.parametrize("guard,options", [("shieldgemma", {"reading": "parallax"}),
                                           ("polyguard", {"reading": "answer"})])
def test_the_way_out_is_one_the_guards_reading_takes(guard, options, tmp_path):
    """A reading that refuses ``label_scores=full`` (Parallax-AI's, PolyGuard's answer
    reading) is never advised it: the advice widens its top k instead, which it takes."""
    from offline_runs import safeguard_run

    from localeval.guards import get_guard

    results = safeguard_run(tmp_path / guard, model=_Untrained(), limit=1, guard=guard,
                            guard_options=options).results
    advice = results["failure_advice"]
    assert advice is not None and "label_scores=full" not in advice.replace(
        "(label_scores=full is not an option of this reading)", "")
    widened = advice.split("--guard-option ", 1)[1].split(" ", 1)[0]
    assert widened.startswith("label_scores=top-")
    get_guard(guard, **options, label_scores=widened.split("=", 1)[1])  # taken, not refused
    with pytest.raises(LocalevalError, match="label_scores=full"):
        get_guard(guard, **options, label_scores="full")
