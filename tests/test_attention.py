"""Our eager attention (backends/hf/attention.py) against transformers' eager, on every architecture
it applies to: a padded batch's logits bit for bit, a decode step's (one query row per head,
where the stacked group multiplies differently) within float32 rounding."""

import copy

import pytest
import torch
import transformers

from localeval.backends.hf import attention

SMALL = dict(vocab_size=500, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=256)
CONFIGS = {
    "llama": lambda: transformers.LlamaConfig(**SMALL),
    "mistral": lambda: transformers.MistralConfig(**SMALL, sliding_window=None),
    "qwen2": lambda: transformers.Qwen2Config(**SMALL),
    "qwen3": lambda: transformers.Qwen3Config(**SMALL, head_dim=8),
    # sliding layers of 16 tokens in a 40-token batch, and logit soft-capping
    "gemma2": lambda: transformers.Gemma2Config(**SMALL, head_dim=8, sliding_window=16),
}


def pair(config, ours_name=None):
    """The same random weights loaded with transformers' eager and with ours (each model gets a
    config of its own: a model's config carries its attention implementation)."""
    torch.manual_seed(0)
    theirs = transformers.AutoModelForCausalLM.from_config(copy.deepcopy(config),
                                                           attn_implementation="eager")
    name = ours_name or attention.implementation("eager", config)
    ours = transformers.AutoModelForCausalLM.from_config(copy.deepcopy(config),
                                                         attn_implementation=name)
    ours.load_state_dict(theirs.state_dict())
    assert theirs.config._attn_implementation == "eager"
    assert ours.config._attn_implementation == name
    return theirs.eval(), ours.eval()


def logits_and_next_step(model, ids, mask):
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, use_cache=True)
        step = model(input_ids=ids[:, -1:], past_key_values=out.past_key_values,
                     attention_mask=torch.cat([mask, mask[:, -1:]], dim=1))
    return out.logits, step.logits


@pytest.mark.parametrize("arch", sorted(CONFIGS))
def test_same_as_transformers_eager(arch, monkeypatch):
    monkeypatch.setattr(attention, "_own_eager", lambda module: pytest.fail("not grouped"))
    config = CONFIGS[arch]()
    assert config.model_type in attention.GROUPED
    theirs, ours = pair(config)
    assert ours.config._attn_implementation == attention.NAME
    called = []
    grouped = attention.grouped_eager
    monkeypatch.setattr(attention, "grouped_eager",
                        lambda *a, **k: called.append(1) or grouped(*a, **k))
    attention.implementation("eager", config)  # registers the spy under our name
    ids = torch.randint(0, 500, (3, 40), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :7] = 0  # left padding
    mask[2, 31:] = 0  # right padding
    (prefill, step), (our_prefill, our_step) = (logits_and_next_step(m, ids, mask)
                                                for m in (theirs, ours))
    assert torch.equal(prefill, our_prefill)
    assert (step - our_step).abs().max() < 1e-6 and not torch.equal(step, step + 1e-3)
    assert torch.equal(step.argmax(-1), our_step.argmax(-1))
    assert len(called) == 2 * 2  # two layers, two forward passes


def test_used_only_for_eager_on_checked_architectures():
    llama = transformers.LlamaConfig(**SMALL)
    assert attention.implementation("eager", llama) == attention.NAME
    assert attention.implementation("sdpa", llama) == "sdpa"
    assert attention.implementation("eager", transformers.GPT2Config(n_layer=1)) == "eager"
    remote = transformers.LlamaConfig(**SMALL, auto_map={"AutoModelForCausalLM": "x.Y"})
    assert attention.implementation("eager", remote) == "eager"


def test_other_modules_run_their_own_eager():
    """A module of another family (GPT-2 here) called through our name gets its own eager,
    bit for bit."""
    config = transformers.GPT2Config(vocab_size=500, n_embd=64, n_layer=2, n_head=4)
    attention.implementation("eager", transformers.LlamaConfig(**SMALL))  # registers the name
    theirs, ours = pair(config, attention.NAME)
    ids = torch.randint(0, 500, (2, 24), generator=torch.Generator().manual_seed(2))
    mask = torch.ones_like(ids)
    mask[0, :5] = 0
    for a, b in zip(logits_and_next_step(theirs, ids, mask),
                    logits_and_next_step(ours, ids, mask)):
        assert torch.equal(a, b)
