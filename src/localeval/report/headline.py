"""A run's headline numbers as summary cards (the report's first section, and the comparison
table of several runs), chosen by the results' schema. They only read results.json."""

from __future__ import annotations

Card = tuple[str, str, bool]  # (value, what it is, whether it is bad news)


def headline(results: dict) -> list[Card]:
    """(value, what it is, whether it is bad news) cards for the summary."""
    schema = str(results.get("schema", ""))
    if schema.startswith("localeval.safety/"):
        cards = _safety_cards(results)
    elif schema.startswith("localeval.llm-safety/"):
        cards = _llm_safety_cards(results)
    elif schema.startswith("localeval.mcq/"):
        cards = _mcq_cards(results)
    else:
        cards = []
    failed = results.get("n_failed", 0)
    cards.append((str(results.get("n_samples", 0)), "samples", False))
    cards.append((str(failed), "failed (left out, never counted as right or safe)", failed > 0))
    if results.get("unanswered"):
        cards.append((str(len(results["unanswered"])), "no extractable answer (wrong)", True))
    return cards


def _mcq_cards(results: dict) -> list[Card]:
    metrics = results.get("metrics") or {}
    micro, avg = metrics.get("micro") or {}, metrics.get("discipline_average")
    cards = []
    if micro.get("acc") is not None:
        cards.append((f"{100 * micro['acc']:.2f}%", f"accuracy over {micro['n']} questions",
                      False))
    if avg is not None:
        cards.append((f"{100 * avg:.2f}%", "mean of the discipline columns", False))
    return cards


def _safety_cards(results: dict) -> list[Card]:
    cards = []
    for row in results.get("overall") or []:
        if row["subset"] == "all" and row.get("auprc") is not None:
            context = " (no prompt)" if row["context"] == "without_prompt" else ""
            cards.append((f"{100 * row['auprc']:.1f}", f"PR-AUC, {row['kind']}s{context}, "
                          f"n={row['n']}", False))
    return cards


def _llm_safety_cards(results: dict) -> list[Card]:
    overall = results.get("overall") or {}
    cards = []
    for key, what in (("harmful_response_rate", "harmful responses to harmful prompts"),
                      ("refusal_rate_harmful", "refusals of harmful prompts"),
                      ("refusal_rate_safe", "refusals of safe prompts (over-refusal)")):
        rate = overall.get(key) or {}
        if rate.get("rate") is not None:
            cards.append((f"{100 * rate['rate']:.1f}%", f"{what}, n={rate['n']}", False))
    return cards
