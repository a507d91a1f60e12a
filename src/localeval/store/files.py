"""Writing files that are ours and only ours: a run folder's ``.lock``, the temporary files that
become config.json, results.json, samples.jsonl and report.html, the request cache.

A path we create or replace never follows a symbolic link and never truncates a file that is
not ours: a planted ``RUN/.lock -> ~/notes.txt`` or ``RUN/config.json.tmp -> ~/notes.txt``
would otherwise have us write into ``notes.txt``. Files are opened with ``O_NOFOLLOW`` (the
kernel refuses a link as the last part of the path), and one that is there already must be a
plain file with no second hard link (a hard link to another file is that file). Each refusal
is one :class:`NotOurFile` line naming the path. A folder we make inside one we were given
(``RUN/report_figures``, an export's ``samples/``) is never a link either
(:func:`make_own_folder`): ``RUN/report_figures -> ~/elsewhere`` would have a report write its
figures there. A folder the user names (``runs/``, ``--output``) may be a link.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import LocalevalError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # Windows has no symbolic links to follow here
CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class NotOurFile(LocalevalError):
    """A path we would write is a link or a file we did not make."""


class NotPlainFile(OSError):
    """A file we would read is a pipe, a device or a folder."""


def read_plain_text(path: Path) -> str:
    """``path``'s text (UTF-8), read only if it is a plain file: a named pipe (FIFO) would block
    the reader until something writes to it, a device might never end. Opened without waiting
    (``O_NONBLOCK``: a pipe opens at once) and checked before a byte is read; NotPlainFile
    otherwise, and OSError or UnicodeDecodeError as reading fails."""
    fd = os.open(path, os.O_RDONLY | CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotPlainFile(f"{path} is not a plain file (a pipe, a device or a folder)")
        return f.read().decode("utf-8")


def check_own(path: Path) -> None:
    """``path`` is missing, or a plain file with one name (ours to replace); else one line."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    _check_info(path, info)


def _check_info(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise NotOurFile(f"{path} is a symbolic link; localeval never writes through one "
                         "(remove it, or give another folder)")
    if not stat.S_ISREG(info.st_mode):
        raise NotOurFile(f"{path} is not a plain file; remove it, or give another folder")
    if info.st_nlink > 1:
        raise NotOurFile(f"{path} has another name (a hard link), so it is not ours to "
                         "overwrite; remove it, or give another folder")


def refuse_link(path: Path) -> Path:
    """``path``, which we would make or write into: one line if it is a symbolic link."""
    if os.path.islink(path):
        raise NotOurFile(f"{path} is a symbolic link; localeval never writes through one "
                         "(remove it, or give another folder)")
    return Path(path)


def make_own_folder(path: Path) -> Path:
    """``path``, a folder we name inside one we were given, made if missing (its parents as
    well); one line if it is a link or not a folder."""
    path = refuse_link(path)
    path.mkdir(parents=True, exist_ok=True)  # FileExistsError for a file: an OSError line
    if os.path.islink(path) or not path.is_dir():  # made a link since: checked again
        raise NotOurFile(f"{path} is not a folder of ours; remove it, or give another folder")
    return path


def open_own(path: Path, flags: int = os.O_RDWR | os.O_CREAT) -> int:
    """A file descriptor of ``path``, opened without following a link at its end and checked to
    be a plain file of ours (made if missing when ``flags`` has ``O_CREAT``)."""
    try:
        fd = os.open(path, flags | NOFOLLOW | CLOEXEC | getattr(os, "O_NONBLOCK", 0), 0o644)
    except OSError:
        if os.path.islink(path):  # ELOOP (Linux) or EMLINK (FreeBSD): a link at the end
            check_own(path)
        raise
    try:
        _check_info(path, os.fstat(fd))
    except NotOurFile:
        os.close(fd)
        raise
    return fd


def write_bytes_whole(path: Path, data: bytes) -> None:
    """``data`` to ``path`` whole or not at all: written to ``path.tmp`` (made new, never
    through a link) and renamed over ``path`` (a rename replaces a link itself, never what it
    points to). A write that fails (a full disk) leaves no temporary file behind."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.unlink(missing_ok=True)  # left by a kill mid-write, or planted: a link goes, not its file
    fd = open_own(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_whole(path: Path, text: str) -> None:
    """``text`` (UTF-8) to ``path`` whole or not at all (:func:`write_bytes_whole`)."""
    write_bytes_whole(path, text.encode("utf-8"))


@contextmanager
def writing_whole(path: Path) -> Iterator[io.StringIO]:
    """A text buffer (``newline=""``, for the csv module) written to ``path`` whole when the
    block ends (:func:`write_text_whole`); nothing is written if it fails."""
    buffer = io.StringIO(newline="")
    yield buffer
    write_text_whole(path, buffer.getvalue())
