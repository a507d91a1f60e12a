"""LionGuard 2 (GovTech Singapore, ``govtech/lionguard-2``) as SEA-SafeguardBench's code runs it:
an OpenAI embedding of the text fed to LionGuard 2's classifier head.

IRIS ``src/iris/model_wrappers/guard_models/lion_guard.py`` ``LionGuard2``: the prompt (for
prompt classification) or the response alone (for response classification) is embedded with
``text-embedding-3-large`` (3,072 dimensions), the head's ``predict`` gives per-category
probabilities, and ``parse_label`` takes ``results["binary"][0]`` as P(harmful). Any error
there becomes "Safe" with P(harmful) 0.0 (``--on-failure iris`` does the same).

The head. On the Hub it loads through remote code (``trust_remote_code``, the checkpoint's
``lionguard2.py``), which is neither fetched nor run here: we load its ``config.json``
(``input_dim``, ``categories``, ``category_order``) and weights (``model.safetensors`` or
``pytorch_model.bin``) ourselves and compute the same network, as that file's
``LionGuard2.forward`` defines it: shared layers Linear(input_dim, 256), ReLU, Dropout,
Linear(256, 128), ReLU, Dropout; per category a head Linear(128, 32), ReLU, Linear(32, 2),
Sigmoid (two ordinal thresholds); ``predict`` reads column 0 of a category's head for its
level-1 label (``binary`` has only that). Dropout is off at inference. ``head=`` names a Hub
repo (downloaded once into the Hub cache) or a local folder in the same layout.

Not to be confused with ``embedding:<file>``, our trainable look-alike (one logistic-regression
head on any embedder, :mod:`.embedding`).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..backends.base import Embed, Embedding, Response, error_of
from ..backends.base import Executor as Execute
from ..backends.failures import RequestFailure
from ..backends.reply_checks import number_problem
from ..errors import LocalevalError
from .base import UNREAD, Conversation, Guard, GuardVerdict, IrisFailure, Unread
from .options import LionGuard2Options

HEAD = "govtech/lionguard-2"
EMBEDDER = "openai-embed:text-embedding-3-large"
WIDTHS = (256, 128, 32, 2)  # lionguard2.py LionGuard2.__init__: the layer sizes after input_dim


def _head_folder(head: str) -> Path:
    """A local folder as given, else the Hub repo's config and weights (cached once)."""
    folder = Path(head).expanduser()
    if folder.is_dir():
        return folder
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(head, allow_patterns=["config.json", "*.safetensors",
                                                             "pytorch_model.bin"]))
    except Exception as e:  # noqa: BLE001 - any Hub failure is one line naming the head
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise LocalevalError(f"cannot load the LionGuard 2 head {head!r} (a Hub repo or a "
                             f"folder with config.json and model.safetensors): {first}") from None


def _config(folder: Path) -> tuple[int, list[str]]:
    """(input_dim, category_order) from config.json, checked."""
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise LocalevalError(f"{path}: cannot read the head's config ({e})") from None
    dim, order = config.get("input_dim"), config.get("category_order")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise LocalevalError(f"{path}: input_dim must be a positive integer, not {dim!r}")
    if not isinstance(order, list) or "binary" not in order or \
            not all(isinstance(c, str) for c in order):
        raise LocalevalError(f"{path}: category_order must be a list of names with 'binary', "
                             f"not {order!r}")
    return dim, order


def _weights(folder: Path) -> dict[str, np.ndarray]:
    """The head's tensors as float32 arrays, from model.safetensors (any float dtype, bf16 too)
    or pytorch_model.bin (loaded with ``weights_only``: a pickle that would run code is
    refused); a damaged or foreign file is one line naming it."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        path = folder / name
        if path.exists():
            try:
                state = _tensors(path)
            except pickle.UnpicklingError:
                raise LocalevalError(f"{path}: refused: its pickle holds more than tensors (it "
                                     "could run code when loaded); convert the head to "
                                     "safetensors") from None
            except Exception as e:  # noqa: BLE001 — safetensors, torch and pickle raise many kinds
                first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
                raise LocalevalError(f"{path}: not a readable weights file ({first})") from None
            return _as_arrays(path, state)
    raise LocalevalError(f"{folder}: no model.safetensors or pytorch_model.bin for the head")


def _tensors(path: Path) -> object:
    import torch

    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    return torch.load(path, map_location="cpu", weights_only=True)


def _as_arrays(path: Path, state: object) -> dict[str, np.ndarray]:
    """A state dict of tensors, each as float32: anything else is refused, naming the entry."""
    import torch

    if not isinstance(state, dict):
        raise LocalevalError(f"{path}: holds a {type(state).__name__}, not a state dict of "
                             "tensors")
    arrays = {}
    for key, value in state.items():
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            shown = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
            raise LocalevalError(f"{path}: entry {key!r} is {shown}, not a float tensor")
        arrays[str(key)] = value.float().numpy()
    return arrays


class LionGuard2Head:
    """The classifier head from a checkpoint in the Hub's layout; ``binary(x)`` is P(unsafe)."""

    def __init__(self, folder: Path):
        self.input_dim, order = _config(folder)
        weights = _weights(folder)
        shared = [("shared_layers.0", self.input_dim, WIDTHS[0]),
                  ("shared_layers.3", WIDTHS[0], WIDTHS[1])]
        k = order.index("binary")
        head = [(f"output_heads.{k}.0", WIDTHS[1], WIDTHS[2]),
                (f"output_heads.{k}.2", WIDTHS[2], WIDTHS[3])]
        self.layers = [_linear(weights, name, n_in, n_out, folder) for name, n_in, n_out in
                       shared + head]

    def binary(self, x: np.ndarray) -> np.ndarray:
        h = x.astype(np.float32)
        for i, (w, b) in enumerate(self.layers):
            h = h @ w.T + b
            if i < len(self.layers) - 1:
                h = np.maximum(h, 0.0)  # ReLU (dropout is off at inference)
        return 1.0 / (1.0 + np.exp(-h[:, 0]))  # Sigmoid of the first ordinal threshold


def _linear(weights: dict[str, np.ndarray], name: str, n_in: int, n_out: int,
            folder: Path) -> tuple[np.ndarray, np.ndarray]:
    w, b = weights.get(f"{name}.weight"), weights.get(f"{name}.bias")
    if w is None or b is None:
        raise LocalevalError(f"{folder}: the weights have no {name}.weight / {name}.bias "
                             "(not a LionGuard 2 head?)")
    if w.shape != (n_out, n_in) or b.shape != (n_out,):
        raise LocalevalError(f"{folder}: {name} is {tuple(w.shape)} + {tuple(b.shape)}, "
                             f"expected ({n_out}, {n_in}) + ({n_out},)")
    if not (np.isfinite(w).all() and np.isfinite(b).all()):
        raise LocalevalError(f"{folder}: {name} holds values that are not finite")
    return w.astype(np.float32), b.astype(np.float32)


class LionGuard2(Guard):
    name = "lionguard2"
    template_source = ("IRIS guard_models/lion_guard.py LionGuard2 (text-embedding-3-large, "
                       "govtech/lionguard-2's head, loaded from its config and weights)")
    verdict_position = "the head's binary output (results['binary'][0])"
    model = EMBEDDER

    Options = LionGuard2Options

    def __init__(self, options: LionGuard2Options | None = None):
        o = options or LionGuard2Options()
        super().__init__(o)
        self.head_name = o.head
        self.head = LionGuard2Head(_head_folder(o.head))

    def classify(self, conversations: Sequence[Conversation],
                 execute: Execute) -> list[GuardVerdict]:
        texts = [c.response if c.response is not None else c.prompt for c in conversations]
        return [self._verdict(r) for r in execute([Embed(t) for t in texts])]

    def _verdict(self, response: Response) -> GuardVerdict:
        if not isinstance(response, Embedding):
            return GuardVerdict(None, f"embedding failed: {error_of(response) or 'no vector'}")
        vector = response.embedding
        if len(vector) != self.head.input_dim:
            return GuardVerdict(None, f"the embedding has {len(vector)} dimensions; the head "
                                      f"takes {self.head.input_dim}")
        score = float(self.head.binary(np.array([vector]))[0])
        problem = number_problem(score, at_least=0, at_most=1)
        return GuardVerdict(None, f"the head's score {problem}") if problem \
            else GuardVerdict(score)

    def iris_failure(self, error: str, response: bool = False,
                     cause: RequestFailure | None | Unread = UNREAD) -> IrisFailure:
        """IRIS ``LionGuard2.predict`` catches every exception as Safe: P(harmful) 0.0."""
        return "safe"
