"""A contamination run's results: per source and k, the distribution of Min-K% Prob and Min-K%++
(mean, median, quartiles), the median gap between the first source and each other, and with
membership labels the ROC-AUC of each score (scikit-learn; a higher score = more likely seen)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, TypedDict

from ..records.contamination import ContaminationResults, Source, Summary
from ..records.samples import SCORES, ContaminationSample, Score

# results.json's ``sign``, by --min-k-sign
SIGNS = {"log-prob": "mean log-prob (<= 0); the TMLU paper reports its negation",
         "negated": "Min-K% Prob negated (>= 0, higher = less likely seen), as "
         "detect-pretrain-code and the TMLU paper; Min-K%++ is not negated"}
# (source, id) -> 1 member / 0 not; source None: the id in any source
Labels = dict[tuple[str | None, str], int]


def _describe(values: list[float]) -> Summary | None:
    if not values:
        return None
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive") \
        if len(values) > 1 else (values[0],) * 3
    return Summary.made({"n": len(values), "mean": statistics.fmean(values), "median": median,
                         "q25": q1, "q75": q3, "min": min(values), "max": max(values)})


def _one_source(mine: list[ContaminationSample], ks: list[str]) -> Source:
    ok = [s for s in mine if not s.failed]
    tokens = [s.n_tokens for s in ok if s.n_tokens is not None]  # every scored text's
    entry: dict[str, Any] = {"n": len(mine), "n_failed": len(mine) - len(ok),
                             "mean_tokens": statistics.fmean(tokens) if tokens else None}
    for score in SCORES:
        # Min-K%++ needs the distribution's moments: unavailable if any text lacks them.
        values = [v for s in ok if (v := s.scores(score)) is not None]
        have = ok and len(values) == len(ok)
        # a text --k-tokens floor leaves without a value at k is out of that k's summary
        entry[score] = {k: _describe([x for v in values if (x := v[k]) is not None])
                        for k in ks} if have else None
    return Source.made(entry)


def by_source(samples: Sequence[ContaminationSample], ks: list[str]) -> dict[str, Source]:
    """results.json's ``sources``: per source (in the --data order), its texts, failures and
    each score's summary per k."""
    return {source: _one_source([s for s in samples if s.source == source], ks)
            for source in dict.fromkeys(s.source for s in samples)}


def _gaps(sources: dict[str, Source], ks: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """Median of each other source minus the first's, per score and k (TMLU Table 3 reads the
    first source as the one tested for contamination: a lower median = more likely seen)."""
    names = list(sources)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for other in names[1:]:
        out[f"{other} - {names[0]}"] = {
            score: {k: bk.median - ak.median for k in ks
                    if (ak := a[k]) and (bk := b[k])
                    and ak.median is not None and bk.median is not None}
            for score in SCORES
            if (a := sources[names[0]].summaries(score)) and (b := sources[other].summaries(score))}
    return out


class RocAuc(TypedDict, total=False):
    """results.json's ``roc_auc``: the texts scored with a membership label, the members among
    them, and each score's ROC-AUC per k (None: a k or a score some text has no value for);
    ``note`` instead where one class is missing."""

    n: int
    n_members: int
    note: str
    min_k: dict[str, float | None] | None
    min_k_pp: dict[str, float | None] | None


def _roc_auc(samples: Sequence[ContaminationSample], ks: list[str],
             labels: Labels, sign: str = "log-prob") -> RocAuc:
    from sklearn.metrics import roc_auc_score

    def label(s: ContaminationSample) -> int | None:
        key = str(s.id)
        return labels.get((s.source, key), labels.get((None, key)))

    scored = [(s, y) for s in samples if not s.failed and (y := label(s)) is not None]
    gold = [y for _, y in scored]
    out = RocAuc(n=len(scored), n_members=sum(gold))
    if len(set(gold)) < 2:
        out["note"] = "needs both members and non-members among the scored texts"
        return out

    def per_k(score: Score) -> dict[str, float | None] | None:
        values = [v for s, _ in scored if (v := s.scores(score)) is not None]
        if len(values) < len(scored):
            return None
        # a k where a text has no value (--k-tokens floor): none, as sklearn refuses NaN
        # higher = more likely seen, whatever the sign printed: a negated Min-K% back to +
        flip = -1.0 if score == "min_k" and sign == "negated" else 1.0
        at_k = {k: [x for v in values if (x := v[k]) is not None] for k in ks}
        return {k: float(roc_auc_score(gold, [flip * x for x in xs]))
                if len(xs) == len(values) else None for k, xs in at_k.items()}

    out["min_k"], out["min_k_pp"] = per_k("min_k"), per_k("min_k_pp")
    return out


def summarise_contamination(samples: Sequence[ContaminationSample], ks: list[str],
                            labels: Labels | None, schema: str,
                            sign: str = "log-prob",
                            warnings: Sequence[str] = ()) -> ContaminationResults:
    """The run's results, ``warnings`` (what its data said) among them."""
    sources = by_source(samples, ks)
    failed = [s for s in samples if s.failed]
    return ContaminationResults.made({
        "schema": schema, "k": ks, "n_samples": len(samples), "n_failed": len(failed),
        "failed": [f"{s.source}/{s.id}" for s in failed], "sources": sources,
        "source_order": list(sources),  # the --data order (results.json sorts its keys)
        "median_gaps": _gaps(sources, ks), "sign": SIGNS[sign],
        **({"roc_auc": _roc_auc(samples, ks, labels, sign)} if labels is not None else {}),
        "warnings": list(warnings)})
