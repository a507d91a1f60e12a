"""The three-label guards' Sensitive weight under each rule of the authors' code (issue 72): the
pinned rules stay the defaults; the newer Parallax-AI rule is a value of the same option.

Every expected score is worked out by hand from the upstream function on one scripted top-20
list, the list a vLLM server returns for the verdict position:

- IRIS ``8cfede9`` ``guard_models/base.py`` ``GuardLLM.complete`` keeps the top 2 of it, and
  ``get_eval_result.py`` ``get_pred_score`` adds Sensitive where the file is read
  sensitive-as-harmful (SEA-LION Guard's default, ``sensitive=iris``);
- Parallax-AI ``8348665`` ``parallax_ai/modules/safeguards/base_module.py:23-31``: Sensitive
  fully harmful for prompts, 0 for responses (Qwen3Guard's default ``controversial=paper``;
  SEA-LION Guard's ``sensitive=prompts``);
- Parallax-AI ``c853033`` ``parallax_ai/modules/safeguard_modules/base_module.py:19-25``: every
  Sensitive adds 0.5·p (``half``), each label found among all 20 (``label_scores=top-20``;
  ``top_logprobs: 20`` at l.71-75, ``logprobs: 20`` in ``sealionguard_module.py:63-66``).
"""

from __future__ import annotations

import math

import pytest

from localeval.backends.base import NextLogprobs, ScoreNext
from localeval.errors import LocalevalError
from localeval.guards import Conversation, get_guard


def server(top: list[tuple[str, float]]):
    """An execute that answers each ScoreNext as a server's top list read by rank: a candidate
    is kept when its place in ``top`` is within the request's k (``ScoreNext.top``)."""
    places = {token: i for i, (token, _) in enumerate(top, start=1)}
    values = dict(top)

    def execute(requests):
        answers = []
        for r in requests:
            assert isinstance(r, ScoreNext)
            k = r.top or len(top)
            answers.append(NextLogprobs(
                logprobs={c: values.get(c, -math.inf) for c in r.candidates},
                ranks={c: places[c] if places.get(c, k + 1) <= k else None
                       for c in r.candidates}))
        return answers
    return execute


def fillers(values: list[float]) -> list[tuple[str, float]]:
    return [(f"x{v}", v) for v in values]


# SEA-LION Guard's first new token: safe first, s 5th, unsafe 14th of the 20
SEALION_TOP = [("safe", -0.4), *fillers([-1.0, -1.2, -1.5]), ("s", -2.0),
               *fillers([-2.1, -2.2, -2.3, -2.4, -2.5, -2.6, -2.7, -3.0]), ("unsafe", -3.5),
               *fillers([-3.6, -3.7, -3.8, -3.9, -4.0, -4.1])]
# all three among the 20: Z = e^-0.4 + e^-2.0 + e^-3.5 = 0.835853
P_S = math.exp(-2.0) / 0.8358527126945705  # 0.161913
P_UNSAFE = math.exp(-3.5) / 0.8358527126945705  # 0.036128


def _score(guard, conversation):
    (verdict,) = guard.classify([conversation], server(SEALION_TOP))
    assert verdict.ok, verdict.error
    return verdict.score


PROMPT = Conversation("p", None, {"subset": "general"})
CG_PROMPT = Conversation("p", None, {"subset": "cultural-cg"})
RESPONSE = Conversation("p", "r", {"subset": "general"})


def test_the_list_is_what_the_hand_computation_says():
    assert len(SEALION_TOP) == 20
    assert [v for _, v in SEALION_TOP] == sorted((v for _, v in SEALION_TOP), reverse=True)
    assert P_S == pytest.approx(0.161913, abs=1e-6) and P_UNSAFE == pytest.approx(0.036128,
                                                                                   abs=1e-6)


def test_sealion_guard_default_is_the_pinned_iris_reading():
    """IRIS keeps the top 2 (safe and a filler): safe alone, renormalised to 1: score 0.0
    under any Sensitive weight."""
    guard = get_guard("sealion-guard")
    assert guard.sensitive == "iris" and guard.label_top == 2
    for conversation in (PROMPT, CG_PROMPT, RESPONSE):
        assert _score(guard, conversation) == 0.0


def test_sealion_guard_half_is_parallax_c853033():
    """c853033: P(unsafe) + 0.5 P(s) over the labels among the top 20, prompts and responses
    alike: 0.036128 + 0.080956 = 0.117084."""
    guard = get_guard("sealion-guard", sensitive="half", label_scores="top-20")
    for conversation in (PROMPT, CG_PROMPT, RESPONSE):
        assert _score(guard, conversation) == pytest.approx(0.117084, abs=1e-6)
    assert _score(guard, PROMPT) == pytest.approx(P_UNSAFE + 0.5 * P_S, abs=1e-12)


def test_sealion_guard_prompts_is_parallax_8348665():
    """8348665: Sensitive harmful for a prompt (0.198040, CG prompts too: the pin reads no
    subset), not for a response (0.036128)."""
    guard = get_guard("sealion-guard", sensitive="prompts", label_scores="top-20")
    assert _score(guard, PROMPT) == pytest.approx(0.198040, abs=1e-6)
    assert _score(guard, CG_PROMPT) == pytest.approx(0.198040, abs=1e-6)
    assert _score(guard, RESPONSE) == pytest.approx(0.036128, abs=1e-6)


def test_iris_weight_over_the_top_20_for_comparison():
    """The pinned IRIS weight on the same 20: Sensitive counts except on CG prompts."""
    guard = get_guard("sealion-guard", label_scores="top-20")
    assert _score(guard, PROMPT) == pytest.approx(P_UNSAFE + P_S, abs=1e-12)
    assert _score(guard, CG_PROMPT) == pytest.approx(P_UNSAFE, abs=1e-12)
    assert _score(guard, RESPONSE) == pytest.approx(P_UNSAFE + P_S, abs=1e-12)


def test_an_unknown_sensitive_value_names_the_rules():
    with pytest.raises(LocalevalError, match="iris, harmful, safe, half, prompts"):
        get_guard("sealion-guard", sensitive="0.5")


# Qwen3Guard's third new token (after "Safety" ":", our prefill): Safe, Controversial, Unsafe
QWEN_TOP = [(" Safe", -0.3), (" Controversial", -1.5), (" Unsafe", -2.5),
            *fillers([-3.0 - i / 10 for i in range(17)])]


@pytest.mark.parametrize("rule, prompt, response", [
    # Z = e^-0.3 + e^-1.5 + e^-2.5; P(C) = 0.213311, P(U) = 0.078473
    ("paper", 0.291783, 0.078473),  # 8348665 (the default): C harmful on prompts only
    ("half", 0.185128, 0.185128),  # c853033: U + C / 2 for both
])
def test_qwen3guard_controversial_rules(rule, prompt, response):
    guard = get_guard("qwen3guard", controversial=rule)
    assert guard.label_top == 20  # Parallax-AI's top_logprobs, at the pin and at c853033
    (p,) = guard.classify([PROMPT], server(QWEN_TOP))
    (r,) = guard.classify([RESPONSE], server(QWEN_TOP))
    assert p.score == pytest.approx(prompt, abs=1e-6)
    assert r.score == pytest.approx(response, abs=1e-6)
    assert get_guard("qwen3guard").controversial == "paper"
