#!/usr/bin/env python3
"""Dev accuracy of `padless predict` outputs against the gold labels, and how far two precisions'
outputs are apart (issue 26: FP8 weights within 0.3 point of bf16).

usage: quantized_accuracy.py GOLD_TSV PRED_A PRED_B
GOLD_TSV has a header `label<TAB>text`; PRED_* are `padless predict` outputs (one
`label<TAB>probability` line per text, in order). Prints one JSON object: accuracy of A and B,
the accuracy difference in points, the share of texts whose label differs, and the largest
difference in the predicted label's probability where both agree on the label.
"""
import json
import sys


def gold_labels(path):
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        col = header.index("label")
        return [line.rstrip("\n").split("\t", 1)[col] for line in f if line.strip()]


def predictions(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            label, prob = line.rstrip("\n").split("\t")
            out.append((label, float(prob)))
    return out


def main():
    gold = gold_labels(sys.argv[1])
    a, b = predictions(sys.argv[2]), predictions(sys.argv[3])
    if not (len(gold) == len(a) == len(b)):
        sys.exit(f"lengths differ: gold {len(gold)}, A {len(a)}, B {len(b)}")
    acc = lambda p: sum(l == g for (l, _), g in zip(p, gold)) / len(gold)
    same = [(pa, pb) for (la, pa), (lb, pb) in zip(a, b) if la == lb]
    print(json.dumps({
        "texts": len(gold),
        "accuracy_a": round(acc(a), 4),
        "accuracy_b": round(acc(b), 4),
        "delta_points": round(100 * (acc(b) - acc(a)), 2),
        "label_flips": round(1 - len(same) / len(gold), 4),
        "max_abs_dp": round(max((abs(x - y) for x, y in same), default=0.0), 4),
    }))


if __name__ == "__main__":
    main()
