"""HTTP load on `padless serve`'s /embed (issue 44), on the CPU or a GPU, standard library only.
Two phases on one server (started here with --padless/--model, or --url):

  batches  --clients C closed-loop clients, each posting --batch texts per request
           ({"inputs": [...]}) back to back for --seconds: texts/s against the engine's offline
           rate (--offline-rate, or the texts_per_s of the --offline-name row of --offline-jsonl,
           padless_bench_embed's line); the target is at least 85%.
  single   for each of --loads, single-text requests arriving as a Poisson process at that fraction
           of the offline rate for --single-seconds (open loop: --workers connections, each
           request's latency counted from its scheduled arrival, so a stalled server shows up as
           latency rather than as fewer requests); p50/p90/p99 against one full batch's time
           (--max-batch-tokens real tokens at the offline rate); the target is p99 within 4x.

Clients run in --procs processes (threads in each), so that reading ~250 KB of JSON vectors per
batch does not make the client the bottleneck; client_cores says how many cores they used. Every
--check-every-th answer is parsed and checked (one finite vector of one width per input). Prints
one JSON line per phase, with the server's own view of it from /metrics (histogram deltas over the
phase: `server_p50_ms`/`server_p99_ms` from reading the request to writing the answer, and the
device batches' tokens and times), which tells a tail of the server from one of the clients.

  python3 bench/serve/http_load.py --padless build/cli/padless --model ST_DIR --data IMDB.tsv \
      --device cuda --amp bf16 --max-batch-tokens 32768 --offline-jsonl embed.jsonl \
      --offline-name padless_bf16 [--clients 32 --batch 32 --seconds 10 --loads 0.75]
"""
import argparse
import collections
import http.client
import json
import math
import multiprocessing
import random
import re
import resource
import threading
import time

from serve_process import Server, add_server_args


def read_texts(path, limit):
    texts = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i == 0 and line.startswith("label\t"):
                continue
            texts.append(line.rstrip("\n").split("\t", 1)[-1])
            if limit and len(texts) >= limit:
                break
    return texts


def check_answer(body, inputs):
    """Empty string when `body` is one finite vector of one width per input, else what is wrong."""
    try:
        vectors = json.loads(body)
    except ValueError:
        return "not JSON"
    if not isinstance(vectors, list) or len(vectors) != inputs:
        return f"not a list of {inputs} vectors"
    widths = {len(v) for v in vectors if isinstance(v, list)}
    if len(widths) != 1 or 0 in widths:
        return "vectors of several widths, or empty"
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for v in vectors for x in v):
        return "a value that is not a finite number"
    return ""


class Client:
    """One keep-alive connection; reconnects after an error."""

    def __init__(self, host, port, route, timeout):
        self.host, self.port, self.route, self.timeout = host, port, route, timeout
        self.conn = None

    def post(self, body):
        """(status, response body); status 0 for a connection error or a timeout."""
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.conn.request("POST", self.route, body, {"Content-Type": "application/json"})
            r = self.conn.getresponse()
            return r.status, r.read()
        except (OSError, http.client.HTTPException):
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            return 0, b""


def worker_proc(cfg, index, queue):
    """One client process: cfg["threads"] threads, each its own connection."""
    texts, batch = cfg["texts"], cfg["batch"]
    bodies = [json.dumps({"inputs": texts[i:i + batch]}).encode()
              for i in range(0, len(texts) - batch + 1, batch)]
    lock = threading.Lock()
    out = {"latencies": [], "inputs": 0, "statuses": collections.Counter(), "bad": [],
           "requests": 0}
    start = cfg["start"]

    def thread(t):
        rng = random.Random(1000 * index + t)
        client = Client(cfg["host"], cfg["port"], cfg["route"], cfg["timeout"])
        k = rng.randrange(len(bodies))
        next_at = start + (rng.expovariate(cfg["rate"]) if cfg["rate"] else 0)
        local = []
        while True:
            if cfg["rate"]:
                now = time.time()
                if next_at - start >= cfg["seconds"]:
                    break
                if next_at > now:
                    time.sleep(next_at - now)
                sent_at = next_at  # open loop: latency from the scheduled arrival
                next_at += rng.expovariate(cfg["rate"])
            else:
                sent_at = time.time()
                if sent_at - start >= cfg["seconds"]:
                    break
            status, body = client.post(bodies[k % len(bodies)])
            done = time.time()
            k += 1
            problem = ""
            if status == 200 and cfg["check_every"] and k % cfg["check_every"] == 0:
                problem = check_answer(body, batch)
            local.append((done - sent_at, status, problem))
        with lock:
            for latency, status, problem in local:
                out["requests"] += 1
                out["statuses"][status] += 1
                if status == 200:
                    out["latencies"].append(latency)
                    out["inputs"] += batch
                if problem:
                    out["bad"].append(problem)

    threads = [threading.Thread(target=thread, args=(t,)) for t in range(cfg["threads"])]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    queue.put(out)


def scrape_histograms(host, port):
    """{(family, labels): {"le": [(bound, cumulative count)], "count": n}} from /metrics."""
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    except (OSError, http.client.HTTPException):
        return {}
    finally:
        conn.close()
    out = {}
    for line in text.splitlines():
        m = re.match(r'(\w+)_bucket\{(?:(.*),)?le="([^"]+)"\} (\d+)$', line)
        if m:
            h = out.setdefault((m.group(1), m.group(2) or ""), {"le": []})
            h["le"].append((float(m.group(3)), int(m.group(4))))
    return out


def histogram_quantile(before, after, q):
    """The q-quantile of what a histogram saw between two scrapes, linear within its bucket (as
    Prometheus' histogram_quantile), or None when it saw nothing."""
    old = dict(before["le"]) if before else {}
    cumulative = [(le, n - old.get(le, 0)) for le, n in after["le"]]
    total = cumulative[-1][1] if cumulative else 0
    if total == 0:
        return None
    rank, lower, below = q * total, 0.0, 0
    for le, n in cumulative:
        if n >= rank:
            if math.isinf(le):
                return lower  # past the last finite bound: report that bound
            return lower + (le - lower) * (rank - below) / max(1, n - below)
        lower, below = le, n
    return lower


def server_view(before, after, route):
    """The phase as the server saw it: request latency and device batches (histogram deltas)."""
    view = {}
    wanted = {"server_request_ms": ("padless_http_request_duration_seconds", f'route="{route}"', 1e3),
              "batch_tokens": ("padless_batch_tokens", "", 1),
              "batch_device_ms": ("padless_batch_device_seconds", "", 1e3)}
    for name, (family, labels, scale) in wanted.items():
        h = after.get((family, labels))
        if h is None:
            continue
        for q in (0.5, 0.99):
            v = histogram_quantile(before.get((family, labels)), h, q)
            view[f"{name}_p{int(q * 100)}"] = None if v is None else v * scale
    return view


def run_phase(args, server, texts, batch, connections, seconds, rate):
    """`connections` clients over args.procs processes; rate: total requests/s (0: closed loop)."""
    host, port = server.host_port
    procs = max(1, min(args.procs, connections))
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    metrics_before = scrape_histograms(host, port)
    start = time.time() + 0.5  # every process starts its clock together
    workers = []
    for i in range(procs):
        threads = connections // procs + (i < connections % procs)
        cfg = {"texts": texts, "batch": batch, "threads": threads, "host": host, "port": port,
               "route": args.route, "timeout": args.timeout, "seconds": seconds, "start": start,
               "rate": rate / connections if rate else 0.0, "check_every": args.check_every}
        w = ctx.Process(target=worker_proc, args=(cfg, i, queue))
        w.start()
        workers.append(w)
    parts = [queue.get() for _ in workers]
    for w in workers:
        w.join()
    wall = time.time() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seen = server_view(metrics_before, scrape_histograms(host, port), args.route)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    latencies = sorted(x for p in parts for x in p["latencies"])
    statuses = collections.Counter()
    for p in parts:
        statuses.update(p["statuses"])
    inputs = sum(p["inputs"] for p in parts)

    def pct(q):
        return 1e3 * latencies[min(len(latencies) - 1, math.ceil(q * len(latencies)) - 1)] \
            if latencies else None

    return {"requests": sum(p["requests"] for p in parts), "texts": inputs,
            "seconds": wall, "texts_per_s": inputs / wall, "p50_ms": pct(0.50),
            "p90_ms": pct(0.90), "p99_ms": pct(0.99), "max_ms": pct(1.0),
            "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "bad_answers": sum(len(p["bad"]) for p in parts),
            "bad_examples": sorted({b for p in parts for b in p["bad"]})[:3],
            "client_cores": cpu / wall, **seen}


def offline_rate(args):
    """(texts/s, real tokens/s) of the engine offline: given, or read from the JSONL."""
    if args.offline_rate:
        return args.offline_rate, 0.0
    if args.offline_jsonl:
        for line in open(args.offline_jsonl):
            if line.startswith("{"):
                row = json.loads(line)
                if row.get("name") == args.offline_name and row.get("task", "embed") == "embed":
                    return row["texts_per_s"], row["real_tokens_per_s"]
    return 0.0, 0.0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_server_args(p)
    p.add_argument("--data", required=True, help="TSV label<TAB>text")
    p.add_argument("--limit", type=int, default=4096, help="texts cycled through")
    p.add_argument("--route", default="/embed")
    p.add_argument("--clients", type=int, default=32, help="batch phase (0: skip it)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--loads", default="0.75", help="single-text phases, fractions of offline")
    p.add_argument("--single-seconds", type=float, default=8)
    p.add_argument("--workers", type=int, default=256, help="single phase: connections")
    p.add_argument("--procs", type=int, default=8)
    p.add_argument("--warmup-seconds", type=float, default=2)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--check-every", type=int, default=20,
                   help="parse every N-th answer as /embed's (0: none, e.g. for another route)")
    p.add_argument("--offline-rate", type=float, default=0, help="texts/s of the engine offline")
    p.add_argument("--offline-jsonl", default="")
    p.add_argument("--offline-name", default="padless_bf16")
    p.add_argument("--label", default="http_embed")
    args = p.parse_args()
    texts = read_texts(args.data, args.limit)
    if len(texts) < args.batch:
        p.error(f"{args.data}: {len(texts)} texts, fewer than --batch {args.batch}")
    rate, tokens_rate = offline_rate(args)
    server = Server(args)
    base = {"mode": "http", "task": "embed", "device": args.device, "amp": args.amp,
            "route": args.route, "offline_texts_per_s": rate}
    try:
        run_phase(args, server, texts, args.batch, max(1, args.clients), args.warmup_seconds, 0)
        if args.clients:
            r = run_phase(args, server, texts, args.batch, args.clients, args.seconds, 0)
            row = dict(name=f"{args.label}_b{args.batch}", clients=args.clients, batch=args.batch,
                       **base, **r, vs_offline=r["texts_per_s"] / rate if rate else None)
            print(json.dumps(row), flush=True)
        # One full batch: --max-batch-tokens real tokens at the engine's offline token rate.
        full_ms = 1e3 * args.max_batch_tokens / tokens_rate if tokens_rate and \
            args.max_batch_tokens else None
        for load in (float(x) for x in args.loads.split(",") if x.strip()):
            if not rate:
                print("http_load: no offline rate, single-text phases skipped", flush=True)
                break
            r = run_phase(args, server, texts, 1, args.workers, args.single_seconds, load * rate)
            row = dict(name=f"{args.label}_single", load=load, offered_per_s=load * rate,
                       workers=args.workers, **base, **r, full_batch_ms=full_ms,
                       p99_over_full_batch=r["p99_ms"] / full_ms if full_ms else None,
                       vs_offline=r["texts_per_s"] / rate)
            print(json.dumps(row), flush=True)
    finally:
        code = server.stop()
        if code not in (None, 0):
            print(json.dumps({"name": f"{args.label}_exit", "exit_code": code,
                              "log_tail": server.log[-5:]}), flush=True)


if __name__ == "__main__":
    main()
