"""localeval and lm-evaluation-harness on the same tiny model and CMMLU subject, 5-shot
likelihood in lm-eval's format: identical predicted letters, log-probs within 1e-4."""

import pytest
from lm_eval_peer import write_task_configs
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
        task_manager=TaskManager(include_path=str(tmp_path / "tasks")),
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
