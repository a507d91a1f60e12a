"""localeval and lm-evaluation-harness on the same tiny model, 5-shot likelihood in lm-eval's
formats (CMMLU, and TMMLU+ on its real sample): identical predicted letters, log-probs within
1e-4."""

import pytest
from lm_eval_peer import write_task_configs, write_tmmluplus_config
from tiny_models import SHARED, make_model

lm_eval = pytest.importorskip("lm_eval")
pytestmark = pytest.mark.slow

CMMLU = SHARED / "data" / "cmmlu"
SUBJECT = "arts"  # 160 questions


def test_same_letters_and_logprobs_as_lm_eval(tmp_path):
    from lm_eval.evaluator import simple_evaluate
    from lm_eval.tasks import TaskManager

    from localeval import evaluate

    model = make_model(tmp_path / "model", arch="llama", layers=2, chat=False)
    tasks = write_task_configs(tmp_path / "tasks", CMMLU, [SUBJECT])
    theirs = simple_evaluate(
        model="hf",
        model_args=f"pretrained={model},dtype=float32",
        tasks=tasks,
        num_fewshot=5,
        batch_size=8,
        device="cpu",
        log_samples=True,
        # our task's config only: indexing lm-eval's ~14,700 built-in tasks (none of them
        # used, ours includes none) cost ~8 s of CPU per TaskManager
        task_manager=TaskManager(include_path=str(tmp_path / "tasks"), include_defaults=False),
    )
    peer = {}
    for s in theirs["samples"][tasks[0]]:
        logprobs = [r[0][0] for r in s["resps"]]
        peer[s["doc"]["Question"]] = logprobs

    ours = evaluate(task="cmmlu", model=f"hf:{model}", data=CMMLU, subjects=[SUBJECT], shots=5,
                    method="likelihood", prompt_style="lm-eval", quiet=True,
                    backend_options={"dtype": "float32", "device": "cpu"})
    assert len(ours.samples) == len(peer) == 160
    worst = 0.0
    questions = {s["id"]: s for s in ours.samples}
    import csv

    with open(CMMLU / "test" / f"{SUBJECT}.csv", encoding="utf-8") as f:
        rows = {f"{SUBJECT}/{r['']}": r["Question"] for r in csv.DictReader(f)}
    for sample_id, sample in questions.items():
        theirs_lp = peer[rows[sample_id]]
        mine = [sample["logprobs"][letter] for letter in "ABCD"]
        worst = max(worst, *(abs(a - b) for a, b in zip(mine, theirs_lp)))
        assert "ABCD"[theirs_lp.index(max(theirs_lp))] == sample["pred"], sample_id
    print(f"lm-eval parity: {len(peer)} questions, identical letters, max |Δ log-prob| {worst:.2e}")
    assert worst < 1e-4
    # lm-eval's accuracy equals ours
    assert abs(theirs["results"][tasks[0]]["acc,none"] - ours.results["metrics"]["micro"]["acc"]) < 1e-12


@pytest.mark.parametrize("chat", ["none", "multi", "single"])
def test_tmmluplus_format_matches_lm_eval(tmp_path, chat):
    """The 20 real TMMLU+ questions: the first 5 as the few-shot pool, 15 scored. With a chat
    template (lm-eval's --apply_chat_template, shots as turns or, with --fewshot_as_multiturn
    off, in one user turn), lm-eval puts the description in the system message and scores "A",
    not " A". It also moves the context's trailing newline (after the assistant header) into
    every candidate, so its log-probs include the same log P("\\n") for all four letters: with a
    chat template we compare log-probs up to that shared term (docs/fidelity.md)."""
    import json

    from lm_eval.evaluator import simple_evaluate
    from lm_eval.tasks import TaskManager

    from localeval import evaluate

    rows = (SHARED / "data" / "tmmluplus-sample" / "test.jsonl").read_text().splitlines()
    data = tmp_path / "economics"  # the sample's questions are economics
    data.mkdir()
    (data / "dev.jsonl").write_text("\n".join(rows[:5]) + "\n", encoding="utf-8")
    (data / "test.jsonl").write_text("\n".join(rows[5:]) + "\n", encoding="utf-8")
    model = make_model(tmp_path / "model", arch="llama", layers=2, chat=chat != "none")
    task = write_tmmluplus_config(tmp_path / "tasks", data, "economics", "經濟學")
    theirs = simple_evaluate(
        model="hf", model_args=f"pretrained={model},dtype=float32", tasks=[task],
        num_fewshot=5, batch_size=4, device="cpu", log_samples=True,
        apply_chat_template=chat != "none", fewshot_as_multiturn=chat == "multi",
        task_manager=TaskManager(include_path=str(tmp_path / "tasks"),
                                 include_defaults=False))  # as above: our task only
    peer = {s["doc"]["question"]: [r[0][0] for r in s["resps"]]
            for s in theirs["samples"][task]}
    ours = evaluate(task="tmmluplus", model=f"hf:{model}", data=data, shots=5,
                    method="likelihood", prompt_style="lm-eval", quiet=True,
                    chat=chat,
                    backend_options={"dtype": "float32", "device": "cpu"})
    assert len(ours.samples) == len(peer) == 15
    questions = [json.loads(r)["question"] for r in rows[5:]]
    worst = 0.0
    for sample, question in zip(ours.samples, questions, strict=True):
        theirs_lp = peer[question]
        mine = [sample["logprobs"][letter] for letter in "ABCD"]
        diffs = [b - a for a, b in zip(mine, theirs_lp)]
        shared = diffs[0] if chat != "none" else 0.0  # lm-eval's log P("\\n"), in every letter
        assert shared <= 0
        worst = max(worst, *(abs(d - shared) for d in diffs))
        assert "ABCD"[theirs_lp.index(max(theirs_lp))] == sample["pred"], sample["id"]
    print(f"lm-eval tmmluplus parity (chat {chat}): 15 questions, identical "
          f"letters, max |Δ log-prob| {worst:.2e}")
    assert worst < 1e-4
