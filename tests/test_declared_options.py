"""Options typed by their declaration (issue 31 item 3): every ``KEY=VALUE`` text — ``-T``,
``--role-option``, ``--guard-option``, ``--model-args`` — becomes the type its option declares,
or one line (exit 2) before any model loads; keys stay as written; which backend options are
speed-only comes from their declaration."""

from __future__ import annotations

import dataclasses

import pytest

from localeval.backends.config import BackendConfig
from localeval.cli import main, parser
from localeval.cli.run_options import role_options as role_options_of_args
from localeval.declared import OptionValueError, parse_declared
from localeval.guards.registry import get_guard


def _run(shared, *extra):
    return main(["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
                 "--model", "hf:/no/such/model", *extra])


# before: the first five were tracebacks (TypeError: '<=' not supported between int and str;
# data=5 an int given to a path); cot=maybe was taken as true
DASH_T = {"shots=abc": "-T shots='abc': expected an integer",
          "limit=abc": "-T limit='abc': expected an integer or none",
          "limit=1.5": "-T limit='1.5': expected an integer or none",
          "max_tokens=abc": "-T max_tokens='abc': expected an integer or none",
          "cot=maybe": "-T cot='maybe': expected true or false",
          "method=guess": "--method must be one of likelihood, generation, not 'guess'",
          "max-tokens=5": "did you mean -T max_tokens=...?"}


@pytest.mark.parametrize("given", DASH_T)
def test_each_dash_t_value_is_parsed_by_its_declaration(given, shared, no_model_load, capsys):
    assert _run(shared, "-T", given) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and DASH_T[given] in err, err


def test_dash_t_values_of_each_declared_type(shared):
    from localeval.cli import task_options

    args = parser().parse_args(["run", "--task", "tmlu", "-T", "shots=3", "-T", "cot=FALSE",
                                "-T", "limit=none", "-T", "data=5", "-T", "subjects=a,b"])
    options = task_options(args)
    assert (options["shots"], options["cot"], options["limit"]) == (3, False, None)
    assert options["data"] == "5" and options["subjects"] == ["a", "b"]  # a path stays text


def test_a_guard_option_is_typed_by_the_guard_constructor():
    guard = get_guard("zero-shot", cultural_awareness="false", reasoning="true",
                      reasoning_tokens="64")
    assert guard.cultural_awareness is False and guard.reasoning_tokens == 64
    with pytest.raises(OptionValueError, match="guard 'zero-shot' option cultural_awareness='maybe': "
                       "expected true or false"):
        get_guard("zero-shot", cultural_awareness="maybe")  # before: truthy text, taken as on


def test_role_options_are_typed_by_backend_config(shared, no_model_load, capsys):
    args = parser().parse_args(["run", "--task", "tmlu", "--role-option", "judge.batch_size=4",
                                "--role-option", "judge.timeout=2.5"])
    assert role_options_of_args(args) == {"judge": {"batch_size": 4, "timeout": 2.5}}
    assert _run(shared, "--role-option", "judge.batch_size=x") == 2
    assert "--role-option judge.batch_size='x': expected an integer or 'auto'" in \
        capsys.readouterr().err


def test_keys_are_never_rewritten():
    # before: values.key_values turned X-Team into X_Team
    assert parse_declared("dict | None", "X-Team=a,max-len=2", "--model-args") == \
        {"X-Team": "a", "max-len": 2}


def test_speed_only_and_secret_follow_the_declaration():
    speed = {f.name for f in dataclasses.fields(BackendConfig)
             if f.metadata.get("role") == "speed"}
    assert BackendConfig.of_role("speed") == speed and "batch_size" in speed
    settings = BackendConfig(batch_size=4, base_url="http://u:PW@h/v1").settings()
    assert "batch_size" not in settings and "PW" not in str(settings)
    assert not speed & set(BackendConfig().settings())


@pytest.mark.parametrize("declared,text,value", [
    ("int | None", "-3", -3), ("float", "1e-3", 0.001), ("bool", "TRUE", True),
    ("Sequence[float]", "0.1, 0.5", [0.1, 0.5]), ("str | Path | None", "none", None),
    ("int | Literal['auto']", "auto", "auto"), ("str | Backend | None", "x", "x")])
def test_parse_declared(declared, text, value):
    assert parse_declared(declared, text, "x") == value


def test_a_type_object_is_read_as_its_name():
    from localeval.declared import parse_if_text

    assert parse_if_text(int, "3", "x") == 3 and parse_if_text(str, "3", "x") == "3"


@pytest.mark.parametrize("declared,text", [("float", "nan"), ("float", "inf"), ("int", "1.0"),
                                           ("Sequence[float]", "a,1"), ("bool", "2"),
                                           ("bool", "yes")])
def test_parse_declared_refuses(declared, text):
    with pytest.raises(OptionValueError, match=f"x={text!r}: expected"):
        parse_declared(declared, text, "x")


def test_none_as_a_choice_is_that_choice_not_unset():
    """--chat-extensions none (the server takes no vLLM argument) was read as unset, which on a
    vLLM server auto-selects vllm: the opposite of what was asked. A choice written as itself
    is that choice, from the flag and from --role-option alike."""
    from localeval.cli.run_options import backend_options

    args = parser().parse_args(["run", "--task", "tmlu", "--chat-extensions", "none",
                                "--role-option", "judge.chat_extensions=none"])
    assert backend_options(args).chat_extensions == "none"
    assert role_options_of_args(args) == {"judge": {"chat_extensions": "none"}}
    args = parser().parse_args(["run", "--task", "tmlu", "--tokenizer", "none"])
    assert backend_options(args).tokenizer is None  # no choices: "none" is still unset there
