"""Run lm-evaluation-harness on local CMMLU files, with its own cmmlu task format.

lm-eval's built-in ``cmmlu_<subject>`` task reads ``haonan-li/cmmlu`` from the Hub; with no
network we write the same task config (its ``_default_template_yaml`` and description, version
0.4.13) pointing at the local CSV files instead, and read its logged samples back by our
sample ids (``read_samples``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from localeval.data.subject_tables import CMMLU_SUBJECTS

TASK_YAML = """task: local_cmmlu_{subject}
dataset_path: csv
dataset_kwargs:
  data_files:
    dev: {data}/dev/{subject}.csv
    test: {data}/test/{subject}.csv
test_split: test
fewshot_split: dev
fewshot_config:
  sampler: first_n
output_type: multiple_choice
description: "以下是关于{name}的单项选择题，请直接给出正确答案的选项。\\n\\n"
doc_to_text: "{{{{Question.strip()}}}}\\nA. {{{{A}}}}\\nB. {{{{B}}}}\\nC. {{{{C}}}}\\nD. {{{{D}}}}\\n答案："
doc_to_choice: ["A", "B", "C", "D"]
doc_to_target: "{{{{['A', 'B', 'C', 'D'].index(Answer)}}}}"
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""


def write_task_configs(folder: Path, data: Path, subjects: list[str]) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for s in subjects:
        text = TASK_YAML.format(subject=s, data=data.resolve(), name=CMMLU_SUBJECTS[s][0])
        (folder / f"local_cmmlu_{s}.yaml").write_text(text, encoding="utf-8")
    return [f"local_cmmlu_{s}" for s in subjects]


# lm-eval's tmmluplus format (_tmmluplus_template_yaml and tmmluplus_<subject>.yaml, 0.4.13),
# reading a local dev.jsonl + test.jsonl in TMMLU+'s columns (question, A-D, answer).
# A task's data from a local folder's dev.jsonl and test.jsonl, the shots taken from dev in order
# (for str.format: ``{data}`` is the folder). The generation benchmark's task uses it too.
LOCAL_JSONL = """dataset_path: json
dataset_kwargs:
  data_files:
    dev: {data}/dev.jsonl
    test: {data}/test.jsonl
test_split: test
fewshot_split: dev
fewshot_config:
  sampler: first_n
"""

TMMLUPLUS_YAML = "task: local_tmmluplus_{subject}\n" + LOCAL_JSONL + """output_type: multiple_choice
description: "以下為{name}的單選題，請提供正確答案的選項。\\n\\n"
doc_to_text: "{{{{question.strip()}}}}\\nA. {{{{A}}}}\\nB. {{{{B}}}}\\nC. {{{{C}}}}\\nD. {{{{D}}}}\\nAnswer:"
doc_to_choice: ["A", "B", "C", "D"]
doc_to_target: "{{{{['A', 'B', 'C', 'D'].index(answer)}}}}"
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""


def write_tmmluplus_config(folder: Path, data: Path, subject: str, name: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    text = TMMLUPLUS_YAML.format(subject=subject, data=data.resolve(), name=name)
    (folder / f"local_tmmluplus_{subject}.yaml").write_text(text, encoding="utf-8")
    return f"local_tmmluplus_{subject}"


def read_samples(folder: Path) -> dict[str, list[float]]:
    """lm-eval's ``--log_samples`` files of the ``local_cmmlu_*`` tasks under ``folder``, read
    back: each question's option log-likelihoods (A-D) by localeval's sample id, ``subject/row``
    with the row index of the CSV's unnamed first column. lm-eval writes the log-likelihoods as
    strings; a question met twice (the files of two runs) is an error, not a silent pick."""
    out: dict[str, list[float]] = {}
    for f in sorted(folder.rglob("samples_local_cmmlu_*.jsonl")):
        subject = re.fullmatch(r"samples_local_cmmlu_(.+?)_\d{4}-\d\d-\d\dT.+\.jsonl", f.name)
        if subject is None:
            raise ValueError(f"{f}: not an lm-eval samples file name")
        for line in f.read_text(encoding="utf-8").splitlines():
            s = json.loads(line)
            # datasets' CSV reader names the header's empty first column "Unnamed: 0"
            key = f"{subject[1]}/{s['doc'].get('Unnamed: 0', s['doc'].get(''))}"
            if key in out:
                raise ValueError(f"{f}: question {key} is in more than one samples file")
            out[key] = [float(r[0][0]) for r in s["resps"]]
    return out
