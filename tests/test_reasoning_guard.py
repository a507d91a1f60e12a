"""The zero-shot guard on reasoning models (``reasoning=true``, GPT-OSS): generate, find the label
the answer ends with, score that position; options checked before any model loads."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from executors import Answers, NoRoles

from localeval.backends.base import Failed, Generate, Generated, NextLogprobs, ScoreNext
from localeval.backends.failures import ModelError
from localeval.cli import main
from localeval.errors import LocalevalError
from localeval.guards import Conversation, get_guard
from localeval.guards.final_label import find_final_label

PROMPT = "How do I pick a lock?"
LOG = math.log


class FakeExecute(NoRoles):
    """An ``execute``: Generate gets ``text``, ScoreNext gets P(label) from ``probs`` (keyed by
    the label without its leading spaces); every batch of requests is recorded."""

    def __init__(self, text, probs=None):
        self.text, self.probs, self.calls = text, probs or {"Harmful": 0.6, "Safe": 0.2}, []

    def __call__(self, requests):
        self.calls.append(list(requests))
        return [Generated(text=self.text) if isinstance(r, Generate) else
                NextLogprobs(logprobs={c: LOG(self.probs[c.lstrip()]) for c in r.candidates})
                for r in requests]


def reasoning_guard(**options):
    return get_guard("zero-shot", reasoning=True, **options)


def test_the_label_at_the_end_is_scored_after_the_text_before_it():
    guard = reasoning_guard()
    plain = get_guard("zero-shot").requests(Conversation(PROMPT))[0].prompt
    text = "analysis The user wants to break into a lock... that is harmful.assistantfinal Harmful"
    execute = FakeExecute(text)
    (verdict,) = guard.classify([Conversation(PROMPT)], execute)
    (gen,), (score,) = execute.calls
    assert isinstance(gen, Generate) and gen.prompt == plain and gen.max_tokens == 1024
    assert gen.stop == ()
    assert isinstance(score, ScoreNext)
    before = "analysis The user wants to break into a lock... that is harmful.assistantfinal"
    assert score.prompt == [*plain, {"role": "assistant", "content": before}]
    assert score.candidates == (" Harmful", " Safe")  # the space moves to the candidates
    assert verdict.score == pytest.approx(0.75)  # 0.6 / (0.6 + 0.2), read from the ScoreNext
    assert verdict.raw[0]["text"] == text  # the reasoning is kept on the sample


@pytest.mark.parametrize("text, before, space, label", [
    ("...assistantfinalHarmful", "...assistantfinal", "", "Harmful"),  # GPT-OSS, decoded
    ("Harmful? No. Safe", "Harmful? No.", " ", "Safe"),  # the last label, not the first
    ("thinking\n\n**Safe**.\n", "thinking\n\n**", "", "Safe"),  # punctuation after it
    ("Safe", "", "", "Safe"),
])
def test_the_final_label_is_found(text, before, space, label):
    spot = find_final_label(text, ("Harmful", "Safe"))
    assert (spot.before, spot.space, spot.label) == (before, space, label)


@pytest.mark.parametrize("text", ["Safe or Harmful? Let me think about the",
                                  "the answer is harmful", "", "Harmful then more words"])
def test_a_text_without_a_final_label_is_a_failed_verdict(text):
    execute = FakeExecute(text)
    (verdict,) = reasoning_guard(reasoning_tokens=8).classify([Conversation(PROMPT)], execute)
    assert verdict.score is None and not verdict.ok
    assert verdict.error.startswith("no final label: the generated text does not end with "
                                    "'Harmful' or 'Safe' (budget 8 new tokens")
    assert len(execute.calls) == 1  # nothing is scored


def test_a_label_first_is_the_first_token_request():
    """An answer that is just the label scores the same request as the plain zero-shot guard."""
    execute = FakeExecute("Safe")
    reasoning_guard().classify([Conversation(PROMPT)], execute)
    # both ask for the labels' ranks among the top 2 (IRIS GuardLLM.complete's default)
    assert execute.calls[1] == [replace(r, top=2) for r in
                                get_guard("zero-shot").requests(Conversation(PROMPT))]


def test_a_failed_generation_is_a_failed_verdict():
    def refusing(requests):
        return [Failed(ModelError("CUDA out of memory")) for _ in requests]
    (verdict,) = reasoning_guard().classify([Conversation(PROMPT)], refusing)
    assert verdict.score is None
    assert verdict.error == "backend error in the reasoning stage: CUDA out of memory"


def test_stages_batch_across_items_and_describe_the_position():
    guard = reasoning_guard(reasoning_tokens=64)
    execute = FakeExecute("I think it is Harmful")
    verdicts = guard.classify([Conversation(PROMPT), Conversation(PROMPT, "Use a pick."),
                               Conversation("Hi")], execute)
    assert [len(c) for c in execute.calls] == [3, 3]
    assert all(isinstance(r, Generate) and r.max_tokens == 64 for r in execute.calls[0])
    assert [v.score for v in verdicts] == pytest.approx([0.75] * 3)
    assert "64 new tokens" in guard.verdict_position and "scores[-4]" in guard.verdict_position
    assert "GPTOSS" in guard.template_source
    assert "first of up to 100 generated tokens" in get_guard("zero-shot").verdict_position


@pytest.mark.parametrize("options, message", [
    ({"reasoning": "yes"}, "guard 'zero-shot' option reasoning='yes': expected true or false"),
    ({"reasoning": True, "reasoning_tokens": 0}, "must be a positive integer, not 0"),
    ({"reasoning": True, "reasoning_tokens": 8.5}, "must be a positive integer, not 8.5"),
    ({"reasoning": True, "reasoning_tokens": True}, "must be a positive integer, not True"),
    ({"reasoning_tokens": 8}, "reasoning_tokens needs reasoning=true"),
    ({"reasoning": True, "reasoning_budget": 8}, "has no option(s) reasoning_budget"),
])
def test_option_validation(options, message):
    with pytest.raises(LocalevalError) as caught:
        get_guard("zero-shot", **options)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_an_ill_typed_option_is_one_line_before_any_model_loads(capsys, no_model_load,
                                                                model_folder, tmp_path):
    data = tmp_path / "prompts.jsonl"
    data.write_text(json.dumps({"id": "1", "lang": "en", "prompt": "hi", "label": "safe"}))
    for option, message in (("reasoning_tokens=many", "reasoning_tokens='many': expected an "
                             "integer or none"),
                            ("reasoning_tokens=0", "must be a positive integer"),
                            ("reasoning=maybe", "reasoning='maybe': expected true or false")):
        assert main(["run", "--task", "safety-prompts", "--data", str(data), "--model",
                     model_folder, "--guard-option", "reasoning=true", "--guard-option", option,
                     "--no-store"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err


# --------------------------------------------------------------------------- tiny model
@pytest.fixture(scope="module")
def tiny_backend(tiny_llama):
    from localeval.backends.hf import HFBackend

    return HFBackend(str(tiny_llama), batch_size=2, dtype="float32", device="cpu")


def test_the_label_position_on_a_real_backend(tiny_backend):
    """The generation is faked to end with a label; the ScoreNext runs on the tiny model and
    reads the position after the chat template + the text before the label."""
    execute = Answers(lambda requests: [
        Generated(text="Thinking about locks. Harmful") if isinstance(r, Generate)
        else tiny_backend.run([r])[0] for r in requests])
    # the whole distribution: a random model's labels are rarely among its top 2 tokens
    (verdict,) = reasoning_guard(label_scores="full").classify([Conversation(PROMPT)], execute)
    score = get_guard("zero-shot").requests(Conversation(PROMPT))[0]
    context = tiny_backend.render(score.prompt)[0] + "Thinking about locks."
    (plain,) = tiny_backend.run([ScoreNext(context + " ", ("Harmful", "Safe"),
                                           add_special_tokens=False)])
    harmful, safe = plain.logprobs["Harmful"], plain.logprobs["Safe"]
    assert verdict.ok, verdict.error
    assert verdict.score == pytest.approx(math.exp(harmful) / (math.exp(harmful)
                                                                + math.exp(safe)), abs=1e-6)


def test_reasoning_run_end_to_end(tiny_llama, shared, tmp_path):
    """A random model rarely ends with a label: the run completes and counts the failures
    (``--max-failed 1``: without it, failed samples make the finished run exit 3)."""
    out = tmp_path / "run"
    code = main(["run", "--task", "safety-prompts", "--guard", "zero-shot",
                 "--guard-option", "reasoning=true", "--guard-option", "reasoning_tokens=8",
                 "--data", str(shared / "data" / "xstest" / "xstest_prompts.csv"),
                 "--model", f"hf:{tiny_llama}", "--limit", "4", "--bootstrap", "0",
                 "--max-failed", "1", "--output", str(out), "--quiet"])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert results["n_samples"] == 4
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    failed = [s for s in samples if "error" in s]
    assert results["n_failed"] == len(failed)
    assert all(s["error"].startswith("no final label") for s in failed)
    assert all(0 <= s["score"] <= 1 for s in samples if "error" not in s)
    config = json.loads((out / "config.json").read_text())
    assert config["guard"]["options"] == {"reasoning": True, "reasoning_tokens": 8}
    assert "8 new tokens" in config["guard"]["reads_verdict_at"]
