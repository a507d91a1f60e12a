"""Local Hugging Face encoder-decoder models (translation): ``hf-seq2seq:<hub id or folder>``.

It executes ``Generate`` requests: the prompt (a plain string) is the source text, the response
the decoded output. X-Guard's pipeline uses it to translate every prompt to English before the
guard sees it (panuthept/IRIS ``src/iris/model_wrappers/guard_models/x_guard.py``,
``XGuard.get_translation``: ``saillab/mbart-x-guard``, ``forced_bos_token_id`` = the ``en_XX``
language code, no other generation settings, so the checkpoint's own generation config, beam
size included, decides). ``target_lang`` names the token forced first (``None``: none is forced).
``source_lang`` is what the tokenizer's ``src_lang`` is set to before encoding: ``""`` by
default, as ``get_translation(source_text, src_lang="")`` sets it (mBART-50's tokenizer then
puts ``<unk>`` where the source language code goes); ``None`` keeps the tokenizer's own.
Texts are translated one at a time, so a result never depends on what else is in a batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import LocalevalError
from .base import Backend, Failed, Generate, Generated, Progress, Request, Response
from .config import BackendConfig
from .failures import Unsupported
from .options import HFSeq2SeqOptions

if TYPE_CHECKING:  # imported where the model loads (its import is slow)
    from transformers import BatchEncoding, PreTrainedTokenizerBase


class HFSeq2SeqBackend(Backend):
    Options = HFSeq2SeqOptions  # the options it takes (.options: --help reads them there)
    @classmethod
    def preflight(cls, target: str, config: BackendConfig) -> None:
        """The model folder or Hub repo exists, with config.json and weights."""
        from .hub import check_model_source

        check_model_source(target, config.revision, weights=True)

    def __init__(self, model: str, *, revision: str | None = None, device: str = "auto",
                 target_lang: str | None = "en_XX", max_source_tokens: int = 1024,
                 source_lang: str | None = ""):
        import torch
        import transformers

        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        # (transformers leaves this function unannotated)
        transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        self.torch, self.device = torch, torch.device(device)
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(model, revision=revision)
            self.model = transformers.AutoModelForSeq2SeqLM.from_pretrained(model,
                                                                           revision=revision)
        except (OSError, ValueError) as e:
            first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
            raise LocalevalError(f"cannot load translation model {model!r}: {first}") from None
        self.model.to(self.device).eval()
        self.forced_bos = self._language_token(target_lang)
        self.max_source_tokens, self.source_lang = max_source_tokens, source_lang
        self.identity = {"backend": "hf-seq2seq", "model": model,
                         "revision": revision or getattr(self.model.config, "_commit_hash", None),
                         "target_lang": target_lang, "source_lang": source_lang,
                         "device": self.device.type}

    def _language_token(self, lang: str | None) -> int | None:
        if lang is None:
            return None
        token = self.tokenizer.convert_tokens_to_ids(lang)
        if not isinstance(token, int) or token == self.tokenizer.unk_token_id:
            raise LocalevalError(f"the translation model's tokenizer has no {lang!r} token; "
                                 "pass target_lang=None or a language code it knows")
        return token

    def max_context(self) -> int | None:
        return self.max_source_tokens

    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> Sequence[Response]:
        out: list[Response] = []
        for i, request in enumerate(requests):
            answer = self._translate(request)
            out.append(answer)
            if progress:
                progress(i, answer)
        return out

    def _translate(self, request: Request) -> Response:
        if not isinstance(request, Generate) or not isinstance(request.prompt, str):
            return Failed(Unsupported("a seq2seq backend runs Generate requests on plain text"))
        if request.sample is not None:
            return Failed(Unsupported("a seq2seq backend decodes as its generation config says; "
                                      "it does not draw numbered samples"))
        enc = encode_source(self.tokenizer, request.prompt, self.source_lang,
                            self.max_source_tokens).to(self.device)
        extra = {"forced_bos_token_id": self.forced_bos} if self.forced_bos is not None else {}
        with self.torch.inference_mode():
            ids = self.model.generate(**enc, max_new_tokens=request.max_tokens, **extra)
        text = str(self.tokenizer.decode(ids[0], skip_special_tokens=True))
        return Generated(text=text, n_prompt_tokens=int(enc["input_ids"].shape[1]))


def encode_source(tokenizer: PreTrainedTokenizerBase, text: str, source_lang: str | None,
                  max_tokens: int) -> BatchEncoding:
    """The source text's tensors, after setting ``src_lang`` where the tokenizer has one (IRIS
    ``x_guard.py`` ``XGuard.get_translation``: ``src_lang=""``)."""
    if source_lang is not None and hasattr(tokenizer, "src_lang"):
        tokenizer.src_lang = source_lang
    encoded: BatchEncoding = tokenizer(text, return_tensors="pt", truncation=True,
                                       max_length=max_tokens)
    return encoded
