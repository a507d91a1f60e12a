"""The openai backend's own overhead: requests/s against a loopback server that answers at once,
next to the same load driven by a bare async httpx client, side by side in one run.

The server (a separate process, raw asyncio, HTTP/1.1 keep-alive) returns one canned
completions reply with top log-probs, so nearly all the time is the client's. For each
concurrency the two clients alternate over several repetitions; the medians are compared. The
localeval side is what a run does: ``CachedExecutor`` over ``OpenAIBackend`` with a fresh SQLite
cache (every response stored as it arrives), prompt sorting, retries armed, parsing into
responses. The bare side posts the same bodies and parses the JSON, nothing else: once with one
client (the plain way), once with the same pools of 16 connections localeval uses. Overhead per
request = 1/rate(localeval) - 1/rate(bare, pools of 16): what localeval adds on top of httpx.

    python bench/openai_client_overhead.py --requests 2000 --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import statistics
import tempfile
import time
from pathlib import Path

from localeval.backends.async_http import SHARD_CONNECTIONS

REPLY = json.dumps({"id": "cmpl-1", "object": "text_completion", "model": "bench",
                    "choices": [{"index": 0, "text": "A", "finish_reason": "length",
                                 "logprobs": {"tokens": ["A"], "token_logprobs": [-0.5],
                                              "top_logprobs": [{"A": -0.5, "B": -1.5, "C": -2.0,
                                                                "D": -2.5, " A": -3.0}]}}],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 1}}).encode()
MODELS = json.dumps({"object": "list", "data": [{"id": "bench", "object": "model"}]}).encode()


async def _serve_connection(reader, writer) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if length:
                await reader.readexactly(length)
            body = MODELS if head.startswith(b"GET") else REPLY
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


def _server(sock: socket.socket) -> None:
    async def main() -> None:
        server = await asyncio.start_server(_serve_connection, sock=sock, backlog=1024)
        await server.serve_forever()

    asyncio.run(main())


def _bodies(n: int) -> list[dict]:
    return [{"model": "bench", "prompt": f"問題 {i}：下列何者正確？\nA. 甲\nB. 乙\nC. 丙\nD. 丁\n答案：",
             "max_tokens": 1, "temperature": 0.0, "logprobs": 20} for i in range(n)]


def bare(url: str, bodies: list[dict], concurrency: int, per_pool: int | None = None) -> float:
    """Seconds for a bare async httpx client to post every body and parse each reply: one
    client (one connection pool), or with ``per_pool`` as many clients of that many connections
    as the concurrency needs (what localeval does), requests round-robin over them."""
    import httpx

    pools = -(-concurrency // per_pool) if per_pool else 1
    size = -(-concurrency // pools)

    async def main() -> None:
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        clients = [httpx.AsyncClient(timeout=60, limits=limits) for _ in range(pools)]
        gates = [asyncio.Semaphore(size) for _ in range(pools)]

        async def one(k: int, body: dict) -> None:
            async with gates[k % pools]:
                resp = await clients[k % pools].post(url + "/completions", json=body)
                resp.json()["choices"][0]["logprobs"]["top_logprobs"][0]

        await asyncio.gather(*(one(k, b) for k, b in enumerate(bodies)))
        for c in clients:
            await c.aclose()

    start = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - start


def ours(url: str, bodies: list[dict], concurrency: int) -> float:
    """Seconds for a localeval run's path: cache lookup, backend, cache writes."""
    from localeval.backends.base import ScoreNext
    from localeval.backends.openai_compat import OpenAIBackend
    from localeval.run import CachedExecutor
    from localeval.store.cache import RequestCache

    requests = [ScoreNext(b["prompt"], ("A", "B", "C", "D")) for b in bodies]
    backend = OpenAIBackend("bench", base_url=url, concurrency=concurrency, top_logprobs=20)
    with tempfile.TemporaryDirectory() as tmp, RequestCache(Path(tmp) / "c.sqlite") as cache:
        start = time.perf_counter()
        out = CachedExecutor(backend, cache, True, "requests")(requests)
        seconds = time.perf_counter() - start
    assert all(r.logprobs and r.logprobs["A"] == -0.5 for r in out)
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", default="1,8,32,128")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    server = multiprocessing.Process(target=_server, args=(sock,), daemon=True)
    server.start()
    bodies = _bodies(args.requests)
    print(f"{args.requests} completions requests per run, loopback server (separate process), "
          f"median of {args.repeats} alternating runs")
    print(f"{'concurrency':>11} {'bare, 1 pool':>13} {'bare, pools of 16':>18} "
          f"{'localeval':>10} {'vs 1 pool':>10} {'vs pools of 16':>15} {'overhead/request':>17}")
    try:
        for c in (int(x) for x in args.concurrency.split(",")):
            times: dict[str, list[float]] = {"bare": [], "sharded": [], "ours": []}
            for _ in range(args.repeats):
                times["bare"].append(bare(url, bodies, c))
                times["sharded"].append(bare(url, bodies, c, per_pool=SHARD_CONNECTIONS))
                times["ours"].append(ours(url, bodies, c))
            rate = {k: args.requests / statistics.median(v) for k, v in times.items()}
            overhead_ms = (1 / rate["ours"] - 1 / rate["sharded"]) * 1000
            print(f"{c:>11} {rate['bare']:>13.0f} {rate['sharded']:>18.0f} {rate['ours']:>10.0f} "
                  f"{rate['ours'] / rate['bare']:>10.2f} {rate['ours'] / rate['sharded']:>15.2f} "
                  f"{overhead_ms:>14.3f} ms")
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
