"""`padless serve` on a real device, driven over HTTP as a TEI client would (bench/serve/README.md):
starts the server on a free port, checks its probabilities against transformers' on the same
Hugging Face checkpoint, runs concurrent clients for a few seconds (every answer 200 and well
formed), reads /metrics, then sends SIGTERM and expects a drain and exit 0. Prints one JSON line.

  python3 bench/serve/serve_smoke.py --padless build/cli/padless --model HF_DIR --data FILE
      [--device cuda --amp bf16] [--clients 32] [--seconds 5] [--tolerance 2e-2]
"""
import argparse
import concurrent.futures
import json
import re
import signal
import subprocess
import time

import requests
import torch


def start(args):
    cmd = [args.padless, "serve", "--model", args.model, "--port", "0", "--device", args.device,
           "--amp", args.amp, "--max-batch-tokens", "32768", "--max-concurrent-requests", "4096", "--max-client-batch-size", "64",
           "--log-level", "warn"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"ready on (http://\S+)", line)
        if m:
            return proc, m.group(1)
    raise SystemExit(f"padless serve exited {proc.wait()} before its startup line")


def wait_healthy(url, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if requests.get(f"{url}/health").status_code == 200:
            return
        time.sleep(0.2)
    raise SystemExit("the server never became healthy")


def reference_probabilities(args, texts):
    from transformers import AutoTokenizer, BertForSequenceClassification
    tok = AutoTokenizer.from_pretrained(args.model)
    model = BertForSequenceClassification.from_pretrained(args.model).eval()
    with torch.no_grad():
        enc = tok(texts, truncation=True, max_length=512, padding=True, return_tensors="pt")
        return torch.softmax(model(**enc).logits.double(), -1), model.config.id2label


def served_probabilities(url, texts, id2label):
    body = {"inputs": [[t] for t in texts], "raw_scores": False}
    answer = requests.post(f"{url}/predict", json=body)
    answer.raise_for_status()
    index = {name: i for i, name in id2label.items()}
    out = torch.zeros(len(texts), len(index), dtype=torch.float64)
    for row, ranked in enumerate(answer.json()):
        for entry in ranked:
            out[row, index[entry["label"]]] = entry["score"]
    return out


def load(url, texts, clients, seconds):
    def client(k):
        session, sent, bad = requests.Session(), 0, 0
        deadline = time.time() + seconds
        while time.time() < deadline:
            r = session.post(f"{url}/predict", json={"inputs": texts[(k + sent) % len(texts)]})
            ok = r.status_code == 200 and isinstance(r.json(), list) and "score" in r.json()[0]
            sent, bad = sent + 1, bad + (not ok)
        return sent, bad

    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(client, range(clients)))
    return sum(s for s, _ in results), sum(b for _, b in results)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--padless", required=True)
    p.add_argument("--model", required=True, help="a Hugging Face BERT checkpoint directory")
    p.add_argument("--data", required=True, help="TSV of label<TAB>text")
    p.add_argument("--device", default="cuda")
    p.add_argument("--amp", default="bf16")
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--tolerance", type=float, default=2e-2, help="max |p - p_ref| (bf16)")
    args = p.parse_args()
    texts = [line.rstrip("\n").split("\t", 1)[-1] for line in open(args.data, encoding="utf-8")][1:65]
    proc, url = start(args)
    try:
        wait_healthy(url)
        want, id2label = reference_probabilities(args, texts)
        got = served_probabilities(url, texts, id2label)
        max_diff = (got - want).abs().max().item()
        sent, bad = load(url, texts, args.clients, args.seconds)
        metrics = requests.get(f"{url}/metrics").text
        requests_total = sum(float(line.split()[-1]) for line in metrics.splitlines()
                             if line.startswith("padless_http_requests_total"))
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    row = {"name": "serve_smoke", "device": args.device, "amp": args.amp,
           "max_abs_prob_diff_vs_transformers": max_diff, "requests": sent,
           "requests_per_s": sent / args.seconds, "bad_answers": bad,
           "metrics_requests_total": requests_total, "exit_code": code}
    print(json.dumps(row), flush=True)
    ok = max_diff <= args.tolerance and bad == 0 and code == 0
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
