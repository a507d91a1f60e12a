"""`localeval run --cluster ADDRESS` (issue 70), on a real Ray cluster of two nodes on this
machine (`ray.cluster_utils.Cluster`: a head and a worker node, one CPU each, a small object
store, no dashboard), started once for the module. A cluster run's samples are a local run's
(ids, letters, failures identical; log-probs within 1e-5), for multiple choice by likelihood and
for a guard; both nodes run requests; with the worker node removed mid-run the command ends
with the same samples, none missing nor twice, its lost requests run on the head node.

The run's chunk is made small (8 requests) in the local and the cluster runs alike, so that a
few dozen requests make several pieces for the two workers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")  # the optional extra: localeval[ray], in the test extra

from ray.cluster_utils import Cluster as RayCluster  # noqa: E402

import localeval.store.executor  # noqa: E402
from localeval import evaluate  # noqa: E402
from localeval.backends.base import Backend  # noqa: E402
from localeval.backends.cluster import Cluster, ClusterBackend  # noqa: E402
from localeval.cli import main  # noqa: E402
from localeval.demo.safety import SAMPLE_SAFETY  # noqa: E402
from localeval.errors import LocalevalError  # noqa: E402
from localeval.tasks.run_spec import RunSpec  # noqa: E402

STORE_MB = 80
ADDRESS = "127.0.0.1:1"  # no cluster there: these checks come before any connection
MCQ = {"task": "cmmlu", "subjects": ["agronomy", "anatomy"], "limit": 20, "shots": 1,
       "method": "likelihood"}


@pytest.fixture(scope="module")
def cluster():
    """The two-node cluster: (the Cluster, its worker node)."""
    made = RayCluster(initialize_head=True, connect=False, head_node_args={
        "num_cpus": 1, "object_store_memory": STORE_MB * 2**20, "include_dashboard": False})
    worker = made.add_node(num_cpus=1, object_store_memory=STORE_MB * 2**20)
    made.wait_for_nodes()
    yield made, worker
    made.shutdown()


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(localeval.store.executor, "CHUNK", 8)


@pytest.fixture(scope="module")
def local_mcq(tmp_path_factory, tiny_llama, shared):
    """The multiple-choice run on this machine, no cluster."""
    folder = tmp_path_factory.mktemp("local") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(localeval.store.executor, "CHUNK", 8)
        evaluate(model=f"hf:{tiny_llama}", data=shared / "data" / "cmmlu", output=folder,
                 cache=folder / "cache.sqlite", quiet=True, store=False, **MCQ)
    return folder


def _lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "samples.jsonl").open(encoding="utf-8")]


def _close(a, b, where: str) -> None:
    """Equal, floats within 1e-5 (a worker's batch may move the last bits)."""
    if isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, abs_tol=1e-5), where
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def _key(sample: dict) -> tuple:
    """Which sample it is: its item, and for a guard which of the item's texts, read how."""
    return tuple(sample.get(k) for k in ("id", "kind", "lang", "context"))


def _same_samples(local: Path, remote: Path) -> list[dict]:
    one, other = _lines(local), _lines(remote)
    keys = [_key(s) for s in other]
    assert len(keys) == len(set(keys))  # none twice
    assert [_key(s) for s in one] == keys  # none missing, in the run's order
    for x, y in zip(one, other, strict=True):
        _close(x, y, x["id"])
    return other


def _timing(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text(encoding="utf-8"))["timing"]


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_a_cluster_run_is_the_local_run_with_both_nodes_running_requests(
        cluster, local_mcq, tiny_llama, shared, tmp_path):
    made, _ = cluster
    out = tmp_path / "cluster"
    evaluate(model=f"hf:{tiny_llama}", data=shared / "data" / "cmmlu", output=out,
             cache=out / "cache.sqlite", quiet=True, store=False, cluster=made.address, **MCQ)
    samples = _same_samples(local_mcq, out)
    assert {s["pred"] for s in samples} and all("logprobs" in s for s in samples)
    per_node = _timing(out)["requests_per_node"]
    assert len(per_node) == 2 and all(n > 0 for n in per_node.values())
    assert sum(per_node.values()) == _timing(out)["requests_run"] == len(samples)
    # where it ran is a speed fact: the local run's name and protocol facts
    spec, local = (RunSpec.from_config(_config(f)) for f in (out, local_mcq))
    assert spec.name == local.name and spec.protocol_facts() == local.protocol_facts()
    assert _config(out)["cluster"] == {"address": made.address, "workers": None}
    assert dict(spec.cluster) == {"address": made.address, "workers": None}
    # the same run: rerun here without --cluster, every answer comes from its cache
    again = evaluate(model=f"hf:{tiny_llama}", data=shared / "data" / "cmmlu", output=out,
                     cache=out / "cache.sqlite", quiet=True, store=False, **MCQ)
    (rerun,) = again.results["history"]
    assert (rerun["requests_run"], rerun["requests_cached"]) == (0, len(samples))
    # the first run's timing is kept, and with it where it ran
    assert _config(out)["cluster"] == {"address": made.address, "workers": None}


@pytest.mark.slow
def test_a_guard_on_the_cluster_is_the_guard_here(cluster, tiny_llama, tmp_path):
    made, _ = cluster
    given = {"task": "sea-safeguard", "data": Path(str(SAMPLE_SAFETY)), "n_resamples": 0, "limit": 2,
             "guard_options": {"label_scores": "full", "verdict_position": "fixed"},
             "model": f"hf:{tiny_llama}", "quiet": True, "store": False}
    evaluate(output=tmp_path / "local", cache=tmp_path / "local.sqlite", **given)
    evaluate(output=tmp_path / "cluster", cache=tmp_path / "cluster.sqlite",
             cluster=made.address, workers=2, **given)
    _same_samples(tmp_path / "local", tmp_path / "cluster")
    assert len(_timing(tmp_path / "cluster")["requests_per_node"]) == 2


@pytest.mark.slow
def test_losing_the_worker_node_mid_run_loses_nothing(cluster, local_mcq, tiny_llama, shared,
                                                      tmp_path, monkeypatch):
    made, worker = cluster
    received = ClusterBackend._received
    removed = []

    def then_remove(self, h, piece, got, out, progress):
        received(self, h, piece, got, out, progress)
        # once the worker node has answered a piece (its next one already sent), it goes
        if not removed and h.node.endswith(worker.node_id[:8]):
            made.remove_node(worker)
            removed.append(h.node)
    monkeypatch.setattr(ClusterBackend, "_received", then_remove)
    out = tmp_path / "cluster"
    argv = ["run", "--model", f"hf:{tiny_llama}", "--data", str(shared / "data" / "cmmlu"),
            "--task", "cmmlu", "--subjects", "agronomy,anatomy", "--limit", "20", "--shots",
            "1", "--method", "likelihood", "--cluster", made.address, "--output", str(out),
            "--no-report", "--no-store", "--quiet"]
    code = main(argv)
    if code != 0:  # every worker lost: the same command goes on from the cache
        code = main(argv)
    assert code == 0 and removed
    _same_samples(local_mcq, out)
    timing = _timing(out)
    assert timing["cluster_workers_lost"] == 1
    per_node = timing["requests_per_node"]
    assert len(per_node) == 2 and all(n > 0 for n in per_node.values())
    assert per_node[removed[0]] < timing["requests_run"]  # the head node ran the rest


def test_cluster_flags_are_checked_before_anything_runs(shared):
    with pytest.raises(LocalevalError, match="--workers must be a positive integer, not 0"):
        Cluster(ADDRESS, 0)
    with pytest.raises(LocalevalError, match="--cluster takes a Ray address"):
        Cluster(" ")
    with pytest.raises(LocalevalError, match="--workers is for a --cluster run"):
        evaluate(model="hf:/no/model/here", data=shared / "data" / "cmmlu", workers=2,
                 store=False, quiet=True, **MCQ)
    with pytest.raises(LocalevalError, match="--cluster and --batch"):
        evaluate(model="openai:m", cluster=ADDRESS, backend_options={"batch": True},
                 data=shared / "data" / "cmmlu", store=False, quiet=True, **MCQ)
    with pytest.raises(LocalevalError, match=r"--cluster 127.0.0.1:1: no Ray head there"):
        evaluate(model="hf:/no/model/here", cluster=ADDRESS, data=shared / "data" / "cmmlu",
                 store=False, quiet=True, **MCQ)
    with pytest.raises(LocalevalError, match="not from a Python object"):
        evaluate(model=Says(), cluster=ADDRESS, data=shared / "data" / "cmmlu", store=False,
                 quiet=True, **MCQ)


class Says(Backend):
    identity = {"backend": "says", "model": "says"}

    def run(self, requests, progress=None):
        raise AssertionError("never run")
