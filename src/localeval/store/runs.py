"""The run folder and its typed record (over 300 lines: the folder is written and read, and
checked where it is read, in this one module, so its layout is defined once): ``config.json`` (how the run was made, and where it
stands), ``results.json`` (numbers), ``samples.jsonl`` (one line per sample).

A rerun in the same folder keeps the provenance of the run that made it: config.json's
``command`` and results.json's ``timing`` stay the first finished run's, and each later
invocation is added to results.json's ``history`` (when it started, its command line, how many
requests it ran and read from the cache, its seconds).

``config.json["run"]`` holds the lifecycle: ``status`` (running -> finished, or failed with
``error``), the folder ``schema`` version and UTC timestamps. It is written when the run starts
and again, last, when it ends, so "finished" means every file is complete; a run killed on the
way stays "running". Files are written whole to a temporary name and renamed, so a crash never
leaves half a file. A live run holds the folder's ``.lock`` (one run per folder at a time).
JSON keys are sorted and floats written as Python prints them, so the same
run gives the same bytes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, Literal, overload

# a TypeVar with a default (PEP 696; in typing from Python 3.13): a plain ``RunRecord`` is a
# ``RunRecord[Results]``, so readers that do not name the kind still have typed results
from typing_extensions import TypeVar

from ..analysis import agreement
from ..errors import LocalevalError
from ..records import (
    RecordError,
    Results,
    Sample,
    json_type,
    read_results,
    sample_type,
    validated,
)
from ..records.run import ConfigFile, Lifecycle, RunConfig, Status
from ..records.samples import read_sample
from .files import NotPlainFile, open_own, read_plain_text
from .files import write_text_whole as write_text_whole  # named from here too (report/html.py)

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

RUN_SCHEMA = 1  # version of the folder layout and config.json["run"]
NOT_PLAIN = "not a plain file (a pipe, a device or a folder); a run folder's files are plain files"


class RunFolderError(LocalevalError):
    """A run folder whose files do not hold what they should: one line, file and field."""


class NotFinished(LocalevalError):
    """A folder read where a finished run is required, whose run is still running (or was
    killed) or failed: one line naming the folder and its status."""


# covariant: a record is frozen, so a RunRecord[SafetyResults] is a RunRecord[Results]
ResultsT = TypeVar("ResultsT", bound=Results, covariant=True, default=Results)
SampleT = TypeVar("SampleT", bound=Sample, covariant=True, default=Sample)
ReadT = TypeVar("ReadT")
ReadSampleT = TypeVar("ReadSampleT", bound=Sample)  # invariant: what read_samples makes


@dataclass(frozen=True)
class RunRecord(Generic[ResultsT, SampleT]):
    """A finished run, whole: what was run (``config``), its typed numbers (``results``, the
    record of its schema; ``RunRecord[SafetyResults, SafetySample]`` where the kind is known),
    its samples (the sample record of the same kind),
    its folder (None: a run kept in memory) and when it ran. A run that has not finished is
    never one: it is a :class:`RunInProgress` while it runs, and a folder's :class:`RunState`
    when read back."""

    config: RunConfig
    results: ResultsT
    samples: Sequence[SampleT]
    folder: Path | None = None
    started_at: str | None = None
    finished_at: str | None = None

    @property
    def status(self) -> Literal["finished"]:
        """Always "finished" (config.json's ``run.status``), for scripts that ask."""
        return "finished"

    def lifecycle(self) -> Lifecycle:
        """``config.json["run"]``."""
        return Lifecycle(status="finished", schema_=RUN_SCHEMA, started_at=self.started_at,
                         finished_at=self.finished_at)


def finished_record(config: dict[str, Any], results: dict[str, Any] | Results,
                    samples: Sequence[Sample], folder: Path | None = None,
                    started_at: str | None = None,
                    finished_at: str | None = None) -> RunRecord:
    """A finished run's record from plain data (a rescore's, a script's): the config and the
    results typed as the folder will hold them (JSON: keys sorted, tuples as lists)."""
    typed = results if isinstance(results, Results) else read_results(as_stored(results))
    return RunRecord(config=RunConfig.model_validate(as_stored(config)), results=typed,
                     samples=samples, folder=folder, started_at=started_at,
                     finished_at=finished_at)


@dataclass
class RunInProgress:
    """A run while the lifecycle (run.py) makes it: its settings so far (a second model's
    identity is added once it loads), its folder (None: a run kept in memory), and where it
    stands. :meth:`finish` makes the :class:`RunRecord` that readers get."""

    config: dict[str, Any]
    folder: Path | None = None
    started_at: str | None = None
    status: Status = "running"
    error: str | None = None
    finished_at: str | None = None

    def lifecycle(self) -> Lifecycle:
        """``config.json["run"]``: ``error`` only where there is one (a running run's file has
        no ``"error": null``)."""
        fields: dict[str, Any] = {"status": self.status, "schema": RUN_SCHEMA,
                                  "started_at": self.started_at, "finished_at": self.finished_at}
        if self.error is not None:
            fields["error"] = self.error
        return Lifecycle.model_validate(fields)

    def finish(self, results: Results, samples: Sequence[Sample]) -> RunRecord:
        """The finished run's record, finishing now (its files are written by save_run)."""
        return finished_record(self.config, results, samples, folder=self.folder,
                               started_at=self.started_at, finished_at=now())


@dataclass(frozen=True)
class RunState:
    """A run folder's config.json alone, whatever the run's status: how the run was made and
    where it stands. For the readers that take a folder before or without its results (a
    rerun's check of its settings, the viewer's list of runs, a script asking why a run
    failed); a reader that needs the numbers calls :func:`load_run`."""

    folder: Path
    config: RunConfig
    lifecycle: Lifecycle


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def as_stored(value: Any) -> Any:
    """``value`` as it reads back from the run folder's JSON (keys sorted, tuples as lists)."""
    return json.loads(json.dumps(value, ensure_ascii=False, sort_keys=True))


def write_json(path: Path, data: Any) -> None:
    write_text_whole(path, json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def write_samples(path: Path, samples: Sequence[Sample]) -> None:
    write_text_whole(path, "".join(sample_line(s) for s in samples))


def sample_line(sample: Sample) -> str:
    """The sample's line of samples.jsonl (keys sorted)."""
    return json.dumps(sample.data(), ensure_ascii=False, sort_keys=True) + "\n"


def stored_data(sample: Sample) -> dict[str, Any]:
    """The sample as JSON data, exactly as its line of samples.jsonl reads back (keys sorted,
    nested ones too; enums as text): for the readers that show every field whatever the kind
    (the sample browser, the Parquet export), so a live run's and a folder's look the same."""
    data: dict[str, Any] = json.loads(sample_line(sample))
    return data


def as_stored_samples(samples: Sequence[SampleT]) -> list[SampleT]:
    """Samples as they read back from the run folder (values as JSON holds them: tuples as
    lists, enums as text, keys in the file's order)."""
    return [read_sample(type(s), json.loads(sample_line(s)), "sample") for s in samples]


def write_config(run: RunInProgress) -> None:
    """config.json with the run's lifecycle (running, or failed); the folder is made if needed.
    A run kept in memory has no folder, and nothing is written."""
    if run.folder is not None:
        _write_config_file(run.folder, run.config, run.lifecycle())


def _write_config_file(folder: Path, config: dict[str, Any], lifecycle: Lifecycle) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "config.json", {**config, "run": lifecycle.data()})


def save_run(record: RunRecord, before_status: Callable[[], None] | None = None) -> None:
    """Samples, then results, then ``before_status()`` (the HTML report), then config.json (the
    status) last: "finished" means every file the run promises is written."""
    folder = record.folder
    if folder is None:
        raise ValueError("save_run: the record has no folder (a run kept in memory)")
    folder.mkdir(parents=True, exist_ok=True)
    write_samples(folder / "samples.jsonl", record.samples)
    write_json(folder / "results.json", record.results.data())
    if before_status is not None:
        before_status()
    _write_config_file(folder, record.config.data(), record.lifecycle())


def load_run(folder: str | Path) -> RunRecord:
    """The finished run of a folder, every file validated: a damaged one is one line naming the
    file and the field (RunFolderError), and a run that has not finished (running, killed,
    failed) is one line naming the folder and its status (NotFinished). Folders from before the
    lifecycle existed (no ``config.json["run"]``) are finished when their results are there."""
    state = load_run_state(folder)
    folder = state.folder
    if state.lifecycle.status != "finished":
        raise NotFinished(_not_finished(state))
    results = _checked(folder, "results.json", lambda: read_results(
        _read_json(folder / "results.json")))
    samples = _checked(folder, "samples.jsonl", lambda: read_samples(
        folder / "samples.jsonl", sample_type(results)))
    # an empty samples.jsonl: results a script wrote without its samples, nothing to hold them
    # against
    disagreement = agreement.disagreement(results, samples) if samples else None
    if disagreement:
        file, problem = disagreement
        raise RunFolderError(f"{folder / file}: {problem} (a hand edit? results.json and "
                             "samples.jsonl disagree: rerun the command, or restore them)")
    return RunRecord(config=state.config, results=results, samples=samples, folder=folder,
                     started_at=state.lifecycle.started_at,
                     finished_at=state.lifecycle.finished_at)


def _not_finished(state: RunState) -> str:
    """Why a folder is not a finished run, and what to do, as one line."""
    error = state.lifecycle.error
    why = f" ({' '.join(error.split())})" if error else ""  # an error may span lines
    return (f"{state.folder}: the run is {state.lifecycle.status}, not finished{why}; rerun its "
            "command to finish it")


def load_run_state(folder: str | Path) -> RunState:
    """The folder's config.json, validated (RunFolderError naming the field): how the run was
    made and where it stands, whatever its status. Folders from before the lifecycle existed
    (no ``run``) stand finished when their results.json is there, else running."""
    folder = Path(folder)
    data = read_config(folder)
    whole: ConfigFile = _checked(folder, "config.json",
                                 lambda: validated(ConfigFile, data, "config.json"))
    # the same keys, checked just above, without ``run``: that is the lifecycle beside them
    config = RunConfig.model_validate({k: v for k, v in data.items() if k != "run"})
    lifecycle = whole.run
    if lifecycle is None:
        made: Status = "finished" if (folder / "results.json").exists() else "running"
        lifecycle = Lifecycle(status=made)
    return RunState(folder=folder, config=config, lifecycle=lifecycle)


def read_config(folder: Path) -> dict[str, Any]:
    """config.json as data: a JSON object (RunFolderError otherwise), its keys not checked yet
    (load_run_state checks them)."""
    path = folder / "config.json"
    if not folder.is_dir():
        what = "is a file" if folder.exists() else "does not exist"
        raise RunFolderError(f"{folder} {what}: give a run folder (a run's --output, by default "
                             "under runs/<task>/) or a run id from `localeval leaderboard "
                             "--json`")
    if not path.is_file():
        raise RunFolderError(f"{folder} is not a run folder (needs config.json, results.json, "
                             "samples.jsonl): it has no config.json")
    data = _checked(folder, "config.json", lambda: _read_json(path))
    if not isinstance(data, dict):
        raise RunFolderError(f"{path}: should be a JSON object, not {json_type(data)}")
    return data


def _read_json(path: Path) -> Any:
    try:
        return json.loads(read_plain_text(path))
    except FileNotFoundError:
        raise RecordError(f"{path.name}: missing") from None
    except NotPlainFile:
        raise RecordError(f"{path.name}: {NOT_PLAIN}") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise RecordError(f"{path.name}: not valid JSON ({e})") from None


def _checked(folder: Path, name: str, read: Callable[[], ReadT]) -> ReadT:
    """``read()``, with a RecordError said as one line naming the folder's file."""
    try:
        return read()
    except RecordError as e:
        detail = str(e).removeprefix(f"{name}: ")
        raise RunFolderError(f"{folder / name}: {detail}") from None


@overload
def read_samples(path: Path) -> list[Sample]: ...


@overload
def read_samples(path: Path, kind: type[ReadSampleT]) -> list[ReadSampleT]: ...


def read_samples(path: Path, kind: type[ReadSampleT] | None = None
                 ) -> list[ReadSampleT] | list[Sample]:
    """samples.jsonl: one JSON object per line, each read into the sample record ``kind`` (the
    base record, its common fields checked, when not given)."""
    record: type[Sample] = Sample if kind is None else kind
    try:
        text = read_plain_text(path)
    except FileNotFoundError:
        raise RecordError(f"{path.name}: missing") from None
    except NotPlainFile:
        raise RecordError(f"{path.name}: {NOT_PLAIN}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError(f"{path.name}: unreadable ({e})") from None
    samples: list[Sample] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except ValueError as e:
            raise RecordError(f"{path.name}: line {number} is not valid JSON ({e})") from None
        if not isinstance(sample, dict):
            raise RecordError(f"{path.name}: line {number} should be a JSON object, not "
                              f"{json_type(sample)}")
        samples.append(read_sample(record, sample, f"{path.name}: line {number}"))
    return samples


LOCK_FILE = ".lock"


@contextmanager
def run_folder_lock(folder: Path | None) -> Iterator[None]:
    """One live run per folder: a second run of the same command while the first is live would
    redo its work (and race on its files), so it is refused in one line. The lock is the
    kernel's (``flock``) and goes with its process, so a killed run leaves none behind."""
    if folder is None or fcntl is None:  # no flock (Windows): no lock
        yield
        return
    made = [p for p in (folder, *folder.parents) if not p.exists()]  # deepest first
    folder.mkdir(parents=True, exist_ok=True)
    # never through a link, never into a file not ours (store/files.py)
    with open(open_own(folder / LOCK_FILE), "r+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read(20).strip() or "?"
            raise LocalevalError(f"{folder} is in use by another localeval run (pid {holder}); "
                                 "wait for it to finish, or give another --output") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            if made and not (folder / "config.json").exists():  # nothing ran: leave no trace
                (folder / LOCK_FILE).unlink(missing_ok=True)
                with suppress(OSError):  # a folder something else wrote into stays
                    for made_dir in made:
                        made_dir.rmdir()


@dataclass(frozen=True)
class FirstRun:
    """What a rerun keeps of the run that first finished in its folder: the numbers' provenance
    (its command and timing) and the invocations since."""

    command: list[str] | None
    timing: dict[str, Any]
    history: list[dict[str, Any]]
    cluster: dict[str, Any] | None = None  # config.json's cluster: where its timing was made


def first_run(folder: Path) -> FirstRun | None:
    """The folder's first finished run, or None (a new folder, or no run in it ever finished:
    a killed run leaves no results.json, and its resumption is the first). Read from
    results.json, which a later run killed on the way leaves as it was."""
    try:
        results = json.loads(read_plain_text(folder / "results.json"))
        config = json.loads(read_plain_text(folder / "config.json"))
    except (OSError, ValueError):
        return None
    if not isinstance(results, dict) or not isinstance(config, dict) or \
            not isinstance(results.get("timing"), dict):
        return None  # a damaged folder: check_same_run has refused it unless --overwrite
    cluster = config.get("cluster")
    return FirstRun(config.get("command"), results["timing"], list(results.get("history") or []),
                    cluster if isinstance(cluster, dict) else None)


def with_history(first: FirstRun | None, timing: dict[str, Any],
                 invocation: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """results.json's ``timing`` and ``history``: a first run's own timing and no history; a
    rerun keeps the first run's timing and adds itself to the history (``started``,
    ``command``, ``requests_run``, ``requests_cached``, ``seconds``)."""
    if first is None:
        return timing, []
    entry = {**invocation, "requests_run": timing.get("requests_run", 0),
             "requests_cached": timing.get("requests_cached", 0),
             "seconds": timing.get("seconds")}
    return first.timing, [*first.history, entry]


def check_output_folder(folder: Path) -> None:
    """Before anything loads: ``folder`` must be a folder that is new, empty or a run folder."""
    if folder.exists() and not folder.is_dir():
        raise LocalevalError(f"--output {folder} is a file; give a folder (made if missing)")
    above = next((p for p in folder.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise LocalevalError(f"--output {folder}: {above} is a file, not a folder")
    if folder.is_dir() and not (folder / "config.json").exists() and \
            any(f.name != LOCK_FILE for f in folder.iterdir()):
        raise LocalevalError(f"--output {folder} is not empty and holds no run (no config.json); "
                             "give a new or empty folder")


DATA_FILES = "data_files"  # config.json: each data file's bytes and sha256, by its path


def check_report_output(output: Path, folders: list[Path]) -> None:
    """A report's ``--output`` is an ``.html`` file, and in a run folder only that run's own
    ``report.html``: written over results.json or samples.jsonl, it would destroy the run."""
    if output.suffix.lower() != ".html":
        raise LocalevalError(f"--output {output}: a report is an .html file; give a name "
                             "ending in .html")
    home = output.resolve().parent
    if not (home / "config.json").exists() and not (home / LOCK_FILE).exists():
        return  # not a run folder
    own = len(folders) == 1 and folders[0].resolve() == home and output.name == "report.html"
    if not own:
        raise LocalevalError(f"--output {output} is in the run folder {home}, whose only HTML "
                             "file is its own report.html; give a file outside run folders")


def check_same_run(folder: Path, settings: dict[str, Any], overwrite: bool = False) -> None:
    """A folder that already holds a run is only reused for the same settings (a rerun resumes
    and rewrites the same results); other settings would silently replace it. The data files'
    fingerprint (``data_files``) is one of them: edited data is a run with other settings. A
    folder written before fingerprints existed is accepted and gains one (one line says so)."""
    if overwrite or not (folder / "config.json").exists():
        return
    old = _readable_run(folder)
    new = json.loads(json.dumps(settings, ensure_ascii=False))  # tuples -> lists, as stored
    if DATA_FILES in new and DATA_FILES not in old:
        print(f"note: {folder} was written before runs recorded their data's fingerprint; "
              f"it records it from now on ({len(new.pop(DATA_FILES))} file(s))",
              file=sys.stderr)
    if not any(k != DATA_FILES and old.get(k) != v for k, v in new.items()) and \
            old.get(DATA_FILES, new.get(DATA_FILES)) == new.get(DATA_FILES):
        return
    # the settings first, each option by its flag: the data files read follow from them
    diffs = setting_differences(old, new)
    if DATA_FILES in new and old.get(DATA_FILES) != new[DATA_FILES]:
        diffs.append(_data_diff(old.get(DATA_FILES), new[DATA_FILES]))
    shown = "; ".join(d if len(d) < 120 else d[:117] + "..." for d in diffs[:3])
    more = f" (+{len(diffs) - 3} more)" if len(diffs) > 3 else ""
    raise LocalevalError(f"{folder} holds a run with other settings ({shown}{more}); give "
                         "another --output, or --overwrite to replace it")


def check_same_backend(folder: Path | None, identity: dict[str, Any],
                       overwrite: bool = False) -> None:
    """A rerun into a folder that holds a run keeps the model's protocol-role settings as the
    backend records them once loaded (its dtype as resolved, revision, top-k, scoring, …): a
    rerun with another ``--dtype`` would otherwise replace the run with other numbers. A
    setting only one of the two records (an older folder, another backend) is not compared;
    nor is the device (where a run computes, cuda:0 or cuda:1, not what: the cache keys it)
    nor the template date (:func:`localeval.run.resumed_date` adopts the folder's)."""
    if folder is None or overwrite or not (folder / "config.json").exists():
        return
    from ..backends.config import BackendConfig
    from ..declared import role_of

    recorded = _readable_run(folder).get("backend")
    if not isinstance(recorded, dict):
        return
    compared = [f.name for f in dataclasses.fields(BackendConfig) if role_of(f) == "protocol"
                and f.name not in ("device", "template_date")]
    diffs = [f"--{name.replace('_', '-')}: {recorded[name]!r} -> {identity[name]!r}"
             for name in compared
             if name in recorded and name in identity and
             json.loads(json.dumps(identity[name], default=str)) != recorded[name]]
    if diffs:
        raise LocalevalError(f"{folder} holds a run with other settings ({'; '.join(diffs)}); "
                             "give another --output, or --overwrite to replace it")


def setting_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """How two runs' settings differ, each difference with both values: an option of the
    task by its flag, as its run spec reads it ("--shots: 5 -> 3", not config.json's whole
    ``prompt`` block), anything else by its key's path ("backend.dtype: 'float32' ->
    'float16'"); the data files are said apart (:func:`_data_diff`)."""
    from ..tasks.options import flag_of, option_fields
    from ..tasks.run_spec import RunSpec

    old = _compared(old, new)
    try:
        before, after = RunSpec.from_config(old), RunSpec.from_config(new)
    except (LocalevalError, TypeError, ValueError):  # not a spec (a hand-edited file)
        return _leaf_differences(old, new, skip={DATA_FILES})
    if before.task != after.task:
        return _leaf_differences(old, new, skip={DATA_FILES})
    fields = option_fields(type(after.options))
    said = [f"{flag_of(f)}: {_said(before.option(f.name))} -> {_said(after.option(f.name))}"
            for f in fields if before.option(f.name) != after.option(f.name)]
    # config.json's keys the options are recorded under ("prompt" for --shots, "guard")
    covered = set(after.options.record(frozenset(f.name for f in fields)))
    return said + _leaf_differences(old, new, skip=covered | {DATA_FILES})


def _compared(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The folder's config.json as far as the new settings go (its other keys, the backend
    and the command line among them, are the run's record, not its settings)."""
    return {k: old.get(k) for k in new}


def _said(value: Any) -> str:
    return repr(str(value)) if isinstance(value, Path) else repr(value)


def _leaf_differences(old: Any, new: Any, skip: set[str], path: str = "") -> list[str]:
    """Each value that differs between two config.json blocks, by its key's path."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for k in sorted(set(old) | set(new), key=str) if k not in skip
                for d in _leaf_differences(old.get(k), new.get(k), set(),
                                           f"{path}.{k}" if path else str(k))]
    return [] if old == new else [f"{path}: {old!r} -> {new!r}"]


def _readable_run(folder: Path) -> dict[str, Any]:
    """The settings of the folder's run (config.json without ``run``), after every file of a
    finished run read whole: a damaged one is refused, naming it, with --overwrite offered. A
    run that did not finish is read as far as it got: its rerun resumes it."""
    try:
        state = load_run_state(folder)
        if state.lifecycle.status == "finished":
            load_run(folder)
    except RunFolderError as e:
        raise LocalevalError(f"{e}; give another --output, or --overwrite to replace the "
                             "run") from None
    return state.config.data()


def _data_diff(old: Any, new: dict[str, dict[str, Any]]) -> str:
    """How the data files differ from the run's: a file whose contents changed is "data
    changed: test.jsonl (sha256 1a2b3c4d… -> 5e6f…)"; a file read now or no longer (another
    --subjects or --limit) is said as such, not blamed on the data."""
    old = old if isinstance(old, dict) else {}

    def short(entry: Any) -> str:
        return f"sha256 {str(entry.get('sha256'))[:8]}…" if isinstance(entry, dict) else "none"

    changed = [f"{name} ({short(old[name])} -> {short(entry)})"
               for name, entry in new.items() if name in old and old[name] != entry]
    # by file name: they are the task's own files (the full path of each would fill the line)
    read = [f"{Path(name).name} (newly read)" for name in new if name not in old]
    read += [f"{Path(name).name} (no longer read)" for name in old if name not in new]
    return "; ".join(part for part in (
        "data changed: " + ", ".join(changed) if changed else "",
        "files read: " + ", ".join(read) if read else "") if part)


