"""Tables of an LLM safety run, built from its typed results: per language and per subset, the
harmful-response rate on harmful prompts and the refusal rates, with their Wilson score 95%
intervals and counts; and the authors' App. D.2 layout."""

from __future__ import annotations

from rich.text import Text as RichText

from ..metrics.proportion import NAME
from ..records.llm_safety import D2Row, LLMSafetyResults, Rate, Rates
from ..render.table import DataTable, Estimate, Number, TableBuilder, columns

RATES = (("harmful_response_rate", "harmful responses\n(harmful prompts)"),
         ("refusal_rate_harmful", "refusals\n(harmful prompts)"),
         ("refusal_rate_safe", "over-refusals\n(safe prompts)"))


def _cell(rate: Rate) -> Estimate:
    return Estimate(rate.rate, rate.low, rate.high, rate.n)


def _table(title: str, rows: dict[str, Rates]) -> DataTable:
    table = TableBuilder(title, columns("", *(h for _, h in RATES), "failed", "refusal\nunknown"),
                         f"% [95% CI: {NAME}] (n = responses it is over).")
    for name, r in rows.items():
        table.add(name, *(_cell(rate) for rate in r.rates()), r.n_failed,
                  r.n_refusal_unknown)
    return table.build()


GOLD = ("safe", "sensitive", "harmful")
SUBSET_NAMES = {"general": "General", "cultural-itw": "Cultural ITW", "cultural-cg": "Cultural CG"}


def d2_layout_table(results: LLMSafetyResults) -> DataTable | None:
    """The authors' App. D.2 layout: refusal and safe-response rates (% of responses) by the
    prompt's gold label, per subset and side, then each side's mean over subsets."""
    d2 = results.d2
    if d2 is None or not d2.rows:
        return None
    table = TableBuilder("App. D.2 layout: % of responses refused / judged safe, by the "
                         "prompt's gold label",
                         columns("", *(f"{rate}\n{gold}" for rate in ("refused", "safe response")
                                       for gold in GOLD)))
    for row in d2.rows:
        table.add(f"{SUBSET_NAMES.get(row.subset, row.subset)} {row.side.upper()}",
                  *(Number(None if rate is None else rate.rate, scale=100)
                    for rate in _by_gold(row)))
    for side, cells in d2.average.items():
        table.add(f"Average {side.upper()}", *(Number(cells.get(g, {}).get(k), scale=100)
                                               for k in ("refusal", "safe_response")
                                               for g in GOLD))
    return table.build()


def _by_gold(row: D2Row) -> list[Rate | None]:
    """A D.2 row's cells: refusal per gold label, then safe response per gold label (None: no
    prompt of the label)."""
    rates = [row.rates.get(g) for g in GOLD]
    return ([None if r is None else r.refusal for r in rates]
            + [None if r is None else r.safe_response for r in rates])


def llm_safety_tables(results: LLMSafetyResults) -> list[DataTable]:
    tables = [_table(f"LLM safety, judged by {results.judge} (harmful = P(harmful) > "
                     f"{results.threshold:g}); % with Wilson 95% CI",
                     {"all": results.overall, **results.by_lang})]
    if len(results.by_subset) > 1:
        tables.append(_table("By subset", results.by_subset))
    d2 = d2_layout_table(results)
    return tables + ([d2] if d2 else [])


def llm_safety_notes(results: LLMSafetyResults) -> list[RichText]:
    how = {"judge": "the authors' LLM refusal judge", "detector": "rule-based detector"}
    return [RichText(f"{results.n_samples} responses ({results.responses_per_prompt} per "
                     f"prompt); {results.n_failed} failed (left out, never counted as safe or "
                     f"refused). Refusals: {how.get(results.refusal, results.refusal)} "
                     "(docs/fidelity.md).")] + _safeguard_note(results)


def _safeguard_note(results: LLMSafetyResults) -> list[RichText]:
    """Which D.2 variant ran: the prompt guard, its mode, refined responses and drops."""
    sg = results.safeguard
    if not sg:
        return []
    refine = {"none": "no refinement", "iris": "harmful responses refined, dropped when the "
              "prompt was called harmful (IRIS)", "all": "harmful responses refined"}
    return [RichText(f"With safeguard {sg.name} ({sg.mode}): "
                     f"{refine.get(sg.refine, sg.refine)}; {results.n_dropped} "
                     "responses dropped (out of every rate).")]
