"""Issue 64 item 5: a guard's first-label read counts its generation budget against the
context, as the authors' server did. IRIS ``guard_models/llama_guard.py`` ``LlamaGuard`` (and
``llm_guard.py``, ``poly_guard.py``) asks vLLM's server for ``max_new_tokens=100`` new
tokens; vLLM answers HTTP 400 when prompt + ``max_tokens`` exceeds ``max_model_len``, which
``generative_models/api_model.py`` ``APIGenerativeLLM.complete`` turns into no log-probs and
``guard_models/base.py:27-28`` into every label at 1/#labels. So a prompt of n tokens with
room for fewer than 100 more is refused ("over the model's context", which
``guards/base.py`` ``refused_request`` reads as that HTTP 400), on ``hf:`` and ``vllm:``
alike, where before ``hf:`` refused only a prompt over the context and ``vllm:`` clipped
the generation to the room left."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from localeval.backends.base import ScoreNext
from localeval.errors import LocalevalError
from localeval.guards.base import refused_request

PROMPT = "Is this request safe to answer?"


def test_hf_refuses_a_first_label_read_whose_budget_passes_the_context(tiny_llama):
    """By hand: the prompt's n tokens; a context of n + 50 leaves room for 50 of the 100 new
    tokens IRIS asks for: HTTP 400 there. A one-position read (``fixed``) needs one: it runs."""
    from localeval.backends.hf import HFBackend

    backend = HFBackend(str(tiny_llama))
    n = len(backend._score_tokens(ScoreNext(PROMPT, (" A", " B")))[0])
    backend.max_context = lambda: n + 50
    with pytest.raises(LocalevalError, match="over the model's context") as e:
        backend._encode_checked(ScoreNext(PROMPT, (" A", " B"), top=2, positions=100))
    assert f"prompt has {n} tokens; with 100 more" in str(e.value)
    assert refused_request(f"backend error: {e.value}")
    backend._encode_checked(ScoreNext(PROMPT, (" A", " B"), top=2))  # fixed: fits
    backend._encode_checked(ScoreNext(PROMPT, (" A", " B"), top=2, positions=50))  # just fits
    # issue 71 item 3: the request fails as its own kind, which the guard decides by (the
    # message was read before), and the cache gives the same type back
    from localeval.backends.base import Failed, response_from_json, response_json
    from localeval.backends.failures import ContextOverflow
    from localeval.guards.base import GuardVerdict, refused

    request = ScoreNext(PROMPT, (" A", " B"), top=2, positions=100)
    (failed,) = backend.run([request])
    assert isinstance(failed, Failed) and isinstance(failed.reason, ContextOverflow)
    assert failed.reason.kind == "context_overflow" and refused(failed.reason)
    cached = response_from_json(request, response_json(failed))
    assert isinstance(cached.reason, ContextOverflow)
    assert GuardVerdict(None, "x", cause=cached.reason).failure == "context_overflow"


def test_vllm_refuses_instead_of_clipping_the_generation(monkeypatch):
    """The same prompt of 10 tokens in a context of 60: 100 new tokens do not fit (refused
    with the reason, as the HTTP 400); before, ``max_tokens`` was clipped to the 50 left."""
    from localeval.backends import vllm_engine
    from localeval.backends.vllm_engine import VllmBackend

    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(
        SamplingParams=lambda **kw: SimpleNamespace(**kw)))
    monkeypatch.setattr(vllm_engine, "score_tokens", lambda *a: (list(range(10)), [1, 2]))
    engine = object.__new__(VllmBackend)
    engine.tokenizer, engine.name, engine.template_date = None, "m", None
    monkeypatch.setattr(engine, "max_context", lambda: 60, raising=False)
    with pytest.raises(LocalevalError, match="prompt has 10 tokens; with 100 more that is over "
                                             "the model's context of 60"):
        engine._plan(ScoreNext(PROMPT, ("a", "b"), top=2, positions=100))
    ids, params, _ = engine._plan(ScoreNext(PROMPT, ("a", "b"), top=2, positions=50))
    assert params.max_tokens == 50
    assert engine._plan(ScoreNext(PROMPT, ("a", "b"), top=2))[1].max_tokens == 1
