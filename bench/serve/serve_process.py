"""A `padless serve` process for the HTTP benchmarks (http_load.py, conn_flood.py): started on a
free port, its stderr drained (a full pipe would block the server), waited on until /health
answers 200, its resident memory read from /proc, and stopped with SIGTERM (a drain, exit 0).
Standard library only, so the clients run wherever python3 does."""
import http.client
import re
import resource
import signal
import subprocess
import threading
import time
import urllib.parse


def add_server_args(p):
    p.add_argument("--url", default="", help="an already running server (else --padless starts one)")
    p.add_argument("--padless", default="", help="the padless binary (build/cli/padless)")
    p.add_argument("--model", default="", help="--model of padless serve")
    p.add_argument("--device", default="cpu")
    p.add_argument("--amp", default="off", help="--amp of padless serve (off, bf16, fp8, int8)")
    p.add_argument("--max-batch-tokens", type=int, default=0, help="0: the server's default")
    p.add_argument("--server-flags", default="", help="more padless serve flags, space separated")


def raise_fd_limit(wanted):
    """Raises this process's open-file limit towards `wanted` (children inherit it); returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Server:
    def __init__(self, args):
        self.proc = None
        self.log = []  # the last lines of its stderr
        if args.url:
            self.url = args.url.rstrip("/")
            return
        if not (args.padless and args.model):
            raise SystemExit("give --url, or --padless and --model")
        cmd = [args.padless, "serve", "--model", args.model, "--port", "0", "--device",
               args.device, "--amp", args.amp, "--max-concurrent-requests", "16384",
               "--max-client-batch-size", "64", "--log-level", "warn"]
        if args.max_batch_tokens:
            cmd += ["--max-batch-tokens", str(args.max_batch_tokens)]
        cmd += args.server_flags.split()
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        self.url = None
        for line in self.proc.stderr:
            self._keep(line)
            m = re.search(r"ready on (http://\S+)", line)
            if m:
                self.url = m.group(1).rstrip("/")
                break
        if self.url is None:
            raise SystemExit(f"padless serve exited {self.proc.wait()} before its startup line:\n"
                             + "".join(self.log))
        threading.Thread(target=self._drain, daemon=True).start()
        self.wait_healthy()

    def _keep(self, line):
        self.log = (self.log + [line])[-40:]

    def _drain(self):
        for line in self.proc.stderr:
            self._keep(line)

    @property
    def host_port(self):
        u = urllib.parse.urlsplit(self.url)
        return u.hostname, u.port

    def wait_healthy(self, seconds=300):
        deadline = time.time() + seconds
        host, port = self.host_port
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection(host, port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            if self.proc is not None and self.proc.poll() is not None:
                raise SystemExit(f"padless serve exited {self.proc.returncode}:\n" + "".join(self.log))
            time.sleep(0.2)
        raise SystemExit("the server never became healthy")

    def rss_mb(self):
        """The server's resident memory in MiB (VmRSS), or None when it is not ours."""
        if self.proc is None:
            return None
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

    def stop(self):
        """SIGTERM, then the exit code (None when the server is not ours; -9 when killed)."""
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9
