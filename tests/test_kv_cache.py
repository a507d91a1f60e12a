"""backends/hf/kv_cache.py: the KV cache passed by the name the installed transformers takes, so
a run on transformers 5.24+ gives no ``past_key_values`` deprecation notice (the name goes in
5.40), and a release that knows only ``past_key_values`` still gets it."""

from __future__ import annotations

import logging
import warnings

import pytest

from localeval.backends.base import Generate, ScoreNext
from localeval.backends.hf.kv_cache import cache_argument, returned_cache


class OldForward:
    def forward(self, input_ids, past_key_values=None, use_cache=None):
        return None


class NewForward:
    def forward(self, input_ids, cache=None, use_cache=None):
        return None


class Output:
    def __init__(self, **fields):
        self.__dict__.update(fields)


def test_the_name_follows_the_forward_it_is_passed_to():
    assert cache_argument(OldForward()) == "past_key_values"
    assert cache_argument(NewForward()) == "cache"
    assert returned_cache(Output(cache="new")) == "new"
    assert returned_cache(Output(past_key_values="old")) == "old"


@pytest.mark.slow
def test_scoring_and_generation_give_no_deprecation_notice(tiny_llama, caplog):
    """The prefix tree (scoring and prefill), decode steps, the first-labelled-position read and
    the one-prompt ``generate`` fallback, on the installed transformers: no notice, as a
    warning or as transformers' log line."""
    import transformers

    from localeval.backends.hf import HFBackend
    from localeval.backends.hf.generate import generate_one

    backend = HFBackend(str(tiny_llama), dtype="float32", device="cpu")
    prompt = "Question: is this safe?\nAnswer:"
    with warnings.catch_warnings(record=True) as seen, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        transformers.utils.logging.enable_propagation()
        backend.run([ScoreNext(prompt, (" yes", " no")),
                     ScoreNext(prompt, (" safe", " unsafe"), top=1, positions=4),
                     Generate(prompt, max_tokens=6), Generate(prompt + " no", max_tokens=6)])
        ids = backend.encode(*backend.render(prompt))
        generate_one(backend, Generate(prompt, max_tokens=4), ids, None)
    notices = [str(w.message) for w in seen] + [r.getMessage() for r in caplog.records]
    assert not [n for n in notices if "past_key_values" in n or "cache_params" in n], notices
