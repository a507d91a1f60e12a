"""Seeded, randomly initialised models around the real SmolLM2 tokenizer, saved like Hub models.

Their accuracy means nothing; their arithmetic is exact, which is what comparisons need.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LOCALEVAL_SHARED", REPO.parent / "shared"))
TOKENIZER_JSON = SHARED / "models" / "smollm2-tokenizer" / "tokenizer.json"
# A ChatML chat template (the format SmolLM2 and Qwen instruct models use).
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def save_tokenizer(folder: Path, chat: bool = True) -> None:
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(TOKENIZER_JSON),
        eos_token="<|im_end|>" if chat else "<|endoftext|>",
        bos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    if chat:
        tok.chat_template = CHATML
    tok.save_pretrained(folder)


def make_model(folder: Path, arch: str = "llama", layers: int = 2, seed: int = 0,
               hidden: int = 64, chat: bool = True, tied: bool = True,
               sliding_window: int = 4096) -> Path:
    """Write a random model + tokenizer to ``folder`` (if not there yet) and return it.

    ``tied=False`` gives the LM head its own random weights: a tied model's output mostly
    repeats its input token, an untied one writes varied text (what generation tests need)."""
    import torch
    import transformers

    folder = Path(folder)
    if (folder / "config.json").exists():
        return folder
    vocab = 49152
    common = dict(vocab_size=vocab, max_position_embeddings=4096, tie_word_embeddings=tied,
                  bos_token_id=0, eos_token_id=2 if chat else 0)
    if arch == "llama":
        cfg = transformers.LlamaConfig(hidden_size=hidden, intermediate_size=hidden * 3,
                                       num_hidden_layers=layers, num_attention_heads=4,
                                       num_key_value_heads=2, **common)
        cls = transformers.LlamaForCausalLM
    elif arch == "smollm2-135m":  # the real architecture, at reduced depth
        cfg = transformers.LlamaConfig(hidden_size=576, intermediate_size=1536,
                                       num_hidden_layers=layers, num_attention_heads=9,
                                       num_key_value_heads=3, rope_theta=100000.0,
                                       rms_norm_eps=1e-5, **common)
        cls = transformers.LlamaForCausalLM
    elif arch == "qwen2":
        cfg = transformers.Qwen2Config(hidden_size=hidden, intermediate_size=hidden * 3,
                                       num_hidden_layers=layers, num_attention_heads=4,
                                       num_key_value_heads=2, **common)
        cls = transformers.Qwen2ForCausalLM
    elif arch == "gemma2":  # alternating sliding-window and full layers, like ShieldGemma's
        cfg = transformers.Gemma2Config(hidden_size=hidden, intermediate_size=hidden * 3,
                                        num_hidden_layers=layers, num_attention_heads=4,
                                        num_key_value_heads=2, head_dim=hidden // 4,
                                        sliding_window=sliding_window, **common)
        cls = transformers.Gemma2ForCausalLM
    elif arch == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=vocab, n_positions=4096, n_embd=hidden,
                                      n_layer=layers, n_head=4, bos_token_id=0,
                                      eos_token_id=common["eos_token_id"],
                                      tie_word_embeddings=tied)
        cls = transformers.GPT2LMHeadModel
    else:
        raise ValueError(arch)
    torch.manual_seed(seed)
    model = cls(cfg)
    # The default init (std 0.02) makes near-uniform outputs, where near-ties would decide the
    # argmax. Tied embeddings of std 3/sqrt(hidden) give logits of std ~3 after the final norm:
    # log-probs spread like a trained model's (about -5 to -25), without huge magnitudes.
    with torch.no_grad():
        model.get_input_embeddings().weight.normal_(0, 3.0 / cfg.hidden_size**0.5)
        if not tied:
            model.get_output_embeddings().weight.normal_(0, 3.0 / cfg.hidden_size**0.5)
    model.save_pretrained(folder)
    save_tokenizer(folder, chat=chat)
    return folder
