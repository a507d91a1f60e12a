"""config.json of a run folder: how the run was made (the task's own settings are kept as they
are) and ``run``, where it stands."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Record

Status = Literal["running", "finished", "failed"]


class Lifecycle(Record):
    """config.json's ``run``."""

    status: Status = Field(description="running -> finished, or failed with error")
    schema_: int = Field(1, alias="schema", description="version of the folder layout")
    started_at: str | None = Field(None, description="UTC, ISO 8601")
    finished_at: str | None = Field(None, description="UTC, ISO 8601")
    error: str | None = Field(None, description="why the run failed ('interrupted' for Ctrl-C)")


class RunConfig(Record):
    """The keys of config.json that commands read; every other key (a task's settings) is kept
    as it is."""

    task: str | None = Field(None, description="the task as named to --task")
    model: str | None = Field(None, description="the run's --model")
    backend: dict[str, Any] | None = Field(None, description="the backend's identity")
    command: list[str] | None = Field(None, description="the command line of the first run")
    localeval_version: str | None = None
    rescored_from: dict[str, Any] | None = Field(
        None, description="a run made by `localeval rescore`: the source run's folder and "
        "finish time, and the options changed (its answers came from the source's cache)")
    run: Lifecycle | None = Field(None, description="where the run stands (folders from "
                                  "before it existed have none)")
