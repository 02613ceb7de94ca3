"""The --serve mode of padless's Python reference scripts (tests/model_files/python_worker.h): one
process runs many jobs, so that a test binary imports torch and transformers once, not once per
reference run.

The first line on stdout, "ready", says the imports are done. Then each line on stdin is a job, the
JSON list of the script's command-line arguments, and gets one line on stdout: "ok", or "error: "
and the reason (the last line of the traceback, whose whole goes to stderr). Whatever else is
printed to stdout goes to stderr, so that it cannot be taken for a reply. Every job starts from
torch's random state of a fresh process, as if the script had been run on its own.
"""
import json
import os
import sys
import traceback


def _failure(stop):
    """The reply for a job that raised SystemExit (raise SystemExit(message), argparse's errors)."""
    if stop.code is None or stop.code == 0:
        return "ok"
    if isinstance(stop.code, int):
        return f"error: exit status {stop.code} (the reason is on stderr)"
    return f"error: {stop.code}"


def serve(main):
    """Runs main(argv) on each job read from stdin until stdin ends, then exits the process."""
    sys.stdout.flush()
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    torch = sys.modules.get("torch")  # the scripts import it; a script that does not has no seed
    fresh_seed = torch.initial_seed() if torch else None

    def reply(line):
        replies.write(" ".join(line.splitlines()) + "\n")
        replies.flush()

    reply("ready")
    for line in iter(sys.stdin.readline, ""):
        if not line.strip():
            continue
        if torch:
            torch.manual_seed(fresh_seed)
        try:
            main(json.loads(line))
            answer = "ok"
        except SystemExit as e:
            answer = _failure(e)
        except Exception as e:  # the job failed, the worker goes on
            traceback.print_exc()
            answer = "error: " + traceback.format_exception_only(type(e), e)[-1].strip()
        sys.stdout.flush()
        sys.stderr.flush()
        reply(answer)
    # At once: the interpreter's teardown after torch and transformers takes about a second, which
    # the test binary would wait for at its exit, and the jobs left nothing open to tidy.
    os._exit(0)
