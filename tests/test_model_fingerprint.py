"""A local model's fingerprint (its backend identity, which keys the request cache) covers every
file that changes what the model is asked or answers: weights, configs, tokenizer vocabularies
and its chat template (issue 48 item 3: an edited chat_template.jinja was read from the cache)."""

from __future__ import annotations

import json

import pytest
from tiny_models import make_model

from localeval.backends.hf.backend import _weights_fingerprint
from localeval.cli import main


@pytest.mark.parametrize("name", ["chat_template.jinja", "merges.txt", "vocab.txt",
                                  "tokenizer.tiktoken", "modeling_custom.py", "config.json"])
def test_editing_a_file_the_model_reads_changes_the_fingerprint(tmp_path, name):
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    (tmp_path / name).write_text("before", encoding="utf-8")
    before = _weights_fingerprint(str(tmp_path))
    (tmp_path / name).write_text("after, longer", encoding="utf-8")
    assert _weights_fingerprint(str(tmp_path)) != before


def test_a_note_beside_the_model_does_not(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    before = _weights_fingerprint(str(tmp_path))
    (tmp_path / "README.md").write_text("notes", encoding="utf-8")
    assert _weights_fingerprint(str(tmp_path)) == before


def test_a_rerun_after_the_chat_template_changed_asks_the_model_again(tmp_path, shared):
    """The issue's scenario: a --chat single run, the template edited, the same command into
    another folder with the first run's cache: every answer came from the cache."""
    model = make_model(tmp_path / "model")
    template = model / "chat_template.jinja"
    if not template.exists():  # an older transformers keeps it in tokenizer_config.json
        config = json.loads((model / "tokenizer_config.json").read_text(encoding="utf-8"))
        template.write_text(config.pop("chat_template"), encoding="utf-8")
        (model / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    cache = tmp_path / "cache.sqlite"
    args = ["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
            "arts", "--limit", "2", "--shots", "0", "--chat", "single", "--model", f"hf:{model}",
            "--cache", str(cache), "--quiet", "--no-report", "--no-store"]
    assert main([*args, "--output", str(tmp_path / "first")]) == 0
    template.write_text("{{ 'A system line first.\\n' }}" + template.read_text(encoding="utf-8"),
                        encoding="utf-8")
    assert main([*args, "--output", str(tmp_path / "second")]) == 0
    timing = json.loads((tmp_path / "second" / "results.json").read_text(encoding="utf-8"))
    assert (timing["timing"]["requests_run"], timing["timing"]["requests_cached"]) == (2, 0)
