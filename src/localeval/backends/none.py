"""``none:<name>``: the backend of a guard that needs no model at all (rules, a classifier it
carries itself). Such a guard declares ``model = "none:<its name>"``: the run needs no
``--model``, and what the run records and shows as its model is that name, so its tables,
leaderboard row and viewer row are named by the guard itself (:attr:`RunSpec.name` says the
guard alone). It answers no request: a guard that sends one anyway gets a failed request,
counted as a failure, never a verdict."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Backend, Failed, Progress, Request, Response
from .failures import Unsupported
from .options import NoModelOptions


class NoModel(Backend):
    Options = NoModelOptions  # the options it takes (.options: --help reads them there)

    def __init__(self, name: str):
        self.identity = {"backend": "none", "model": name}

    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> Sequence[Response]:
        out: list[Response] = []
        for i, _ in enumerate(requests):
            out.append(Failed(Unsupported(f"none:{self.identity['model']} has no model to "
                                          "ask: a guard on it classifies without requests")))
            if progress:
                progress(i, out[-1])
        return out
