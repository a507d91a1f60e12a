"""Load multiple-choice questions from local files or the Hugging Face Hub into :class:`MCQItem`.

Local layouts understood (``subject`` is a file or folder name):
- ``dev/<subject>.csv`` + ``test/<subject>.csv`` (CMMLU; also .jsonl / .parquet)
- ``<subject>_dev.csv`` + ``<subject>_test.csv`` (TMMLU+ as published; ``train`` = few-shot pool)
- ``dev.jsonl`` + ``test.jsonl`` in a folder (one subject, named after the folder)
- a single file; rows may carry ``subject`` and ``split`` columns, else subject = file name, split = test

Columns: ``question``, options ``A``…``F`` (or a ``choices`` list), ``answer`` (letter or
0-based index), optional ``id``, ``explanation``; anything else (year, level, …) goes to metadata.
Column names are matched case-insensitively (CMMLU writes ``Question`` and ``Answer``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import DataError, LocalevalError
from .catalog import BUILTIN_TASKS, TaskSpec, custom_task, get_task
from .hub import check_dataset_source
from .items import LETTERS, MCQItem, validate_mcq
from .rows import TABLE_SUFFIXES, read_rows

# split name as written in files -> our name
SPLIT_ALIASES = {"dev": "dev", "train": "dev", "val": "val", "validation": "val", "test": "test"}
_CONSUMED = {"question", "answer", "id", "index", "explanation", "choices", "subject", "split",
             *[c.lower() for c in LETTERS], ""}

Splits = dict[str, list[MCQItem]]  # split name ("dev", "test", "val") -> items


def row_to_item(row: Mapping[str, Any], *, subject: str, split: str, file: str, number: int
                ) -> MCQItem:
    """Turn one raw row into a validated item, or raise DataError naming file, row and field."""
    cols = {str(k).strip().lower(): v for k, v in row.items()}
    for required in ("question", "answer"):
        if required not in cols:
            raise DataError(file, number, required, f"missing column '{required}'"
                            + _safety_file(cols))
    options = _options(cols, file, number)
    answer = cols["answer"]
    if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(options):
        answer = LETTERS[answer]
    answer = str(answer).strip().upper() if answer is not None else ""
    question = _question_text(cols["question"], file, number)
    problem = validate_mcq(question, tuple(options), answer)
    if problem:
        field, message = problem
        raise DataError(file, number, field, message + _missing_column(cols, answer))
    raw_id = cols.get("id", cols.get("index", cols.get("")))  # CMMLU: unnamed index column
    item_id = str(raw_id) if raw_id not in (None, "") else f"{split}-{number}"
    explanation = cols.get("explanation")
    metadata = {k: v for k, v in cols.items() if k not in _CONSUMED and v not in (None, "")}
    return MCQItem(
        id=f"{subject}/{item_id}",
        subject=subject,
        question=question,
        options=tuple(options),
        answer=answer,
        explanation=str(explanation) if explanation not in (None, "") else None,
        metadata=metadata,
    )


def _safety_file(cols: dict[str, Any]) -> str:
    """A file of safety prompts or completions given to a multiple-choice task: the task that
    reads it."""
    if "prompt" not in cols:
        return ""
    task = "safety-responses" if "completion" in cols else "sea-safeguard" if \
        "prompt_label" in cols else "safety-prompts" if "label" in cols else None
    if task is None:
        return ""
    return (f" (its columns: {', '.join(cols)}): it holds safety data, which --task {task} "
            "reads")


def _missing_column(cols: dict[str, Any], answer: str) -> str:
    """Why an answer is outside the options when its option column is missing from the file (a
    CSV without column D): say so, not only that the answer is not an option."""
    if answer in LETTERS and "choices" not in cols and answer.lower() not in cols:
        return f": the file has no column {answer}"
    return ""


def _question_text(question: Any, file: str, number: int) -> str:
    if isinstance(question, int | float) and not isinstance(question, bool):
        return str(question)  # a question that is a number ("1024") is still a question
    if question is not None and not isinstance(question, str):
        raise DataError(file, number, "question", f"the question is not text: {question!r}")
    return question or ""


def _options(cols: dict[str, Any], file: str, number: int) -> list[str]:
    if "choices" in cols and "a" not in cols:
        choices = cols["choices"]
        if not isinstance(choices, list | tuple):
            raise DataError(file, number, "choices", "must be a list of option texts")
        return [str(c) if c is not None else "" for c in choices]
    options: list[str] = []
    for letter in LETTERS:
        value = cols.get(letter.lower())
        if value is None or (isinstance(value, str) and value == ""):
            # An empty option is fine only if every later option is empty too (4- vs 5-option rows).
            later = [x for x in LETTERS[LETTERS.index(letter) + 1:] if cols.get(x.lower())]
            if later:
                raise DataError(file, number, letter, f"option {letter} is empty but "
                                f"option {later[0]} is not")
            break
        options.append(value if isinstance(value, str) else str(value))
    if not options:
        raise DataError(file, number, "A", "missing option columns A, B, … (or 'choices')")
    return options


def _load_file(path: Path, subject: str | None, split: str | None,
               rows_of: dict[tuple[str, str], tuple[Path, int]]) -> dict[str, Splits]:
    """The file's items; ``rows_of`` ((split, id) -> (file, row), shared by every file of a
    load) finds an id used twice in one split, in this file or another: runs are compared
    question by question, so an id is one question."""
    out: dict[str, Splits] = {}
    for number, row in read_rows(path):
        lowered = {str(k).strip().lower(): v for k, v in row.items()}
        subj = subject or str(lowered.get("subject") or path.stem)
        spl = split or SPLIT_ALIASES.get(str(lowered.get("split", "test")).lower())
        if spl is None:
            raise DataError(path, number, "split", f"unknown split {lowered.get('split')!r}; "
                            f"use one of {', '.join(SPLIT_ALIASES)}")
        item = row_to_item(row, subject=subj, split=spl, file=str(path), number=number)
        file, first = rows_of.setdefault((spl, item.id), (path, number))
        if (file, first) != (path, number):
            where = f"row {first}'s" if file == path else f"{file}, row {first}'s"
            raise DataError(path, number, "id", f"id {item.id!r} is also {where}; ids must be "
                            f"unique in a split (runs are compared question by question)")
        out.setdefault(subj, {}).setdefault(spl, []).append(item)
    return out


def _merge(into: dict[str, Splits], more: dict[str, Splits]) -> None:
    for subject, splits in more.items():
        for split, items in splits.items():
            into.setdefault(subject, {}).setdefault(split, []).extend(items)


def _tables(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in TABLE_SUFFIXES)


def load_local(path: str | Path, subjects: Iterable[str] | None = None) -> dict[str, Splits]:
    """Load a local file or folder in one of the layouts above. Returns subject -> split -> items."""
    path = Path(path)
    if not path.exists():
        raise LocalevalError(f"data path {path} does not exist; pass --data with a folder or file")
    wanted = set(subjects) if subjects else None
    files = _files(path)
    named = {subject for _, subject, _ in files if subject is not None}
    if wanted is not None and files and all(s is not None for _, s, _ in files):
        _check_subjects(path, wanted, named)  # every file names its subject: check before reading
    out: dict[str, Splits] = {}
    rows_of: dict[tuple[str, str], tuple[Path, int]] = {}
    for f, subject, split in files:
        if wanted is None or subject is None or subject in wanted:
            _merge(out, _load_file(f, subject, split, rows_of))
    out = _selected(path, out, wanted, named)
    if not out:
        _nothing_loaded(path, [f for f, _, _ in files])
    return out


def _nothing_loaded(path: Path, files: list[Path]) -> None:
    if files:
        raise DataError(files[0], None, None, "no questions: the file is empty or has only a "
                        "header row")
    raise LocalevalError(f"no question files (.csv, .jsonl, .parquet) found in {path}")


def _selected(path: Path, out: dict[str, Splits], wanted: set[str] | None,
              named: set[str]) -> dict[str, Splits]:
    if wanted is None:
        return out
    _check_subjects(path, wanted, set(out) | named)
    return {s: out[s] for s in out if s in wanted}


def _check_subjects(path: str | Path, wanted: set[str], available: set[str]) -> None:
    """Subjects asked for but not there: one line with the nearest names and the full list."""
    from difflib import get_close_matches

    missing = sorted(wanted - available)
    if not missing:
        return
    near = sorted({m for s in missing for m in get_close_matches(s, sorted(available), n=2)})
    hint = f"did you mean {', '.join(near)}? " if near else ""
    raise LocalevalError(f"subject(s) {', '.join(missing)} not found in {path}; {hint}"
                         f"available ({len(available)}): {', '.join(sorted(available)) or 'none'}")


def _files(path: Path) -> list[tuple[Path, str | None, str | None]]:
    """(file, subject, split) of each table under ``path``; None where the rows say it."""
    if path.is_file():
        return [(path, None, None)]
    split_dirs = [d for d in sorted(path.iterdir()) if d.is_dir() and d.name in SPLIT_ALIASES]
    if split_dirs:  # CMMLU layout: <split>/<subject>.csv
        beside = [f for f in _tables(path) if _subject_split(f.stem, path.name) != (None, None)]
        if beside:  # which layout is meant is a guess; one of them would be dropped unread
            raise LocalevalError(
                f"{path} holds split folders ({', '.join(d.name + '/' for d in split_dirs)}) "
                f"and question files beside them ({', '.join(f.name for f in beside[:3])}"
                f"{' …' if len(beside) > 3 else ''}); use one layout: <split>/<subject>.csv, "
                "or <subject>_<split>.csv in one folder")
        return [(f, f.stem, SPLIT_ALIASES[d.name]) for d in split_dirs for f in _tables(d)]
    return [(f, *_subject_split(f.stem, path.name)) for f in _tables(path)]


def _subject_split(stem: str, folder: str) -> tuple[str | None, str | None]:
    """``dev`` -> (the folder's name, dev); ``<subject>_test`` -> (subject, test)."""
    if stem.lower() in SPLIT_ALIASES:  # dev.jsonl + test.jsonl: one subject
        return folder, SPLIT_ALIASES[stem.lower()]
    if "_" in stem and stem.rsplit("_", 1)[1].lower() in SPLIT_ALIASES:
        subject, tail = stem.rsplit("_", 1)
        return subject, SPLIT_ALIASES[tail.lower()]
    return None, None


def load_hub(repo_id: str, subjects: Iterable[str], splits: dict[str, str],
             revision: str | None = None) -> dict[str, Splits]:
    """Load subjects (Hub configs) from a Hugging Face dataset repo.

    ``splits`` maps our split name to the repo's (e.g. ``{"dev": "train", "test": "test"}`` for
    TMMLU+). ``repo_id`` may also be a local folder in the same layout (a README with configs and
    data files), which is how the tests exercise this path.
    """
    check_dataset_source(repo_id)  # before datasets is imported: it reads the offline flag
    try:
        import datasets
    except ImportError as e:  # pragma: no cover - datasets is a dependency
        raise LocalevalError("the 'datasets' package is needed to load from the Hub") from e

    out: dict[str, Splits] = {}
    for subject in subjects:
        for ours, theirs in splits.items():
            where = f"hf://{repo_id}/{subject}/{theirs}"
            try:
                rows = datasets.load_dataset(repo_id, subject, split=theirs, revision=revision)
            except Exception as e:
                raise LocalevalError(
                    f"cannot load {where}: {type(e).__name__}: {str(e).splitlines()[0][:300]} "
                    "(check the dataset id, that you have accepted its terms and are logged in "
                    "with `hf auth login`, or pass --data with a local copy)") from None
            items = []
            for i, row in enumerate(rows, start=1):
                if not isinstance(row, Mapping):  # datasets yields each row as a dict
                    raise DataError(where, i, None, f"a {type(row).__name__}, not named columns")
                items.append(row_to_item(row, subject=subject, split=ours, file=where, number=i))
            out.setdefault(subject, {})[ours] = items
    return out


def load_mcq_data(task: str, data: str | Path | None, subjects: list[str] | None,
                  revision: str | None = None) -> tuple[TaskSpec, dict[str, Splits]]:
    """The task's metadata and its items: from a local path when given, else from the Hub."""
    if data is not None:
        loaded = load_local(data, subjects)
        spec = BUILTIN_TASKS.get(task) or custom_task(task, sorted(loaded))
        return spec, loaded
    spec = get_task(task)
    wanted = subjects or list(spec.subjects)
    _check_subjects(f"hf://{spec.hub_id}", set(wanted), set(spec.subjects))
    splits = {"dev": spec.dev_split, "test": spec.test_split}
    return spec, load_hub(spec.hub_id, wanted, splits, revision)
