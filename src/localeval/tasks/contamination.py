"""Contamination test (TMLU §5.1, App. B): Min-K% Prob (Shi et al. 2023) and Min-K%++ (Zhang
et al. 2024) of each text, compared across datasets.

Texts. ``data`` is a list of sources, each a built-in or local multiple-choice dataset (its test
split; the text is the question, then each option on its own line as ``A. …``, as the TMLU
paper's App. B builds it) or a JSONL/CSV of ``id`` + ``text``. ``sample`` draws that many texts
per source (seeded; a source with fewer texts gives all it has, and the run warns with the
real n: a multiple-choice source has one text per test question); ``drop_longest`` then drops
that share of the longest texts (characters) within each subject, the paper's length filter
(the paper gives no share: 0 = off).

Scores. One ``TextLogprobs`` request per text (tokenizer defaults). Over the log-probs of every
token after the first (n of them): ``min_k[k]`` = the mean of the ⌊k% · n⌋ (at least 1) lowest
log-probs, a number ≤ 0, higher = more likely seen in training (the TMLU paper and Shi et al.'s
code report its negation); ``min_k_pp[k]`` the same over the standardised values
(log p − μ) / σ of each position's next-token distribution (zjysteven/mink-plus-plus
``run.py``), null where the backend cannot give μ and σ (an HTTP server): never approximated.

Results: per source and k the mean, median and quartiles; with ``members`` (a CSV/JSONL of
``id``, optional ``source``, and ``member`` 1/0) the ROC-AUC of each score.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..backends.base import Backend, Response, TextLogprobs, TokenLogprobs, error_of
from ..data.catalog import BUILTIN_TASKS
from ..data.items import LETTERS
from ..data.rows import read_rows
from ..errors import DataError, LocalevalError
from ..records.contamination import SCHEMA as CONTAMINATION_SCHEMA
from ..records.contamination import ContaminationResults
from ..records.samples import ContaminationSample
from .base import Task
from .contamination_options import ContaminationOptions, KTokens, MinKSign
from .options import SpecParts, make_options


@dataclass(frozen=True)
class Text:
    id: str
    source: str
    subject: str | None
    text: str

    @property
    def request(self) -> TextLogprobs:
        return TextLogprobs(self.text)


class ContaminationData(list[Text]):
    """What loading found: the texts (this list), membership labels by (source, id) when
    given, and what the run should warn about."""

    def __init__(self, texts: list[Text], labels: dict[tuple[str | None, str], int] | None,
                 warnings: list[str] | None = None):
        super().__init__(texts)
        self.labels = labels
        self.warnings = warnings or []


def mcq_text(question: str, options: Sequence[str]) -> str:
    """The question and its options, one per line as ``A. …`` (TMLU App. B)."""
    return "\n".join([question, *(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))])


def min_k(values: Sequence[float], k: float, k_tokens: KTokens = "at-least-1") -> float | None:
    """Mean of the ⌊k% · n⌋ lowest values (at least 1 with ``at-least-1``); None where ``floor``
    leaves no value (swj0419/detect-pretrain-code src/run.py and zjysteven/mink-plus-plus
    run.py: ``int(len * ratio)`` values, whose mean is then NaN)."""
    count = math.floor(k / 100 * len(values))
    if count == 0 and k_tokens == "floor":
        return None
    return statistics.fmean(sorted(values)[:max(1, count)])


def _signed(value: float | None, sign: MinKSign) -> float | None:
    """detect-pretrain-code src/run.py reports ``-np.mean(topk_prob)``."""
    return -value if value is not None and sign == "negated" else value


class ContaminationTask(Task):
    results_schema = CONTAMINATION_SCHEMA
    Options = ContaminationOptions
    command = "contamination"
    progress_unit = "texts"
    rate_unit = "texts"

    def __init__(self, name: str = "contamination", **options: Any):
        self.name = name
        self.options = make_options(ContaminationOptions, name, options)
        self.sources = [str(d) for d in self.options.data]  # as config.json records them

    # ---------------------------------------------------------------- items
    def load(self) -> ContaminationData:
        texts: list[Text] = []
        warnings: list[str] = []
        o = self.options
        names = [_source_name(d) for d in self.sources]
        if len(set(names)) != len(names):
            raise LocalevalError(f"--data sources must have distinct names, got {names}")
        for spec, name in zip(self.sources, names, strict=True):
            source = _read_source(spec, name, o.dataset_revision)
            if o.sample is not None and o.sample > len(source):
                warnings.append(_short_source(name, len(source), o.sample))
            chosen = _sampled(source, o.sample, o.seed)
            texts += _drop_longest(chosen, o.drop_longest)
        labels = _read_members(Path(o.members)) if o.members else None
        return ContaminationData(texts, labels, warnings)

    def plan(self, data: ContaminationData, backend: Backend) -> list[Text]:
        return list(data)

    def shard_key(self, planned: Text) -> str:
        return str(planned.id)  # a text is its own item

    def score(self, planned: Text, answer: Response) -> ContaminationSample:
        # each sample made whole by its constructor, so validated (model_copy's update is not)
        def sample(**scored: Any) -> ContaminationSample:
            return ContaminationSample(id=planned.id, source=planned.source,
                                       subject=planned.subject, n_chars=len(planned.text),
                                       **scored)

        if not isinstance(answer, TokenLogprobs):
            return sample(n_tokens=None, min_k=None, min_k_pp=None, failed=True,
                          error=error_of(answer) or "no log-probs")
        values, o = answer.token_logprobs, self.options
        if not values:
            return sample(n_tokens=0, min_k=None, min_k_pp=None, failed=True,
                          error="the text is a single token: no token has a context to score")
        return sample(n_tokens=len(values),
                      min_k={_key(k): _signed(min_k(values, k, o.k_tokens), o.min_k_sign)
                             for k in o.k},
                      min_k_pp=_min_k_pp(values, answer, o.k, o.k_tokens))

    def summarise(self, samples: Sequence[ContaminationSample], data: ContaminationData,
                  identity: dict[str, Any]) -> ContaminationResults:
        from ..analysis.contamination import summarise_contamination

        return summarise_contamination(samples, [_key(k) for k in self.options.k], data.labels,
                                       self.results_schema, sign=self.options.min_k_sign,
                                       warnings=data.warnings)

    def spec_parts(self, data: ContaminationData) -> SpecParts:
        """Its options as run, its sources as given (no protocol revision: one protocol)."""
        return SpecParts(replace(self.options, k=list(self.options.k)),
                         source=list(self.sources), protocol=None)


def _short_source(name: str, n: int, sample: int) -> str:
    """The warning for a source with fewer texts than ``--sample`` asks for (not an error: the
    paper's 2000 is more than many subjects' test splits hold)."""
    return (f"--sample {sample}: {name} has only {n} texts (a multiple-choice dataset gives one "
            f"per test question), so all {n} are used: n = {n}, not {sample}")


def _key(k: float) -> str:
    return f"{k:g}"


def _min_k_pp(values: list[float], answer: TokenLogprobs, ks: Sequence[float],
              k_tokens: KTokens) -> dict[str, float | None] | None:
    means, stds = answer.token_means, answer.token_stds
    if not means or not stds or len(means) != len(values) or any(s <= 0 for s in stds):
        return None  # the backend gave no moments (or a degenerate distribution)
    standard = [(v - m) / s for v, m, s in zip(values, means, stds, strict=True)]
    return {_key(k): min_k(standard, k, k_tokens) for k in ks}


# ---------------------------------------------------------------- sources
def _source_name(spec: str) -> str:
    path = Path(spec)
    return path.stem if path.exists() else spec


def _read_source(spec: str, name: str, revision: str | None) -> list[Text]:
    path = Path(spec)
    if path.is_file() and path.suffix.lower() in (".jsonl", ".csv"):
        rows = list(read_rows(path))
        if rows and "text" in rows[0][1]:
            return _plain_texts(path, name, rows)
    if not path.exists() and spec not in BUILTIN_TASKS:
        raise LocalevalError(f"--data {spec}: no such file or folder, and not a built-in "
                             f"dataset ({', '.join(BUILTIN_TASKS)})")
    from ..data.mcq_loaders import load_mcq_data

    _, splits = load_mcq_data(spec if spec in BUILTIN_TASKS else name,
                              None if spec in BUILTIN_TASKS else path, None, revision)
    texts = []
    for subject, by_split in sorted(splits.items()):
        items = by_split.get("test") or [i for split in by_split.values() for i in split]
        texts += [Text(i.id, name, subject, mcq_text(i.question, i.options)) for i in items]
    return texts


def _plain_texts(path: Path, name: str, rows: Sequence[tuple[int, dict[str, Any]]]
                 ) -> list[Text]:
    texts: list[Text] = []
    seen: set[str] = set()
    for number, row in rows:
        text, key = row.get("text"), str(row.get("id", number))
        if not isinstance(text, str) or not text:
            raise DataError(str(path), number, "text", "empty or not a string")
        if key in seen:
            raise DataError(str(path), number, "id", f"duplicate id {key!r}")
        seen.add(key)
        subject = row.get("subject")
        texts.append(Text(key, name, str(subject) if subject else None, text))
    return texts


def _sampled(texts: list[Text], n: int | None, seed: int) -> list[Text]:
    if n is None or n >= len(texts):
        return texts
    return random.Random(seed).sample(texts, n)


def _drop_longest(texts: list[Text], share: float) -> list[Text]:
    """Without the longest ⌊share · n⌋ texts (characters) of each subject, in the input order."""
    if not share:
        return texts
    by_subject: dict[str | None, list[Text]] = {}
    for t in texts:
        by_subject.setdefault(t.subject, []).append(t)
    dropped = set()
    for group in by_subject.values():
        longest = sorted(group, key=lambda t: (-len(t.text), t.id))
        dropped |= {id(t) for t in longest[: math.floor(share * len(group))]}
    return [t for t in texts if id(t) not in dropped]


def _read_members(path: Path) -> dict[tuple[str | None, str], int]:
    labels = {}
    for number, row in read_rows(path):
        if "id" not in row or "member" not in row:
            raise DataError(str(path), number, None, "needs columns id and member (1/0)")
        value = str(row["member"]).strip().lower()
        if value not in ("1", "0", "true", "false"):
            raise DataError(str(path), number, "member", f"{row['member']!r} is not 1/0/true/false")
        source = str(row["source"]) if row.get("source") else None
        labels[(source, str(row["id"]))] = int(value in ("1", "true"))
    return labels
