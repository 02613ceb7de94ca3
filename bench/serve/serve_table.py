"""Prints the serving benchmark's JSON lines (bench/serve/h200_serve.sh) as a Markdown table:
offline rows with each one's ratio to the plain-PyTorch varlen anchor of the same round (or the
sorted HF anchor on the CPU), then the online rows.

  python3 bench/serve/serve_table.py serve.jsonl
"""
import json
import sys


def mfu(row, same_round):
    # The engine measures no matmul rate on the CPU: its row takes the anchors' of the same round.
    if row.get("mfu"):
        return row["mfu"]
    peak = max((a.get("matmul_tflops", 0.0) for a in same_round), default=0.0)
    return row.get("tflops", 0.0) / peak if peak else 0.0


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip().startswith("{")]
    offline = [r for r in rows if r.get("mode") == "offline"]
    print("| round | path | texts/s | real tokens/s | MFU | vs anchor |")
    print("|---:|---|---:|---:|---:|---:|")
    for r in offline:
        same = [a for a in offline if a.get("round") == r.get("round")]
        anchor = next((a for a in same if a["name"] == "torch_varlen"),
                      next((a for a in same if a["name"] == "hf_sorted"), None))
        ratio = r["real_tokens_per_s"] / anchor["real_tokens_per_s"] if anchor else float("nan")
        print(f"| {r.get('round', '')} | {r['name']} | {r['texts_per_s']:.0f} | "
              f"{r['real_tokens_per_s'] / 1e6:.3f}M | {100 * mfu(r, same):.1f}% | {ratio:.2f}x |")
    online = [r for r in rows if r.get("mode") == "online"]
    if online:
        print("\n| round | load | offered/s | completed/s | vs offline | refused | p50 ms | p99 ms "
              "| full batch ms | p99 / full batch |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in online:
            print(f"| {r.get('round', '')} | {r['load']:.2f} | {r['offered_per_s']:.0f} | "
                  f"{r['completed_per_s']:.0f} | {r['vs_offline']:.2f} | {r['refused']} | "
                  f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['full_batch_ms']:.1f} | "
                  f"{r['p99_over_full_batch']:.2f} |")


if __name__ == "__main__":
    main()
