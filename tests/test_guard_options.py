"""Issue 67: guards declare frozen, typed options as task kinds do (guards/options.py), are made
whole from them, and a run's name and protocol facts say them; a plugin guard's options, declared
or taken as ``__init__`` keywords (the old form), the same way."""

from __future__ import annotations

import dataclasses
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from localeval.errors import LocalevalError
from localeval.guards import Guard, GuardOptions, GuardVerdict, get_guard, option, registry
from localeval.guards.options import OPTIONS, LMGuardOptions
from localeval.guards.registry import FINE_TUNES, declared_options, guard_table
from localeval.options import choices_of, option_fields
from localeval.plugins import Part

SAMPLE = Path(__file__).resolve().parents[1] / "src/localeval/data/sample/safety/items.jsonl"

# a value other than the default for each option of a built-in guard that takes no choices
OTHER_VALUES: dict[str, Any] = {
    "label_scores": "full", "reasoning_tokens": 8, "policies": "hate", "max_tokens": 7,
    "translator": "none", "translation_tokens": 9, "self_consistency": 3, "retries": 2,
    "seed": 5, "classifier": "hf:org/classifier", "head": "/some/folder", "model": "other-model",
    "detectors": "moderated_content", "path": "other.json"}
# what a value needs beside it to be valid (the other options that value asks for)
NEEDS: dict[tuple[str, ...], dict[str, Any]] = {
    ("reasoning_tokens", "8"): {"reasoning": True}, ("categories", "13"): {"template": "hf"},
    ("label_scores", "full", "polyguard"): {"reading": "prefill"},
    ("verdict_position", "fixed", "polyguard"): {"reading": "prefill"}}


def _other(options_class: type[GuardOptions], f: dataclasses.Field[Any]) -> Any:
    """A valid value of option ``f`` other than its default."""
    if f.name == "verdict_position":  # None is first-label, the authors' reading
        return "fixed"
    choices = [c for c in choices_of(options_class, f) or () if c != f.default]
    if choices:
        return choices[0]
    if f.metadata.get("check") == "flag":
        return not f.default
    return OTHER_VALUES[f.name]


def _every_option() -> list[tuple[str, str]]:
    return [(guard, f.name) for guard, cls in OPTIONS.items() for f in option_fields(cls)]


def _spec(guard: str, guard_options: dict[str, Any] | None, tmp_path):
    """The spec of a run of ``guard`` with ``guard_options``, read from the config.json its
    task writes (no model); a guard that needs files to be made (LionGuard 2's head, a
    plugin's) from a config.json written by hand."""
    from localeval.tasks.registry import make_task
    from localeval.tasks.run_spec import RunSpec, task_block

    try:
        task = make_task("sea-safeguard", data=str(SAMPLE), guard=guard,
                         guard_options=dict(guard_options or {}) or None)
        config = task_block(task, task.load())
    except LocalevalError:
        config = {"task": "sea-safeguard", "guard": {"name": guard, "options": dict(
            guard_options or {})}, "data": str(SAMPLE), "data_sha256": "0" * 64}
    return RunSpec.from_config({**config, "model": "hf:org/m"})


def test_every_built_in_guard_declares_its_options_and_is_made_from_them():
    """The declaration each guard class carries is the one `localeval guards` and the run
    spec read (no guard imported for them), and a guard is made whole: its options object is
    the one the registry read, never changed after (no setter is left)."""
    from localeval.guards.staged import StagedGuard

    for name, part in guard_table().items():
        if not part.built_in:
            continue
        cls = part.load()
        family = FINE_TUNES[name].family if name in FINE_TUNES else name
        assert cls.Options is OPTIONS[family], name
        assert issubclass(cls.Options, LMGuardOptions) == issubclass(cls, StagedGuard), name
    assert not hasattr(StagedGuard, "set_label_scores")
    assert not hasattr(StagedGuard, "set_verdict_position")
    made = get_guard("polyguard", reading="prefill", label_scores="top-5")
    assert made.options == OPTIONS["polyguard"](reading="prefill", label_scores="top-5")
    assert dict(made.options.given) == {"reading": "prefill", "label_scores": "top-5"}
    assert made.label_scores == "top-5" and made.reading == "prefill"
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.options.reading = "answer"  # type: ignore[misc]


@pytest.mark.parametrize("guard,name", _every_option())
def test_a_bad_value_of_any_guard_option_is_one_line_naming_it(guard, name, no_model_load):
    """Every declared field: a value it cannot take is refused before any model loads
    (``no_model_load`` fails a test that loads one), in one line naming the guard, the
    option, and the value, and the choices where it has some."""
    options_class = OPTIONS[guard]
    f = next(f for f in option_fields(options_class) if f.name == name)
    choices = choices_of(options_class, f)
    bad: Any = "no-such-value" if choices is not None or f.metadata.get("check") else None
    if name == "label_scores":
        bad = "top-zero"
    elif name == "policies":
        bad = "violence"
    elif bad is None:
        pytest.skip(f"{guard}'s {name} takes any text")
    with pytest.raises(LocalevalError) as caught:
        get_guard(guard, **{name: bad})
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"guard {guard!r} option {name}"), message
    assert repr(bad) in message, message
    for choice in choices or ():
        if choice is not None:
            assert str(choice) in message, message


@pytest.mark.parametrize("guard,name", _every_option())
def test_a_guard_option_other_than_its_default_is_in_the_runs_name_and_facts(guard, name,
                                                                             tmp_path):
    """The part-1 property extended to guard options: two runs that differ in one guard
    option have different names and protocol facts (how the guard was read, its label
    scores, its verdict position, the zero-shot guard's cultural prompt, are said as their own
    facts; every other option as "guard options"); the option given at its default is the run
    without it."""
    options_class = OPTIONS[guard]
    f = next(f for f in option_fields(options_class) if f.name == name)
    value = _other(options_class, f)
    if guard == "embedding":
        pytest.skip("an embedding guard is named by its file")
    needs = NEEDS.get((name, str(value), guard), NEEDS.get((name, str(value)), {}))
    if guard != "lionguard2":  # its head is a folder: made from a hand-written config below
        try:
            get_guard(guard, **needs, **{name: value})
        except LocalevalError as e:  # not an option of this guard's reading: said in a line
            assert "\n" not in str(e) and name in str(e), str(e)
            pytest.skip(f"{guard} refuses {name}={value}: {e}")
    plain, other = _spec(guard, needs, tmp_path), _spec(guard, {**needs, name: value}, tmp_path)
    assert plain.protocol_facts() != other.protocol_facts(), (guard, name)
    assert plain.name != other.name, (guard, name)
    same = _spec(guard, {**needs, name: f.default}, tmp_path)
    assert same.protocol_facts() == plain.protocol_facts() and same.name == plain.name


def test_a_default_given_is_no_other_protocol_on_main_it_was(tmp_path):
    """On main before issue 67, `--guard-option reading=answer` (PolyGuard's default) made a
    run named and ranked apart from the same run without it."""
    plain, given = _spec("polyguard", None, tmp_path), _spec("polyguard", {"reading": "answer"},
                                                             tmp_path)
    assert given.protocol_facts()["guard options"] == "none"
    assert given.name == plain.name == "polyguard on m · sea-safeguard · data safety/items.jsonl"
    # a Hub id's options are its family's; a fine-tune's fixed ones said as given
    assert declared_options("ToxicityPrompts/PolyGuard-Qwen", {"reading": "answer"}) == {}
    assert declared_options("gemma-guard-4b-delta", {"family": "gemma"}) == {"family": "gemma"}
    assert declared_options("sea-guard-v2", {"family": "llama"}) == {}
    # what cannot be read so is said as recorded
    assert declared_options("no-such-guard", {"x": 1}) == {"x": 1}


@dataclass(frozen=True)
class _DeclaredOptions(GuardOptions):
    words: str = option("bomb", "words that count")
    strict: Literal["yes", "no"] = option("no", "a choice")


class _DeclaredGuard(Guard):
    name = "declared-plugin"
    model = "none:declared-plugin"
    Options = _DeclaredOptions

    def __init__(self, options: _DeclaredOptions | None = None):
        super().__init__(options)

    def classify(self, conversations, execute):
        return [GuardVerdict(0.5) for _ in conversations]


class _KeywordGuard(Guard):
    """A plugin written before guards declared options: ``__init__`` keywords."""

    name = "keyword-plugin"
    model = "none:keyword-plugin"

    def __init__(self, words: str = "fake", per_word: float = 0.5, strict: bool = False):
        self.words, self.per_word, self.strict = words.split(","), per_word, strict

    def classify(self, conversations, execute):
        return [GuardVerdict(self.per_word) for _ in conversations]


@pytest.fixture
def plugins(monkeypatch):
    """Two plugin guards in the table, as an entry point would add them."""
    module = types.ModuleType("fake_guard_plugin")
    module._DeclaredGuard, module._KeywordGuard = _DeclaredGuard, _KeywordGuard  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_guard_plugin", module)
    table = {**guard_table(),
             "declared-plugin": Part("declared-plugin", "fake_guard_plugin:_DeclaredGuard",
                                     "fakeplugin"),
             "keyword-plugin": Part("keyword-plugin", "fake_guard_plugin:_KeywordGuard",
                                    "fakeplugin")}
    monkeypatch.setattr(registry, "guard_table", lambda: table)
    monkeypatch.setattr(registry, "_NOTICED", set())
    monkeypatch.setattr(registry, "_KEYWORD_OPTIONS", {})


def test_a_plugin_guards_options_are_typed_checked_and_said_as_a_built_ins(plugins, capsys,
                                                                           tmp_path):
    declared = get_guard("declared-plugin", words="kill", strict="yes")
    assert declared.options == _DeclaredOptions(words="kill", strict="yes")
    with pytest.raises(LocalevalError, match="^guard 'declared-plugin' option strict must be "
                                             "one of yes, no, not 'maybe'$"):
        get_guard("declared-plugin", strict="maybe")
    # the old form: its keywords read into options from its signature, said once
    old = get_guard("keyword-plugin", words="bomb,kill", per_word="0.25", strict="true")
    assert (old.words, old.per_word, old.strict) == (["bomb", "kill"], 0.25, True)
    assert dict(old.options.given) == {"words": "bomb,kill", "per_word": 0.25, "strict": True}
    get_guard("keyword-plugin")
    notices = [line for line in capsys.readouterr().err.splitlines() if "__init__ keywords" in
               line]
    assert len(notices) == 1 and "keyword-plugin" in notices[0]
    with pytest.raises(LocalevalError, match="^guard 'keyword-plugin' option per_word="):
        get_guard("keyword-plugin", per_word="lots")
    with pytest.raises(LocalevalError, match="has no option.*colour.*accepts: words, per_word"):
        get_guard("keyword-plugin", colour="red")
    for guard, options in (("declared-plugin", {"words": "kill"}),
                           ("keyword-plugin", {"words": "bomb,kill"})):
        plain, other = _spec(guard, None, tmp_path), _spec(guard, options, tmp_path)
        assert plain.protocol_facts() != other.protocol_facts()
        assert plain.name != other.name and "words=" in other.name
        assert _spec(guard, {"per_word": 0.5} if guard == "keyword-plugin" else
                     {"words": "bomb"}, tmp_path).name == plain.name  # its default: the same


def test_a_guard_and_its_options_pickle_as_made():
    """A guard crosses a process boundary whole (a Ray worker, multiprocessing): its options,
    what was given, and a fine-tune's name."""
    import pickle

    for name, options in (("polyguard", {"reading": "prefill"}), ("sea-guard-v2", {})):
        made = get_guard(name, **options)
        again = pickle.loads(pickle.dumps(made))
        assert again.options == made.options and dict(again.options.given) == \
            dict(made.options.given) and again.name == made.name == name
