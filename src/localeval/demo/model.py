"""The demo's model: a seeded, randomly initialised Llama with a byte-level BPE tokenizer trained
on the demo's own texts, saved like a Hub model and loaded through the real ``hf`` backend. Its
answers are chance-level and mean nothing; the demo shows the flow, the files and the tables.
"""

from __future__ import annotations

from pathlib import Path

DEMO_SEED = 0
# A ChatML chat template of our own (the format SmolLM2 and Qwen instruct models use).
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_demo_model(folder: Path, texts: list[str]) -> Path:
    """Train a small tokenizer on ``texts`` and save a seeded random Llama beside it."""
    if (folder / "config.json").exists():
        return folder
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    # no progress: it writes blank lines to stdout where it is no terminal (issue 69: three
    # after the demo's banner)
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    prompt_words = ["問題：", "正確答案：(", "讓我們一步一步思考。", "以下選擇題為出自臺灣的考題，答案為其中一個選項。"]
    tokenizer.train_from_iterator(texts + prompt_words, trainer)
    # transformers' tokenizer classes declare no types on __init__
    fast = transformers.PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tokenizer, bos_token="<|endoftext|>", eos_token="<|im_end|>",
        pad_token="<|endoftext|>", unk_token="<|endoftext|>")
    fast.chat_template = CHATML
    torch.manual_seed(DEMO_SEED)
    config = transformers.LlamaConfig(
        vocab_size=len(fast), hidden_size=64, intermediate_size=192, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        tie_word_embeddings=True, bos_token_id=0, eos_token_id=2)
    model = transformers.LlamaForCausalLM(config)
    # no "Writing model shards" bar (transformers declares no return type on it)
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder
