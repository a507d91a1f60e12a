"""One frozen options object per task (issue 45, item 1): choices are ``Literal`` types, checked
once where the object is built; a task keeps the object and passes it on; which options a
rescore may change is declared on the field, and a run's options are read back from its
config.json by the kind's own ``Options.recorded``."""

from __future__ import annotations

import dataclasses

import pytest

from localeval.cli import main, parser
from localeval.errors import LocalevalError
from localeval.tasks.llm_safety import LLMSafetyTask
from localeval.tasks.mcq_options import MCQOptions
from localeval.tasks.options import TaskOptions, choices_of, option_fields, rescorable
from localeval.tasks.registry import kinds, make_task
from localeval.tasks.rescoring import source_options
from localeval.tasks.safety_options import SafeguardOptions


def _choice_fields():
    return [(kind.Options, f) for kind in kinds() for f in option_fields(kind.Options)
            if choices_of(kind.Options, f)]


def test_every_kind_has_one_frozen_options_class_whose_choices_are_literal_types():
    for kind in kinds():
        assert issubclass(kind.Options, TaskOptions)
        assert kind.Options.__dataclass_params__.frozen
        for f in option_fields(kind.Options):  # no list of choices beside the type
            assert "choices" not in f.metadata["argparse"], (kind.Options.__name__, f.name)
    names = {f.name for _, f in _choice_fields()}
    assert {"method", "chat", "extract", "lm_eval_choices", "auprc", "en_cell", "threshold_rule",
            "threshold_grid", "on_failure", "sensitive", "refusal", "d2", "refine",
            "safeguard_mode"} <= names
    assert choices_of(SafeguardOptions, _field(SafeguardOptions, "threshold_rule")) == ("gt",
                                                                                      "ge")
    assert choices_of(MCQOptions, _field(MCQOptions, "extract")) == ("tmlu", "strict", None)


def test_the_choices_results_json_takes_are_the_ones_a_run_takes_declared_once():
    """Issue 71 item 2: --method's choices were spelled twice (records.mcq and the options, as
    --help must not import pydantic), and the LLM-safety records' ``refusal``, ``mode`` and
    ``refine`` and the safety records' ``threshold_rule`` took any string. Each is declared
    once, in the light ``localeval.choices`` (or ``metrics.choices``), and the records take
    exactly the choices a run does: another value in a results.json is refused where it is
    read."""
    from typing import get_args

    import pydantic

    from localeval import choices
    from localeval.metrics import choices as metric_choices
    from localeval.records import llm_safety, mcq, safety
    from localeval.tasks import llm_safety_options, mcq_options

    assert mcq.Method is mcq_options.Method is choices.Method
    assert choices_of(MCQOptions, _field(MCQOptions, "method")) == get_args(choices.Method)
    assert llm_safety_options.Refusal is choices.Refusal
    for model, name, literal in ((llm_safety.LLMSafetyResults, "refusal", choices.Refusal),
                                 (llm_safety.Safeguard, "mode", choices.SafeguardMode),
                                 (llm_safety.Safeguard, "refine", choices.Refine),
                                 (safety.SafetyResults, "threshold_rule",
                                  metric_choices.ThresholdRule | None)):
        assert model.model_fields[name].annotation == literal, (model, name)
    with pytest.raises(pydantic.ValidationError, match="mode"):
        llm_safety.Safeguard(name="zero-shot", mode="fixed-answr")


def _field(options_class, name):
    return next(f for f in option_fields(options_class) if f.name == name)


@pytest.mark.parametrize("options_class,name", [(c, f.name) for c, f in _choice_fields()])
def test_a_choice_outside_its_type_is_refused_once_where_the_object_is_built(options_class,
                                                                             name):
    flag = "--" + name.replace("_", "-")
    given = {"refusal": "detector"} if options_class.__name__ == "LLMSafetyOptions" else {}
    with pytest.raises(LocalevalError, match="must be one of .*, not 'nonsense'") as refused:
        options_class(**{**given, name: "nonsense"})
    assert "\n" not in str(refused.value)
    assert str(refused.value).startswith(_flag(options_class, name, flag))


def _flag(options_class, name, default):
    return _field(options_class, name).metadata.get("flag") or default


def test_the_flags_show_the_choices_and_the_object_alone_checks_them(capsys):
    run = parser()._subparsers._group_actions[0].choices["run"]
    shown = {a.dest: a.metavar for a in run._actions}
    assert shown["threshold_rule"] == "{gt,ge}" and shown["method"] == "{likelihood,generation}"
    assert shown["sensitive"] == "{iris,paper,safe,harmful,exclude}"
    # argparse lets the text through; the options object refuses it, in its own words
    assert main(["run", "--task", "sea-safeguard", "--threshold-rule", "gte"]) == 2
    assert capsys.readouterr().err == "error: --threshold-rule must be one of gt, ge, not 'gte'\n"
    assert main(["run", "--task", "tmlu", "--model", "hf:x", "-T", "chat=chatty"]) == 2
    assert "--chat must be one of none, single, multi, api, not 'chatty'" in \
        capsys.readouterr().err


def test_a_task_keeps_the_options_object_it_was_made_with():
    task = make_task("sea-safeguard", threshold_rule="ge", auprc="ap")
    assert isinstance(task.options, SafeguardOptions)
    assert (task.options.threshold_rule, task.options.auprc) == ("ge", "ap")
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.options.threshold_rule = "gt"
    # a benchmark's own options are in the object its task keeps
    cot = make_task("tmlu-cot", data="src/localeval/data/sample/tmlu")
    assert (cot.options.method, cot.options.cot, cot.options.extract) == ("generation", True,
                                                                          "tmlu")


def test_rescorable_options_are_declared_on_their_fields():
    by_kind = {kind.Options.__name__: rescorable(kind) for kind in kinds()}
    assert by_kind == {
        "MCQOptions": ("extract",),
        "SafeguardOptions": ("sensitive", "n_resamples", "calibrate_on", "auprc", "en_cell",
                             "threshold_rule", "threshold_grid", "one_class", "file_rounding",
                             "on_failure"),
        "LLMSafetyOptions": (), "ContaminationOptions": ()}
    rescore = parser()._subparsers._group_actions[0].choices["rescore"]
    flags = {o for a in rescore._actions for o in a.option_strings}
    assert {"--extract", "--threshold-rule", "--sensitive", "--bootstrap", "-T"} <= flags
    assert "--shots" not in flags and "--d2" not in flags


def test_a_kind_with_nothing_rescorable_is_refused_in_one_line():
    with pytest.raises(LocalevalError, match="rescore cannot change a 'llm-safety' run: none of "
                       "its options acts only on answers already given"):
        source_options(LLMSafetyTask, {"task": "llm-safety"}, {})


def test_options_are_read_back_from_config_json_under_todays_keys():
    config = {"task": "sea-safeguard", "data": "hf://aisingapore/SEASafeguardBench",
              "subsets": ["general"], "langs": ["en", "th"], "limit": 4,
              "classify": ["prompt"], "sensitive": "iris", "threshold_rule": "ge",
              "auprc": "ap", "guard": {"name": "zero-shot", "options": {"cultural_awareness":
                                                                           True}},
              "label_scores": "top-k", "protocol": "fidelity-3"}
    options = SafeguardOptions.recorded(config, {"n_resamples": 20})
    assert options == {"data": None, "subsets": ["general"], "langs": ["en", "th"], "limit": 4,
                       "classify": ["prompt"], "sensitive": "iris", "threshold_rule": "ge",
                       "auprc": "ap", "guard": "zero-shot",
                       "guard_options": {"cultural_awareness": True}, "n_resamples": 20}
    assert SafeguardOptions(**options).threshold_rule == "ge"


def test_a_string_for_a_list_option_is_one_item_or_a_comma_list(cmmlu, tmp_path):
    """`evaluate(..., subjects='arts')` read the string letter by letter (`subject(s) a, r, s, t
    not found`)."""
    assert make_task("cmmlu", data=cmmlu, subjects="arts").options.subjects == ["arts"]
    both = make_task("cmmlu", data=cmmlu, subjects="arts, virology")
    assert both.options.subjects == ["arts", "virology"]
    assert [s for s, _, _ in make_task("cmmlu", data=cmmlu, subjects="arts").load().subjects] \
        == ["arts"]
    safety = make_task("safety-prompts", data="x.jsonl", langs="en,th", subsets="prompts",
                       classify="prompt")
    assert (safety.options.langs, safety.options.subsets) == (["en", "th"], ["prompts"])
    contamination = make_task("contamination", data=str(tmp_path / "a.jsonl"), k="10,20")
    assert contamination.sources == [str(tmp_path / "a.jsonl")]
    assert list(contamination.options.k) == [10.0, 20.0]
    assert list(make_task("contamination", data=tmp_path / "a.jsonl", k=20).options.k) == [20]
    with pytest.raises(LocalevalError, match="k='ten': expected comma-separated numbers"):
        make_task("contamination", data="a.jsonl", k="ten")


def test_evaluate_with_one_subject_as_text(cmmlu, no_model_load, model_folder):
    import localeval

    with pytest.raises(AssertionError, match="a model was loaded"):  # past every data check
        localeval.evaluate(task="cmmlu", model=model_folder, data=cmmlu, subjects="arts")
