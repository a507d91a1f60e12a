"""Flags people bring from lm-evaluation-harness to ``localeval run`` (issue 69): one with the
same meaning as ours is taken as ours; one whose meaning differs is answered in one line
naming what does it here, never "unknown option" or "--task is required".

lm-eval's flags as its ``__main__.py`` declares them (EleutherAI/lm-evaluation-harness
``lm_eval/__main__.py``: ``--tasks``, ``--num_fewshot``, ``--output_path``, ``--batch_size``,
``--log_samples``, ``--apply_chat_template``, ``--fewshot_as_multiturn``), each also spelled
with dashes, as people type it either way."""

from __future__ import annotations

from ..errors import LocalevalError

# lm-eval's flag -> ours: the same meaning, taken as written
SAME: dict[str, str] = {
    "--num_fewshot": "--shots",  # examples before each question; ours take 0 to 5
    "--output_path": "--output",  # where a run's results go (a folder here)
    "--batch_size": "--batch-size",
}
# lm-eval's flag -> what does it here, when the meaning differs (the flag is refused)
POINTERS: dict[str, str] = {
    "--apply_chat_template": "--chat single (the model's chat template, few-shot in one user "
                             "turn) or --chat multi (one turn per shot)",
    "--fewshot_as_multiturn": "--chat multi (one chat turn per shot)",
}
# lm-eval's flags whose work a localeval run always does: noted and left out
ALWAYS = {"--log_samples": "every run writes each sample to samples.jsonl"}


def _spellings(table: dict[str, str]) -> dict[str, str]:
    """Each flag as lm-eval spells it (``--num_fewshot``) and with dashes (``--num-fewshot``)."""
    return {**table, **{k.replace("_", "-"): v for k, v in table.items()}}


def from_lm_eval(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` of ``localeval run`` with lm-eval's flags read as ours, and the notes to print
    (one line each). ``--tasks NAME`` is ``--task NAME``; ``--tasks a,b`` is refused (a run
    is one task here), as is a flag whose meaning differs, naming ours."""
    same, pointers, always = _spellings(SAME), _spellings(POINTERS), _spellings(ALWAYS)
    out: list[str] = []
    notes: list[str] = []
    words = iter(argv)
    for word in words:
        flag, eq, value = word.partition("=")
        if flag == "--tasks":
            value = value if eq else next(words, "")
            if "," in value or not value:
                raise LocalevalError(
                    f"--tasks {value}: a localeval run is one task, --task NAME (lm-eval's "
                    "--tasks takes a list): run each, and `localeval leaderboard --task NAME` "
                    "ranks their runs")
            out += ["--task", value]
        elif flag in same:
            out.append(same[flag] + eq + value)
        elif flag in pointers:
            raise LocalevalError(f"{flag} is lm-eval's; here: {pointers[flag]}")
        elif flag in always:
            notes.append(f"note: {flag} is lm-eval's and needs no flag here: {always[flag]}")
        else:
            out.append(word)
    return out, notes
