"""``--cluster ADDRESS`` (issue 70): one run's requests spread over the workers of a Ray
cluster, each worker a Ray actor holding its own backend, loaded once from the run's model spec
(a path every node can read, or a Hub name; ``openai:`` a client of its own).

The run itself does not change: the driver (the process that runs ``localeval run``) plans the
requests, reads the cache and writes the cache, the run folder and the store, alone. Its
backend here is :class:`ClusterBackend`, which ``spreads``: the run hands it every request
still to answer in one call, and it cuts them into the pieces a local run would compute (the
hf prefix tree's chunks, so the numbers are a local run's), sends each piece to a worker and
reports each answer as its piece comes back, so the driver caches it at once.

Losing a node loses nothing: a piece whose worker died (its node gone, its process killed) is
sent again to a worker still alive; an answer the driver received is never asked for again (it
is cached, and its piece is done). When no worker is left, the run stops with what it received
cached, and the same command goes on from there.

Ray is an optional extra (``pip install 'localeval[ray]'``), imported only here, only when a run
names ``--cluster``. Ray's own facts: ``ray.init(address=...)``, ``ray.remote`` actors,
``ray.wait`` and ``NodeAffinitySchedulingStrategy`` (docs.ray.io, "Actors", "Scheduling"); the
authors' newer code spreads its work the same way (panuthept/Parallax-AI,
``parallax_ai/distributor.py``: ``ray.init(address=...)`` and ``ray.remote``)."""

from __future__ import annotations

import logging
import math
import socket
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..errors import LocalevalError
from .base import Backend, Progress, Request, Response, with_defaults
from .config import BackendConfig

IN_FLIGHT = 2  # pieces sent to a worker at once: the next one is there when one finishes
PROBE_SECONDS = 10.0  # to connect to a HOST:PORT address before any model loads
START_GRACE = 120.0  # seconds the first pieces wait for every worker's model to load


@dataclass(frozen=True)
class Cluster:
    """Where a run's requests go: ``address`` as ``ray.init(address=...)`` takes it (``auto``,
    ``ray://head:10001``, ``head:6379``); ``workers``: how many (default: one per node, one per
    GPU where a node has GPUs)."""

    address: str
    workers: int | None = None

    def __post_init__(self) -> None:
        if not self.address.strip():
            raise LocalevalError("--cluster takes a Ray address: auto, ray://HEAD:10001 or "
                                 "HEAD:6379")
        if self.workers is not None and (isinstance(self.workers, bool)
                                         or not isinstance(self.workers, int)
                                         or self.workers < 1):
            raise LocalevalError(f"--workers must be a positive integer, not {self.workers!r}")

    def preflight(self) -> None:
        """Before any model loads: a ``HOST:PORT`` address must take a connection (Ray's own
        client retries a dead one for minutes); ``auto`` and ``ray://`` are left to Ray."""
        host, colon, port = self.address.rpartition(":")
        if not colon or not port.isdigit() or "/" in host or not host:
            return
        try:
            socket.create_connection((host, int(port)), timeout=PROBE_SECONDS).close()
        except OSError as e:
            raise LocalevalError(f"--cluster {self.address}: no Ray head there ({e}); start "
                                 "one with `ray start --head --port=PORT`") from None

    def fact(self) -> dict[str, Any]:
        """config.json's ``cluster``: a speed-role fact (where the run ran, never its numbers)."""
        return {"address": self.address, "workers": self.workers}


class Worker:
    """One worker: the run's backend, loaded once on its node (a Ray actor of this class)."""

    def __init__(self, spec: str, config: BackendConfig):
        from .registry import load_backend  # the backend table, on the worker's node

        self.backend = with_defaults(load_backend(spec, config))

    def where(self) -> tuple[str, dict[str, Any]]:
        """Its node (``ip node-id``) and the identity of what it loaded."""
        import ray

        node = ray.get_runtime_context().get_node_id()
        return f"{ray.util.get_node_ip_address()} {node[:8]}", self.backend.identity

    def run(self, requests: Sequence[Request],
            needed: Sequence[bool] | None) -> list[Response | None]:
        if needed is None:
            return list(self.backend.run(requests))
        return self.backend.run_planned(requests, needed)


@dataclass
class Piece:
    """Requests ``part`` of a call (indices), with the ones to compute flagged ``needed`` (a
    backend that plans over all) or None (every one)."""

    part: list[int]
    needed: list[bool] | None


@dataclass
class Handle:
    """A worker as the driver sees it."""

    actor: Any
    node: str = ""  # known once it has loaded
    ready: bool = False
    running: int = 0  # pieces sent to it and not yet back


# a Ray reference the driver waits on -> its worker, and the piece it runs (None: its start)
Waiting = dict[Any, tuple[Handle, Piece | None]]


class ClusterBackend(Backend):
    """The run's backend, spread over a Ray cluster's workers. ``local`` is the driver's own (it
    plans: tokenizer, context length, candidates). The workers' identity keys the cache and is
    recorded: on this machine's hardware it is ``local``'s, so a cluster run and a local run of
    one spec are one run. ``piece``: requests per worker call (the run's chunk, so a backend
    that plans over all computes what a local run does)."""

    spreads = True

    def __init__(self, local: Backend, spec: str, config: BackendConfig, cluster: Cluster,
                 piece: int, quiet: bool = False):
        self.local = local
        self.plans_over_all = local.plans_over_all
        self.cuts_context = local.cuts_context
        self.spec, self.config, self.cluster = spec, config, cluster
        self.piece = piece
        self.quiet = quiet
        self.per_node: dict[str, int] = {}
        self.lost = 0
        self.ours = False  # ray.init was ours: shut down at close
        self.handles: list[Handle] = []
        self.starting: Waiting = {}  # the workers still loading, by their start
        self.ray: Any = self._connect()
        self._start()
        # the workers compute, so theirs is the identity (on GPUs it may differ from this
        # machine's: cuda, bfloat16): the first to load gives it, every other must match it
        self.identity: dict[str, Any] = self._first_identity()

    # ------------------------------------------------------------------ what the driver asks
    def max_context(self) -> int | None:
        return self.local.max_context()

    def count_tokens(self, prompt: Any) -> int | None:
        return self.local.count_tokens(prompt)

    def check_candidates(self, request: Any) -> str | None:
        return self.local.check_candidates(request)

    def cost_bound(self, request: Request) -> tuple[int, int] | None:
        return self.local.cost_bound(request)

    @property
    def stats(self) -> Mapping[str, Any]:  # type: ignore[override]
        """results.json's timing: the requests each node ran (answers received from it), the
        workers started and lost. The workers' own counters (the hf backend's forwarded
        tokens) are not gathered: a lost worker's would be missing, so none is given."""
        return {"cluster_workers": len(self.handles), "cluster_workers_lost": self.lost,
                "requests_per_node": dict(sorted(self.per_node.items()))}

    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> list[Response]:
        n = len(requests)
        size = max(1, min(self.piece, math.ceil(n / (4 * len(self.handles)))))
        pieces = [Piece(list(range(s, min(s + size, n))), None) for s in range(0, n, size)]
        out = self._spread(requests, pieces, progress)
        return cast(list[Response], [out[i] for i in range(n)])  # run answers each

    def run_planned(self, requests: Sequence[Request], needed: Sequence[bool],
                    progress: Progress | None = None) -> list[Response | None]:
        pieces = []
        for s in range(0, len(requests), self.piece):  # the chunks a local run plans over
            part = list(range(s, min(s + self.piece, len(requests))))
            flags = [bool(needed[i]) for i in part]
            if any(flags):
                pieces.append(Piece(part, flags))
        out = self._spread(requests, pieces, progress)
        return [out.get(i) for i in range(len(requests))]

    # ------------------------------------------------------------------ the workers
    def _connect(self) -> Any:
        try:
            import ray
        except ImportError:
            raise LocalevalError("--cluster needs Ray: pip install 'localeval[ray]'") from None
        if not ray.is_initialized():
            try:
                ray.init(address=self.cluster.address, log_to_driver=not self.quiet,
                         logging_level=logging.WARNING)
            except (ConnectionError, ValueError, RuntimeError) as e:
                raise LocalevalError(f"--cluster {self.cluster.address}: no Ray cluster there "
                                     f"({_first_line(e)})") from None
            self.ours = True
        return ray

    def _start(self) -> None:
        """The workers: one per node (one per GPU of a node with GPUs), or ``workers`` of them
        spread over the nodes; a node with neither CPU nor GPU to give gets none."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self.ray
        slots = [(n["NodeID"], int(n["Resources"].get("GPU", 0))) for n in ray.nodes()
                 if n.get("Alive") and (n["Resources"].get("GPU", 0) >= 1
                                        or n["Resources"].get("CPU", 0) >= 1)]
        if not slots:
            raise LocalevalError(f"--cluster {self.cluster.address}: no node has a CPU or a "
                                 "GPU to run a worker on")
        options: list[dict[str, Any]] = []
        if self.cluster.workers is None:
            for node, gpus in slots:
                where = NodeAffinitySchedulingStrategy(node, soft=False)
                options += ([{"num_gpus": 1, "num_cpus": 0, "scheduling_strategy": where}] * gpus
                            or [{"num_cpus": 1, "scheduling_strategy": where}])
        else:
            one = {"num_gpus": 1, "num_cpus": 0} if any(g for _, g in slots) else {"num_cpus": 1}
            options = [{**one, "scheduling_strategy": "SPREAD"}] * self.cluster.workers
        remote = ray.remote(Worker)
        self.handles = [Handle(remote.options(**o).remote(self.spec, self.config))
                        for o in options]
        self.starting = {h.actor.where.remote(): (h, None) for h in self.handles}
        self._say(f"cluster: {len(self.handles)} workers starting on {len(slots)} nodes "
                  f"({self.cluster.address})")

    def _first_identity(self) -> dict[str, Any]:
        """The identity of the first worker that loads (one that fails to load is lost)."""
        ray = self.ray
        error: Exception | None = None
        while self.starting:
            (ref,), _ = ray.wait(list(self.starting), num_returns=1)
            h, _ = self.starting.pop(ref)
            try:
                node, identity = ray.get(ref)
            except ray.exceptions.RayActorError as e:
                self._lost(h, None, deque(), {}, e)
                error = e
                continue
            h.node, h.ready = node, True
            self.identity = dict(identity)
            self._await_others()
            return self.identity
        raise LocalevalError(f"--cluster {self.cluster.address}: no worker could load "
                             f"{self.spec} ({_first_line(error)})")

    def _await_others(self) -> None:
        """The other workers' loads, for up to :data:`START_GRACE` seconds, so that the first
        pieces go to every node (a node still loading then joins when it is ready)."""
        ray = self.ray
        refs = list(self.starting)
        done, _ = ray.wait(refs, num_returns=len(refs), timeout=START_GRACE) if refs else ([], [])
        for ref in done:
            h, _ = self.starting.pop(ref)
            try:
                got = ray.get(ref)
            except ray.exceptions.RayActorError as e:
                self._lost(h, None, deque(), {}, e)
                continue
            self._ready(h, got)

    def _say(self, line: str) -> None:
        if not self.quiet:
            print(line, file=sys.stderr)

    def _spread(self, requests: Sequence[Request], pieces: list[Piece],
                progress: Progress | None) -> dict[int, Response | None]:
        """Every piece answered by some worker: sent as workers become free, sent again when its
        worker dies; each answer reported as its piece comes back."""
        ray = self.ray
        out: dict[int, Response | None] = {}
        todo = deque(pieces)
        running: Waiting = dict(self.starting)
        while todo or any(p is not None for _, p in running.values()):
            for depth in range(IN_FLIGHT):  # a piece to every worker before a second to one
                for h in self.handles:
                    if h.ready and todo and h.running <= depth:
                        sent = todo.popleft()
                        asked = [requests[i] for i in sent.part]
                        running[h.actor.run.remote(asked, sent.needed)] = (h, sent)
                        h.running += 1
            if not running:
                raise LocalevalError(
                    f"--cluster: every worker was lost ({self.lost} of {len(self.handles)}); "
                    "the answers received are cached: run the same command again to go on")
            (ref,), _ = ray.wait(list(running), num_returns=1)
            h, piece = running.pop(ref)
            try:
                got = ray.get(ref)
            except ray.exceptions.RayActorError as e:
                self._lost(h, piece, todo, running, e)
                continue
            if piece is None:
                self._ready(h, got)
            else:
                h.running -= 1
                self._received(h, piece, got, out, progress)
        self.starting = {ref: (h, p) for ref, (h, p) in running.items() if p is None}
        return out

    def _ready(self, h: Handle, got: tuple[str, dict[str, Any]]) -> None:
        node, identity = got
        if identity != self.identity:  # another model, revision, files or hardware there
            raise LocalevalError(f"--cluster: the worker on node {node} loaded another model "
                                 f"than the first worker ({identity} != {self.identity}): "
                                 "every node must read the same model files on like hardware")
        h.node, h.ready = node, True

    def _received(self, h: Handle, piece: Piece, got: list[Response | None],
                  out: dict[int, Response | None], progress: Progress | None) -> None:
        """A piece's answers: each reported (the driver caches it at once), counted for its
        node."""
        if len(got) != len(piece.part):
            raise LocalevalError(f"--cluster: the worker on node {h.node} answered "
                                 f"{len(got)} of {len(piece.part)} requests")
        for k, (i, answer) in enumerate(zip(piece.part, got, strict=True)):
            if piece.needed is not None and not piece.needed[k]:
                continue
            out[i] = answer
            if answer is not None:
                self.per_node[h.node] = self.per_node.get(h.node, 0) + 1
                if progress is not None:
                    progress(i, answer)

    def _lost(self, h: Handle, piece: Piece | None, todo: deque[Piece], running: Waiting,
              error: Exception) -> None:
        """A worker died (its node lost, its process killed, or it failed to load): what it was
        running goes back to the front of the queue, for the workers still alive."""
        if piece is not None:
            todo.appendleft(piece)
        for ref, (other, p) in list(running.items()):
            if other is h:  # its other pieces in flight
                running.pop(ref)
                if p is not None:
                    todo.appendleft(p)
        if h.ready or piece is None:  # counted once
            self.lost += 1
            self._say(f"cluster: a worker{' on node ' + h.node if h.node else ''} was lost "
                      f"({_first_line(error)}); {len(self.handles) - self.lost} of "
                      f"{len(self.handles)} workers alive, its requests go to the others")
        h.ready, h.running = False, 0

    def close(self) -> None:
        self.local.close()
        ray, self.ray = self.ray, None
        if ray is None:
            return
        for h in self.handles:
            try:
                ray.kill(h.actor)
            except Exception:  # noqa: BLE001, S110 — a worker already gone
                pass
        if self.ours:
            ray.shutdown()


def _first_line(error: BaseException | None) -> str:
    text = str(error or "").strip()
    return text.splitlines()[0] if text else type(error).__name__
