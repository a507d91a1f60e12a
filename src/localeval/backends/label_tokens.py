"""How the openai backend finds a ScoreNext candidate among a server's top log-probs: by the
text of the candidate's **first token**, as the hf backend scores a candidate (its first token)
and as IRIS keys its labels ("Harm"/"H" for GPT-4o and Llama-3.1, " Cont" for Qwen3Guard). A
label the served vocabulary splits ("Harmful" = "Harm" + "ful") is then still found.

A server names each top token by that one token decoded alone: vLLM by ``tokenizer.decode([id])``
(vllm ``transformers_utils/detokenizer_utils.py`` ``convert_ids_list_to_tokens``),
llama-cpp-python by ``detokenize([id]).decode("utf-8", errors="ignore")`` (``llama_cpp/llama.py``
``Llama._create_completion``). So a candidate's first token is named the same way: the
candidate tokenised on its own, without what the empty text tokenises to (a BOS), its first id
decoded alone. Each distinct candidate is looked up once per backend.

Where the tokens come from is decided once, when the backend is made, and recorded in its
identity as ``label_tokens`` (config.json, and the cache key: another source never reuses
cached scores):

- ``tokenizer:<name>``: the tokenizer the user names (``--tokenizer``, a Hub name or a folder,
  loaded with transformers). Named explicitly, it wins over the server's: the user asked for it.
- ``server token ids``: else, on vLLM, its ``/tokenize`` gives each candidate's first token id,
  and the scoring request asks for ``return_tokens_as_token_ids`` (vLLM's extension,
  entrypoints/openai ``CompletionRequest``), so its top log-probs are keyed ``token_id:<id>``
  and a candidate is found by its id: exact even where the first token is a byte of a Thai or
  Chinese character, which a text name cannot tell apart from other such bytes.
- ``server``: else llama-cpp-python's ``/extras/tokenize`` and ``/extras/detokenize`` (at the
  root, without ``/v1``), the first token named by its decoded text. Both servers use the
  served model's tokenizer by construction.
- ``whole text``: else a candidate is looked up by its whole text (a split one is never found).

A request fails alone, with the reason, when two of its candidates share a first token (one
position cannot tell them apart, as on the hf backend), when a candidate's first token is a
byte of a character (servers name all such tokens "" or "\ufffd"), or when the server's tokenize
call for one of its candidates failed (after the backend's retries).

Limits: the candidate is tokenised alone, not after the prompt (the hf backend tokenises it in
context). For SmolLM2's byte-level BPE the two agree on "Harmful", "Safe", " A"; a tokenizer
that merges a candidate with the text before it, or that puts a space before a text of its own
(SentencePiece), can name another token than the one the model would generate there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import LocalevalError
from .async_http import join_url, public_url

WHOLE_TEXT = "whole text"
PROBE_TEXT = "Hi"

# Each (url, JSON body) posted once (with the backend's retries): the reply's JSON, or why not.
Post = Callable[[list[tuple[str, dict[str, Any]]]], Sequence[object]]


class LabelTokenError(LocalevalError):
    """A ScoreNext whose candidates cannot be read at one position; it fails alone.
    ``permanent``: a rerun fails the same way (not so when the server's tokenize call failed)."""

    def __init__(self, message: str, permanent: bool = True):
        super().__init__(message)
        self.permanent = permanent


class WholeText:
    """No tokenizer known: a candidate is looked up by its whole text (the behaviour before)."""

    source = WHOLE_TEXT
    token_ids = False  # True: names are "token_id:<id>", the request must ask for ids

    def prepare(self, candidates: Iterable[str]) -> None:
        pass

    def names(self, candidates: Sequence[str]) -> dict[str, str]:
        return {c: c for c in candidates}


class FirstTokens(WholeText):
    """A candidate is looked up by its first token's text; subclasses find that text."""

    def __init__(self) -> None:
        # candidate -> its first token's text, or why it has none a server could name
        self.first: dict[str, str | LabelTokenError] = {}

    def first_tokens(self, texts: list[str]) -> list[str | None | LabelTokenError]:
        """Each text's first token decoded alone (None: the text has no tokens)."""
        raise NotImplementedError

    def prepare(self, candidates: Iterable[str]) -> None:
        """Every candidate not seen yet, looked up in one go (a server: two round trips)."""
        new = sorted(set(candidates) - set(self.first))
        if new:
            self.first.update(zip(new, map(_usable, new, self.first_tokens(new)), strict=True))

    def names(self, candidates: Sequence[str]) -> dict[str, str]:
        """Each candidate's first token's text; LabelTokenError when the request they belong to
        cannot be read at one position."""
        self.prepare(candidates)
        out = {}
        for c in candidates:
            name = self.first[c]
            if isinstance(name, LabelTokenError):
                raise LabelTokenError(str(name), name.permanent)
            out[c] = name
        if len(set(out.values())) < len(out):
            raise LabelTokenError(f"candidates {tuple(candidates)} share a first token; "
                                  "ScoreNext reads one position")
        return out


def _usable(candidate: str, name: str | None | LabelTokenError) -> str | LabelTokenError:
    if name is None:
        return LabelTokenError(f"candidate {candidate!r} has no tokens")
    if isinstance(name, str) and (not name or "\ufffd" in name):
        # a byte of a character (CJK, Thai under byte-level BPE): servers name such tokens
        # "" or "\ufffd", so several tokens share the name and none can be told apart
        return LabelTokenError(f"the first token of candidate {candidate!r} is part of a "
                               f"character ({name!r}); a server's top log-probs cannot name it")
    return name


class NamedTokenizer(FirstTokens):
    def __init__(self, name: str):
        super().__init__()
        from transformers import AutoTokenizer

        try:
            self.tok = AutoTokenizer.from_pretrained(name)
        except (OSError, ValueError) as e:
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise LocalevalError(f"--tokenizer {name!r} cannot be loaded: {reason}") from None
        self.source = f"tokenizer:{name}"

    def first_tokens(self, texts: list[str]) -> list[str | LabelTokenError | None]:
        ids = self.tok(texts, add_special_tokens=False)["input_ids"]
        return [str(self.tok.decode([t[0]])) if t else None for t in ids]


@dataclass(frozen=True)
class Endpoints:
    """A server's tokenize and detokenize routes (under its root) and their JSON fields."""

    tokenize: str
    text_field: str  # of the tokenize body
    detokenize: str
    decoded_field: str  # of the detokenize reply
    extra: dict[str, Any] = field(default_factory=dict)  # more of the tokenize body
    by_id: bool = False  # the server can key its top log-probs by token id


# vLLM: entrypoints/openai/api_server.py (tokenize, detokenize); no BOS asked for.
VLLM = Endpoints("/tokenize", "prompt", "/detokenize", "prompt", {"add_special_tokens": False},
                 by_id=True)
# llama-cpp-python: llama_cpp/server/app.py (tokenize, detokenize); it adds the model's BOS
# (where its vocabulary asks for one), which the empty text's tokens remove again.
LLAMA_CPP = Endpoints("/extras/tokenize", "input", "/extras/detokenize", "text")


class ServerTokens(FirstTokens):
    source = "server"

    def __init__(self, post: Post, root: str, model: str, api: Endpoints):
        super().__init__()
        self.post, self.root, self.model, self.api = post, root, model, api
        self.lead: list[int] | None = None  # what the empty text tokenises to (a BOS, or none)
        self.token_ids = api.by_id
        self.source = "server token ids" if api.by_id else "server"

    @classmethod
    def probe(cls, post: Post, root: str, model: str) -> ServerTokens | None:
        """The first of vLLM's and llama-cpp-python's endpoints that tokenise and detokenise a
        short text on this server; None when neither does (any failure counts as absent)."""
        for api in (VLLM, LLAMA_CPP):
            tokens = cls(post, root, model, api)
            (ids,) = tokens.tokenize([PROBE_TEXT])
            if isinstance(ids, list) and ids and \
                    isinstance(tokens.detokenize(ids[-1:], [PROBE_TEXT])[0], str):
                return tokens
        return None

    def first_tokens(self, texts: list[str]) -> list[str | None | LabelTokenError]:
        if self.lead is None:
            (lead,) = self.tokenize([""])
            if isinstance(lead, LabelTokenError):  # asked again with the next new candidate
                return [lead] * len(texts)
            self.lead = lead
        n = len(self.lead)
        firsts: list[list[int] | LabelTokenError] = []  # [its first id], [] (none), or why not
        for ids in self.tokenize(texts):
            if isinstance(ids, list):
                ids = (ids[n:] if ids[:n] == self.lead else ids)[:1]
            firsts.append(ids)
        named = [(f[0], t) for f, t in zip(firsts, texts, strict=True) if isinstance(f, list) and f]
        names = iter(self.name_ids([i for i, _ in named], [t for _, t in named]))
        return [f if isinstance(f, LabelTokenError) else next(names) if f else None
                for f in firsts]

    def name_ids(self, ids: list[int], texts: list[str]) -> list[str | LabelTokenError]:
        """How the server's top log-probs will name each id: by id where it can, else its text."""
        if self.token_ids:
            return [f"token_id:{i}" for i in ids]
        return self.detokenize(ids, texts)

    def tokenize(self, texts: list[str]) -> list[list[int] | LabelTokenError]:
        url = join_url(self.root, self.api.tokenize)
        bodies = [{"model": self.model, self.api.text_field: t, **self.api.extra} for t in texts]
        return [ids if isinstance(ids, LabelTokenError) else [int(i) for i in ids]
                for ids in self._ask(url, texts, bodies, "tokens", list)]

    def detokenize(self, ids: list[int], texts: list[str]) -> list[str | LabelTokenError]:
        """Each id decoded alone (the first token of the matching one of ``texts``)."""
        url = join_url(self.root, self.api.detokenize)
        bodies = [{"model": self.model, "tokens": [i]} for i in ids]
        return self._ask(url, texts, bodies, self.api.decoded_field, str)

    def _ask(self, url: str, asked: list[Any], bodies: list[dict[str, Any]], key: str,
             kind: type) -> list[Any]:
        """Each body's reply field ``key`` (of type ``kind``), or a LabelTokenError naming the
        text ``asked`` about and why (the requests of that candidate fail alone, with it)."""
        out = []
        for what, reply in zip(asked, self.post([(url, b) for b in bodies]), strict=True):
            value = reply.get(key) if isinstance(reply, dict) else None
            if not isinstance(value, kind):
                why = reply if isinstance(reply, str) else f"no {key!r} in its reply"
                # the endpoint as any URL is named: a gateway's ?api-key= in --base-url is
                # kept on every call, and this message on each sample of the candidate
                value = LabelTokenError(f"the server's {public_url(url)} failed for "
                                        f"candidate {what!r}, needed to find its first token "
                                        f"({why})", permanent=False)
            out.append(value)
        return out


def label_tokens(tokenizer: str | None, post: Post, root: str, model: str) -> WholeText:
    """The source of label tokens for a backend (module docstring: the order and why)."""
    if tokenizer:
        return NamedTokenizer(tokenizer)
    return ServerTokens.probe(post, root, model) or WholeText()
