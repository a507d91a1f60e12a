"""Each backend kind's own options (issue 74): declared in backends/options.py where --help reads
them without importing a backend; every flag and ``--role-option ROLE.KEY`` key of before the
declarations still accepted, with the value it had; a declaration never drifts from its
backend's constructor; the old names ``BackendBase`` and ``Execute`` still import, with a
warning."""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import sys

import pytest

from localeval.backends.config import BackendConfig
from localeval.backends.options import DECLARED
from localeval.backends.registry import BACKENDS, backend_class, check_options, taken_options
from localeval.cli import parser
from localeval.cli.run_options import backend_options, role_options

# Every backend flag before issue 74 (BackendConfig at e978fbe), the text given and the value
# it must become; the --role-option key is the field's name with the same text.
TODAY = {
    "revision": (["--revision", "main"], "main", "main"),
    "model_args": (["--model-args", "trust_remote_code=true,x=3"], "trust_remote_code=true,x=3",
                   {"trust_remote_code": True, "x": 3}),
    "dtype": (["--dtype", "float32"], "float32", "float32"),
    "device": (["--device", "cpu"], "cpu", "cpu"),
    "batch_size": (["--batch-size", "4"], "4", 4),
    "attn": (["--attn", "sdpa"], "sdpa", "sdpa"),
    "padding_side": (["--padding-side", "left"], "left", "left"),
    "prefix_reuse": (["--no-prefix-reuse"], "false", False),
    "base_url": (["--base-url", "http://127.0.0.1:8000/v1"], "http://127.0.0.1:8000/v1",
                 "http://127.0.0.1:8000/v1"),
    "api_key_env": (["--api-key-env", "PATH"], "PATH", "PATH"),  # the name of a set variable
    "concurrency": (["--concurrency", "3"], "3", 3),
    "rate_limit": (["--rate-limit", "2.5"], "2.5", 2.5),
    "timeout": (["--timeout", "30"], "30", 30.0),
    "max_retries": (["--max-retries", "0"], "0", 0),
    "max_reply_mb": (["--max-reply-mb", "8"], "8", 8.0),
    "top_logprobs": (["--top-logprobs", "5"], "5", 5),
    "scoring": (["--scoring", "echo"], "echo", "echo"),
    "batch": (["--batch"], "true", True),
    "batch_deadline": (["--batch-deadline", "2"], "2", 2.0),
    "tokenizer": (["--tokenizer", "gpt2"], "gpt2", "gpt2"),
    "chat_extensions": (["--chat-extensions", "vllm"], "vllm", "vllm"),
    "template_date": (["--template-date", "01 Jan 2025"], "01 Jan 2025", "01 Jan 2025"),
}
# the speed-role options before the declarations (kept out of a run's name and cache keys)
SPEED = {"batch_size", "padding_side", "prefix_reuse", "api_key_env", "concurrency",
         "rate_limit", "timeout", "max_retries", "max_reply_mb", "batch", "batch_deadline"}
RUN = ["run", "--task", "tmlu", "--model", "openai:m"]


def test_the_options_are_those_of_before():
    assert [f.name for f in dataclasses.fields(BackendConfig)] == list(TODAY)
    assert BackendConfig.of_role("speed") == SPEED


@pytest.mark.parametrize("name", list(TODAY))
def test_each_flag_of_before_is_accepted(name):
    argv, _, value = TODAY[name]
    config = backend_options(parser().parse_args([*RUN, *argv]))
    assert getattr(config, name) == value
    assert config.changed() == {name: value}


@pytest.mark.parametrize("name", list(TODAY))
def test_each_role_option_key_of_before_is_accepted(name):
    _, text, value = TODAY[name]
    args = parser().parse_args([*RUN, "--role-option", f"judge.{name}={text}"])
    assert role_options(args) == {"judge": {name: value}}
    assert BackendConfig.of({name: value}).changed() == {name: value}


@pytest.mark.parametrize("name", list(TODAY))
def test_each_option_is_taken_by_a_backend_that_declares_it(name):
    """A set option passes the check of each kind declaring it, and fails that of the others
    (one line naming the flag), as before."""
    config = BackendConfig.of({name: TODAY[name][2]})
    takers = [kind for kind, options in DECLARED.items() if name in options.names()]
    assert takers
    for kind in DECLARED:
        if kind in takers:
            check_options(f"{kind}:x", config)
        else:
            with pytest.raises(Exception, match=f"not an option of the {kind} backend"):
                check_options(f"{kind}:x", config)


@pytest.mark.parametrize("kind", list(BACKENDS))
def test_a_declaration_is_its_backends_own(kind):
    """Each built-in kind declares exactly the config fields its constructor takes, with the
    roles BackendConfig declares (the declarations cannot drift from the backends)."""
    declared = DECLARED[kind]
    cls = backend_class(f"{kind}:x")
    assert cls.Options is declared
    accepted = inspect.signature(cls).parameters
    assert taken_options(f"{kind}:x") == [f.name for f in dataclasses.fields(BackendConfig)
                                          if f.name in accepted]
    assert set(declared.names()) == {n for n in TODAY if n in accepted}
    assert declared.of_role("speed") == SPEED & set(declared.names())
    fields = {f.name: f for f in dataclasses.fields(BackendConfig)}
    for f in dataclasses.fields(declared):  # type: ignore[arg-type]
        assert (f.default, f.metadata) == (fields[f.name].default, fields[f.name].metadata)


def _assert_no_backend_imported(code: str) -> None:
    """``code``, run in a fresh interpreter, prints the localeval.backends modules it loaded:
    none of them is a backend's own module."""
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                       text=True, check=True).stdout.replace("'", '"'))
    modules = {target.split(":")[0] for target in BACKENDS.values()}
    assert not modules & set(loaded), loaded


def test_a_declared_kind_is_checked_without_importing_its_backend():
    code = ("import sys\nfrom localeval.backends.config import BackendConfig\n"
            "from localeval.backends.registry import check_options\n"
            "check_options('openai:m', BackendConfig(top_logprobs=5))\n"
            "check_options('hf:m', BackendConfig(dtype='float32'))\n"
            "print(sorted(m for m in sys.modules if m.startswith('localeval.backends.')))")
    _assert_no_backend_imported(code)


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"]])
def test_help_imports_no_backend(argv):
    code = ("import contextlib, io, sys\nfrom localeval.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out, "
            "contextlib.suppress(SystemExit):\n"
            f"    main({argv!r})\n"
            "assert 'usage: localeval' in out.getvalue()\n"
            "print(sorted(m for m in sys.modules if m.startswith('localeval.backends.')))")
    _assert_no_backend_imported(code)


def test_run_help_names_the_backends_of_each_option(capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "[openai]" in text  # --top-logprobs, --scoring: the openai backend's alone
    assert "[hf, openai, vllm]" in text  # --template-date


def test_the_old_names_import_with_a_warning():
    import localeval.backends.base as base

    with pytest.warns(DeprecationWarning, match="BackendBase is deprecated: use Backend"):
        from localeval.backends.base import BackendBase
    with pytest.warns(DeprecationWarning, match="Execute is deprecated: use Executor"):
        from localeval.backends.base import Execute
    assert BackendBase is base.Backend and Execute is base.Executor
    with pytest.raises(AttributeError):
        base.NoSuchName  # noqa: B018
