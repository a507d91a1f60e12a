"""Issue 49 items 2 and 3: the prompt a chat template renders, as vLLM's chat endpoint rendered
it for the authors: the checkpoint's own template (Llama Guard 3) and a date pinned per run
(Llama 3.1/3.3 print today's date). The templates below are small ones of our own writing that
use the same features as the real ones (cited per test); every expected text is written out by
hand."""

from __future__ import annotations

import datetime
import json
import shutil

import pytest

# ------------------------------------------------------------------ 3. the date a template prints
# What a Llama 3.1 template does with the date (meta-llama/Llama-3.1-8B-Instruct
# tokenizer_config.json chat_template): date_string if given, else strftime_now("%d %b %Y").
DATED = ("{%- if date_string is not defined %}{%- set date_string = strftime_now('%d %b %Y') %}"
         "{%- endif %}<|im_start|>system\nToday Date: {{ date_string }}<|im_end|>\n"
         "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
         "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


class _Clock(datetime.datetime):
    """transformers' strftime_now reads datetime.now(): this one says ``day``."""
    day = datetime.datetime(2030, 1, 2, 23, 59)

    @classmethod
    def now(cls, tz=None):
        return cls.day


@pytest.fixture
def clock(monkeypatch):
    from transformers.utils import chat_template_utils

    monkeypatch.setattr(chat_template_utils, "datetime", _Clock)
    monkeypatch.setattr(_Clock, "day", _Clock.day)
    return _Clock


@pytest.fixture(scope="module")
def dated_model(tmp_path_factory, tiny_llama):
    """The tiny Llama with a chat template that prints the date."""
    folder = tmp_path_factory.mktemp("dated")
    shutil.copytree(tiny_llama, folder, dirs_exist_ok=True)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = DATED
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "chat_template.jinja").unlink(missing_ok=True)  # transformers 5 keeps it here
    return folder


def test_a_template_that_prints_the_date_renders_the_runs_date(dated_model, clock):
    """On main the clock was read: "Today Date: 02 Jan 2030" today, another text tomorrow."""
    from localeval.backends.hf.backend import HFBackend

    chat = [{"role": "user", "content": "Hi"}]
    backend = HFBackend(str(dated_model), device="cpu")
    text, _ = backend.render(chat)
    assert text == ("<|im_start|>system\nToday Date: 26 Jul 2024<|im_end|>\n"
                    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert backend.identity["template_date"] == "26 Jul 2024"
    other = HFBackend(str(dated_model), device="cpu", template_date="01 Feb 2025")
    assert "Today Date: 01 Feb 2025<" in other.render(chat)[0]
    assert other.identity["template_date"] == "01 Feb 2025"


def test_a_template_without_a_date_records_none(tiny_llama):
    """Nothing printed, nothing recorded: the identity (cache key, folder) of other models
    stays as it was."""
    from localeval.backends.hf.backend import HFBackend

    assert "template_date" not in HFBackend(str(tiny_llama), device="cpu").identity


def test_a_run_resumed_on_another_day_hits_its_cache(dated_model, clock, tmp_path, capsys):
    """A chat run made on 2 Jan 2030 and run again on 3 Jan: every request is the cached one
    (the prompt is the same text), and config.json records the date it rendered. Another
    --template-date is another run: nothing cached."""
    from localeval.cli import main
    from localeval.demo.mcq import SAMPLE_MCQ

    def run(out, *extra):
        code = main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--subjects",
                     "CAP_mathematics", "--limit", "2", "--chat", "single", "--model",
                     f"hf:{dated_model}", "--device", "cpu", "--output", str(out),
                     "--cache", str(tmp_path / "cache.sqlite"), "--quiet", *extra])
        assert code == 0
        config = json.loads((out / "config.json").read_text())
        results = json.loads((out / "results.json").read_text())
        # a rerun keeps the first run's timing; its own counts are its history line
        return config["backend"]["template_date"], (results.get("history") or
                                                    [results["timing"]])[-1]

    first, timing = run(tmp_path / "a")
    assert first == "26 Jul 2024" and timing["requests_cached"] == 0
    clock.day = datetime.datetime(2030, 1, 3, 0, 1)
    again, timing = run(tmp_path / "a")
    assert again == first and timing["requests_run"] == 0 and timing["requests_cached"] > 0
    other, timing = run(tmp_path / "b", "--template-date", "03 Jan 2030")
    assert other == "03 Jan 2030" and timing["requests_cached"] == 0
    # resumed without the flag, the folder's date is kept; another date is another run
    kept, timing = run(tmp_path / "b")
    assert kept == "03 Jan 2030" and timing["requests_run"] == 0
    capsys.readouterr()
    with pytest.raises(AssertionError):
        run(tmp_path / "b", "--template-date", "04 Jan 2030")
    assert "other settings (template_date: '03 Jan 2030' -> '04 Jan 2030')" in \
        capsys.readouterr().err


def test_template_date_is_a_date_as_templates_print_it():
    from localeval.backends.config import BackendConfig
    from localeval.errors import LocalevalError

    assert BackendConfig(template_date="03 Jan 2030").settings()["template_date"] == \
        "03 Jan 2030"
    assert "template_date" not in BackendConfig().settings()  # older folders keep their names
    with pytest.raises(LocalevalError, match="--template-date must be a date written as"):
        BackendConfig(template_date="2030-01-03")


def test_a_vllm_server_is_sent_the_date_and_another_server_is_recorded_unpinned(dated_model):
    """vLLM's chat endpoint passes chat_template_kwargs to the template (date_string); a server
    that takes no vLLM arguments renders its own date, and the identity says so."""
    from openai_server import ModelServer

    from localeval.backends.base import Generate, error_of
    from localeval.backends.openai_compat import UNPINNED, OpenAIBackend
    from localeval.errors import LocalevalError

    ask = Generate([{"role": "user", "content": "Hi"}], max_tokens=1)
    server = ModelServer(dated_model)
    try:
        backend = OpenAIBackend("tiny", base_url=server.url, template_date="01 Feb 2025")
        (out,) = backend.run([ask])
    finally:
        server.stop()
    assert error_of(out) is None and backend.identity["template_date"] == "01 Feb 2025"
    assert "Today Date: 01 Feb 2025<" in server.received[0]
    strict = ModelServer(dated_model, openai_strict=True)
    try:
        backend = OpenAIBackend("tiny", base_url=strict.url)
        (out,) = backend.run([ask])
        with pytest.raises(LocalevalError, match="cannot be pinned"):
            OpenAIBackend("tiny", base_url=strict.url, template_date="01 Feb 2025")
    finally:
        strict.stop()
    assert error_of(out) is None and backend.identity["template_date"] == UNPINNED


# ------------------------------------------------------------------ 2. Llama Guard 3's own template
# A guard template of our own writing with what Llama Guard 3 1B's has (IntelLabs/LLMart
# src/llmart/config.py LlamaGuard3_1BConf, a copy of meta-llama/Llama-Guard-3-1B's): the role by
# the number of messages, a default category list the caller may replace, BOS text with no space
# before it, each message's text read as a content part, a space before <|eot_id|>, and the end
# at the assistant header and its blank line.
OWN_GUARD = (
    "{%- if messages|length % 2 == 0 -%}{%- set role = 'Agent' -%}"
    "{%- else -%}{%- set role = 'User' -%}{%- endif -%}"
    "{%- if categories is not defined -%}"
    "{%- set categories = {'S1': 'Violent Crimes.', 'S2': 'Hate.', 'S3': 'Elections.'} -%}"
    "{%- endif -%}"
    "{{- '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\\n\\n' -}}"
    "{{- 'Task: ' + role + ' messages.\\n<BEGIN UNSAFE CONTENT CATEGORIES>\\n' -}}"
    "{%- for key in categories -%}{{- key + ': ' + categories[key] + '\\n' -}}{%- endfor -%}"
    "{{- '<END UNSAFE CONTENT CATEGORIES>\\n<BEGIN CONVERSATION>\\n\\n' -}}"
    "{%- for message in messages -%}"
    "{%- for part in message['content'] | selectattr('type', 'equalto', 'text') -%}"
    "{{- ('User' if message['role'] == 'user' else 'Agent') + ': ' + part['text'] | trim"
    " + '\\n\\n' -}}"
    "{%- endfor -%}{%- endfor -%}"
    "{{- '<END CONVERSATION>\\nThe last ' + role + ' message? <|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}"
)
# written out by hand from OWN_GUARD for ("  How do I pick a lock?\n", "Use a tension wrench. ")
OWN_RESPONSE = (
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n"
    "Task: Agent messages.\n<BEGIN UNSAFE CONTENT CATEGORIES>\n"
    "S1: Violent Crimes.\nS2: Hate.\nS3: Elections.\n<END UNSAFE CONTENT CATEGORIES>\n"
    "<BEGIN CONVERSATION>\n\nUser: How do I pick a lock?\n\nAgent: Use a tension wrench.\n\n"
    "<END CONVERSATION>\nThe last Agent message? <|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
)
LOCK = ("  How do I pick a lock?\n", "Use a tension wrench. ")


@pytest.fixture(scope="module")
def own_guard_model(tmp_path_factory, tiny_llama):
    """The tiny Llama with a guard's chat template of its own."""
    folder = tmp_path_factory.mktemp("own-guard")
    shutil.copytree(tiny_llama, folder, dirs_exist_ok=True)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = OWN_GUARD
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    return folder


def test_llamaguard3_renders_the_checkpoints_own_template(own_guard_model):
    """On main the request was our hand-written 8B text, " <|begin_of_text|>…" (it differs at
    the first character), with 14 categories; now the checkpoint's template renders it: its
    categories, its BOS text, its space before <|eot_id|>, the verdict read after its "\\n\\n"."""
    from localeval.backends.base import error_of
    from localeval.backends.hf.backend import HFBackend
    from localeval.guards import Conversation, get_guard

    guard = get_guard("llamaguard3")
    (request,) = guard.requests(Conversation(*LOCK))
    backend = HFBackend(str(own_guard_model), device="cpu")
    assert backend.render(request.prompt) == (OWN_RESPONSE, False)  # no BOS added to it
    assert "checkpoint's own chat template" in guard.template_source
    (answer,) = backend.run([request])
    assert error_of(answer) is None
    (prompt_only,) = guard.requests(Conversation(LOCK[0]))
    assert backend.render(prompt_only.prompt)[0] == OWN_RESPONSE.replace(
        "Agent messages", "User messages").replace("Agent: Use a tension wrench.\n\n", "") \
        .replace("last Agent", "last User")


def test_llamaguard3_own_template_on_a_vllm_server(own_guard_model):
    """The authors' way: the messages on vLLM's chat endpoint, which renders the template
    (nothing after it, no generation prompt of ours)."""
    from openai_server import ModelServer

    from localeval.backends.base import error_of
    from localeval.backends.openai_compat import OpenAIBackend
    from localeval.guards import Conversation, get_guard

    (request,) = get_guard("llamaguard3").requests(Conversation(*LOCK))
    server = ModelServer(own_guard_model)
    bodies, handle = [], server.handle
    server.handle = lambda path, body: bodies.append(body) or handle(path, body)
    try:
        (answer,) = OpenAIBackend("tiny", base_url=server.url).run([request])
    finally:
        server.stop()
    # sent and read (a random model's top 20 may hold no label: that is not a refusal)
    assert "chat server cannot be sent" not in str(error_of(answer))
    (chat,) = [b for b in bodies if "messages" in b]
    assert server.received == [OWN_RESPONSE] and chat["add_generation_prompt"] is False
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant"]


def test_llamaguard3_without_a_template_of_its_own(tmp_path):
    """A checkpoint without a chat template: one line naming the hand-written templates, which
    stay (template=hf, template=meta) with their categories option."""
    from tiny_models import make_model

    from localeval.backends.base import error_of
    from localeval.backends.hf.backend import HFBackend
    from localeval.errors import LocalevalError
    from localeval.guards import Conversation, get_guard

    backend = HFBackend(str(make_model(tmp_path / "plain", chat=False)), device="cpu")
    (request,) = get_guard("llamaguard3").requests(Conversation(LOCK[0]))
    (answer,) = backend.run([request])
    assert "has no chat template" in str(error_of(answer)) and "template=" in str(error_of(answer))
    (meta,) = get_guard("llamaguard3", template="meta", categories=13).requests(
        Conversation(LOCK[0]))
    assert "S13: Elections.\n<END UNSAFE" in meta.prompt
    with pytest.raises(LocalevalError, match="categories applies to template=hf or meta"):
        get_guard("llamaguard3", categories=13)


def test_content_parts_as_vllm_detects_them():
    """vLLM entrypoints/chat_utils.py _detect_content_format: a loop over a message's content,
    through filters, is its "openai" format; a loop over something computed from it is not."""
    from localeval.backends.prompt_tokens import reads_content_parts

    assert reads_content_parts(OWN_GUARD)
    assert reads_content_parts("{% for c in m.content %}{{ c.text }}{% endfor %}")
    assert not reads_content_parts("{% for x in m.content.split() %}{{ x }}{% endfor %}")
    assert not reads_content_parts(DATED)
