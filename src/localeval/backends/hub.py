"""Where a model comes from, checked in a blink before anything loads: a local folder that is
not there, or a Hub model while the Hub cannot be reached and the model is not in the local
cache, is one clear line (instead of the Hub client's retries and its "Repo id must be in the
form ..." for a mistyped path)."""

from __future__ import annotations

import os
from pathlib import Path

from ..data.hub import hub_unreachable
from ..errors import LocalevalError


class NotCached(LocalevalError):
    """A Hub model while the Hub cannot be reached and the model is not in the local cache;
    ``way``: how to name a downloaded copy (a second model's own option, for its role)."""

    def __init__(self, target: str, way: str = "hf:<its folder>", role: str | None = None):
        self.target = target
        named = f"the {role} {target!r}" if role else repr(target)
        super().__init__(f"cannot reach the Hugging Face Hub and {named} is not in the local "
                         f"cache; connect, or download it on another machine and pass {way}")


def looks_like_path(target: str) -> bool:
    """A folder, not a Hub id (``namespace/name``): absolute, relative with ./ or ../, ~, or
    more than one slash."""
    return target.startswith(("/", "./", "../", "~", ".\\")) or target.count("/") > 1


# What save_pretrained writes as weights (one file or a sharded index), in any format
# transformers or vLLM loads from a folder (transformers' modeling_utils: SAFE_WEIGHTS_NAME,
# WEIGHTS_NAME and their *_INDEX_NAME); a GGUF file is given as a file, not a folder.
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.h5", "*.msgpack",
                   "*.safetensors.index.json", "*.bin.index.json", "*.gguf")


def check_model_source(target: str, revision: str | None = None,
                       weights: bool = False) -> None:
    """Raise one line when the model cannot be loaded from where ``target`` points; with
    ``weights``, a folder without config.json or weights too (found now, not after the data
    loaded and the progress bar started)."""
    folder = Path(target).expanduser()
    if folder.exists():
        if weights and folder.is_dir():
            check_model_folder(target, folder)
        return
    if looks_like_path(target):
        raise LocalevalError(f"model folder {target} not found")
    if not hub_unreachable():
        return
    os.environ["HF_HUB_OFFLINE"] = "1"  # no retries: load from the local cache or fail at once
    from huggingface_hub import try_to_load_from_cache

    if not isinstance(try_to_load_from_cache(target, "config.json", revision=revision), str):
        raise NotCached(target)


def check_model_folder(target: str, folder: Path) -> None:
    if not (folder / "config.json").is_file():
        raise LocalevalError(f"model folder {target} has no config.json; give the folder that "
                             "save_pretrained wrote (config.json, the weights, the tokenizer)")
    if not any(next(folder.glob(pattern), None) for pattern in WEIGHT_PATTERNS):
        raise LocalevalError(f"model folder {target} has no weights (model.safetensors, "
                             "pytorch_model.bin or a sharded index of them); give the folder "
                             "that save_pretrained wrote")
