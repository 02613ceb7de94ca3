"""Connection flood against `padless serve` (issue 44's target: with 10,000 idle connections and 500
that send one byte a second, a normal request's p99 stays within 2x of the quiet server's, memory
stays bounded, and the slow ones are closed at their deadline). Standard library only; on the CPU
or a GPU.

  1. quiet:  --clients closed-loop clients send single-text /embed requests for --measure-seconds,
             each on a new connection (as a new client arrives); p50/p99.
  2. flood:  open --idle connections that send nothing and --slow ones that send a request's
             header one byte a second (never finishing it), then the same measurement while they
             stay open. A request that gets no answer within --timeout counts as a timeout and
             its latency as the timeout.
  3. hold:   keep the flood for --hold-seconds more and watch which sockets the server closes, and
             when (the slow ones should go at the header deadline; the idle ones at the idle one).
The server's resident memory (VmRSS) is read quiet, flooded and after the flood, when this script
started the server. Prints one JSON line.

  python3 bench/serve/conn_flood.py --padless build/cli/padless --model ST_DIR --data IMDB.tsv \
      --device cuda --amp bf16 [--idle 10000 --slow 500]
"""
import argparse
import collections
import errno
import http.client
import json
import math
import selectors
import socket
import threading
import time

from serve_process import Server, add_server_args, raise_fd_limit

SLOW_REQUEST = (b"POST /embed HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000\r\nX-Padding: " + b"x" * 4000 + b"\r\n\r\n")


def read_texts(path, limit):
    texts = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i == 0 and line.startswith("label\t"):
                continue
            texts.append(line.rstrip("\n").split("\t", 1)[-1])
            if len(texts) >= limit:
                break
    return texts


def measure(server, route, bodies, clients, seconds, timeout):
    """Single-text requests, each on a new connection; latencies (s) and status counts."""
    host, port = server.host_port
    lock = threading.Lock()
    latencies, statuses = [], collections.Counter()
    deadline = time.time() + seconds

    def client(c):
        k = c
        while time.time() < deadline:
            start = time.time()
            try:
                conn = http.client.HTTPConnection(host, port, timeout=timeout)
                conn.request("POST", route, bodies[k % len(bodies)],
                             {"Content-Type": "application/json", "Connection": "close"})
                r = conn.getresponse()
                r.read()
                status = r.status
                conn.close()
            except socket.timeout:
                status = "timeout"
            except (OSError, http.client.HTTPException):
                status = "error"
            elapsed = time.time() - start if status != "timeout" else timeout
            k += clients
            with lock:
                statuses[str(status)] += 1
                if status == 200 or status == "timeout":
                    latencies.append(elapsed)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(latencies), dict(statuses)


def pct(v, q):
    return 1e3 * v[min(len(v) - 1, math.ceil(q * len(v)) - 1)] if v else None


def open_sockets(host, port, n, wave, connect_timeout, budget):
    """n non-blocking connections, opened in waves; those connected within the timeout. No new
    wave starts after `budget` seconds (a server that stops accepting would cost a timeout a
    wave); the connections never tried count as "not_tried"."""
    sel = selectors.DefaultSelector()
    out, failed = [], collections.Counter()
    give_up = time.time() + budget
    for start in range(0, n, wave):
        if time.time() > give_up:
            failed["not_tried"] += n - start
            break
        pending = {}
        for _ in range(min(wave, n - start)):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            err = s.connect_ex((host, port))
            if err not in (0, errno.EINPROGRESS):
                failed[errno.errorcode.get(err, str(err))] += 1
                s.close()
                continue
            pending[s.fileno()] = s
            sel.register(s, selectors.EVENT_WRITE)
        deadline = time.time() + connect_timeout
        while pending and time.time() < deadline:
            for key, _ in sel.select(timeout=max(0.0, deadline - time.time())):
                s = pending.pop(key.fd)
                sel.unregister(s)
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    failed[errno.errorcode.get(err, str(err))] += 1
                    s.close()
                else:
                    out.append(s)
        for s in pending.values():
            sel.unregister(s)
            s.close()
        if pending:
            failed["connect_timeout"] += len(pending)
    sel.close()
    return out, dict(failed)


class Flood:
    """Idle and slow sockets; a thread sends the slow ones a byte a second and notes when the
    server closes any of them (a readable socket that reads b"" or an error)."""

    def __init__(self, idle, slow):
        self.opened = time.time()
        self.socks = {s.fileno(): ("idle", s) for s in idle}
        self.socks.update({s.fileno(): ("slow", s) for s in slow})
        self.sent = {s.fileno(): 0 for s in slow}
        self.closed = {"idle": [], "slow": []}  # seconds after opening
        self.answered = collections.Counter()  # sockets the server wrote to (e.g. 408, 503)
        self.stop = threading.Event()
        self.sel = selectors.DefaultSelector()
        for fd, (_, s) in self.socks.items():
            self.sel.register(s, selectors.EVENT_READ)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _close(self, fd):
        kind, s = self.socks.pop(fd)
        self.sel.unregister(s)
        s.close()
        self.sent.pop(fd, None)
        self.closed[kind].append(time.time() - self.opened)

    def _run(self):
        next_byte = time.time()
        while not self.stop.is_set():
            for key, _ in self.sel.select(timeout=0.2):
                if key.fd not in self.socks:
                    continue
                try:
                    data = self.socks[key.fd][1].recv(65536)
                except OSError:
                    data = b""
                if data:
                    words = data.split(b" ", 2)
                    self.answered[words[1].decode(errors="replace")
                                  if data.startswith(b"HTTP/") and len(words) > 1 else "other"] += 1
                else:
                    self._close(key.fd)
            if time.time() >= next_byte:
                next_byte += 1.0
                for fd in list(self.sent):
                    i = self.sent[fd]
                    try:
                        self.socks[fd][1].send(SLOW_REQUEST[i % len(SLOW_REQUEST):][:1])
                        self.sent[fd] = i + 1
                    except OSError:
                        self._close(fd)

    def open_counts(self):
        kinds = collections.Counter(kind for kind, _ in list(self.socks.values()))
        return kinds["idle"], kinds["slow"]

    def close_all(self):
        self.stop.set()
        self.thread.join()
        for _, s in self.socks.values():
            s.close()
        self.sel.close()


def closes(times):
    return {"closed": len(times), "close_p50_s": sorted(times)[len(times) // 2] if times else None,
            "close_max_s": max(times) if times else None}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_server_args(p)
    p.add_argument("--data", required=True, help="TSV label<TAB>text")
    p.add_argument("--route", default="/embed", help="the measured requests' route")
    p.add_argument("--idle", type=int, default=10000)
    p.add_argument("--slow", type=int, default=500)
    p.add_argument("--clients", type=int, default=4, help="measuring clients")
    p.add_argument("--measure-seconds", type=float, default=8)
    p.add_argument("--hold-seconds", type=float, default=15)
    p.add_argument("--timeout", type=float, default=10, help="a measured request's limit")
    p.add_argument("--wave", type=int, default=500, help="connections opened at once")
    p.add_argument("--connect-timeout", type=float, default=5)
    p.add_argument("--open-budget", type=float, default=20,
                   help="seconds to open each kind of connection in (then the rest are skipped)")
    p.add_argument("--label", default="conn_flood")
    args = p.parse_args()
    fds = raise_fd_limit(args.idle + args.slow + 2048)
    if fds < args.idle + args.slow + 256:
        print(f"conn_flood: only {fds} open files allowed; fewer idle connections", flush=True)
        args.idle = max(0, fds - args.slow - 256)
    bodies = [json.dumps({"inputs": t}).encode() for t in read_texts(args.data, 256)]
    server = Server(args)
    row = {"name": args.label, "mode": "flood", "device": args.device, "amp": args.amp,
           "idle": args.idle, "slow": args.slow, "fd_limit": fds}
    try:
        measure(server, args.route, bodies, args.clients, 1.0, args.timeout)  # warm-up
        quiet, row["quiet_statuses"] = measure(server, args.route, bodies, args.clients,
                                               args.measure_seconds, args.timeout)
        row.update(quiet_p50_ms=pct(quiet, 0.5), quiet_p99_ms=pct(quiet, 0.99),
                   rss_quiet_mb=server.rss_mb())
        host, port = server.host_port
        t0 = time.time()
        idle, row["idle_failed"] = open_sockets(host, port, args.idle, args.wave,
                                                args.connect_timeout, args.open_budget)
        slow, row["slow_failed"] = open_sockets(host, port, args.slow, args.wave,
                                                args.connect_timeout, args.open_budget)
        flood = Flood(idle, slow)
        row.update(idle_connected=len(idle), slow_connected=len(slow),
                   open_seconds=time.time() - t0)
        time.sleep(1.0)
        flooded, row["flood_statuses"] = measure(server, args.route, bodies, args.clients,
                                                 args.measure_seconds, args.timeout)
        row.update(flood_p50_ms=pct(flooded, 0.5), flood_p99_ms=pct(flooded, 0.99),
                   rss_flood_mb=server.rss_mb())
        row["p99_over_quiet"] = (row["flood_p99_ms"] / row["quiet_p99_ms"]
                                 if quiet and flooded else None)
        time.sleep(max(0.0, args.hold_seconds))
        row["idle_open_at_end"], row["slow_open_at_end"] = flood.open_counts()
        row["held_seconds"] = time.time() - flood.opened
        flood.close_all()
        row["idle_close"], row["slow_close"] = closes(flood.closed["idle"]), \
            closes(flood.closed["slow"])
        row["answers_to_flood"] = dict(flood.answered)
        time.sleep(1.0)
        after, row["after_statuses"] = measure(server, args.route, bodies, args.clients, 2.0,
                                               args.timeout)
        row.update(after_p99_ms=pct(after, 0.99), rss_after_mb=server.rss_mb())
    finally:
        row["exit_code"] = server.stop()
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
