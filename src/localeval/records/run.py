"""config.json of a run folder: how the run was made (:class:`RunConfig`; the task's own settings
are kept as they are) and ``run``, where it stands (:class:`Lifecycle`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Record

Status = Literal["running", "finished", "failed"]


class Lifecycle(Record):
    """config.json's ``run``."""

    status: Status = Field(description="running -> finished, or failed with error")
    schema_: int = Field(default=1, validation_alias="schema", serialization_alias="schema",
                         description="version of the folder layout")
    started_at: str | None = Field(default=None, description="UTC, ISO 8601")
    finished_at: str | None = Field(default=None, description="UTC, ISO 8601")
    error: str | None = Field(default=None,
                              description="why the run failed ('interrupted' for Ctrl-C)")


class RunConfig(Record):
    """How the run was made: the keys of config.json that commands read; every other key (a
    task's settings) is kept as it is. ``run`` (where the run stands) is not one of them: it is
    the :class:`Lifecycle` beside it (:class:`ConfigFile` is the file whole)."""

    task: str | None = Field(default=None, description="the task as named to --task")
    model: str | None = Field(default=None, description="the run's --model")
    backend: dict[str, Any] | None = Field(default=None, description="the backend's identity")
    command: list[str] | None = Field(default=None,
                                      description="the command line of the first run")
    localeval_version: str | None = None
    rescored_from: dict[str, Any] | None = Field(
        default=None, description="a run made by `localeval rescore`: the source run's folder "
        "and finish time, and the options changed (its answers came from the source's cache)")

    def data(self) -> dict[str, Any]:
        """The keys it was made from with their values as config.json holds them, in the file's
        order (sorted): a listing of every setting reads the same from a run just made as from
        its folder. Values are dumped as they are, not through pydantic's JSON mode, which
        would turn an infinite float (``Infinity`` in the file) into null."""
        dumped = self.model_dump(by_alias=True, exclude_unset=True)
        return dict(sorted(dumped.items()))


class ConfigFile(RunConfig):
    """config.json whole: how the run was made, and where it stands."""

    run: Lifecycle | None = Field(default=None, description="where the run stands (folders "
                                  "from before it existed have none)")
