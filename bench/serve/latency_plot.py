"""Latency against load from the serving benchmark's JSON lines (padless_bench_serve's online rows,
as bench/serve/h200_serve.sh and graphs_on_off.sh write them): a CSV and an SVG plot, one line per
engine configuration ("name") and percentile, the median over rounds at each load; the y axis is
logarithmic, so that the p99 tail and the p50 fit one plot.

  python3 bench/serve/latency_plot.py serve.jsonl OUT_PREFIX [--title TEXT]

writes OUT_PREFIX.csv (name, load, rounds, p50_ms, p90_ms, p99_ms, completed_per_s) and
OUT_PREFIX.svg.
"""
import argparse
import csv
import json
import math
import statistics

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 760, 460, 70, 200, 40, 60
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
DASHES = {"p50_ms": "", "p90_ms": "6,3", "p99_ms": "2,3"}


def read_points(path):
    """{(name, load): [row, ...]} of the online rows."""
    points = {}
    for line in open(path):
        if not line.strip().startswith("{"):
            continue
        row = json.loads(line)
        if row.get("mode") == "online":
            points.setdefault((row["name"], round(row["load"], 4)), []).append(row)
    return points


def medians(points):
    table = []
    for (name, load), rows in sorted(points.items()):
        med = {k: round(statistics.median(r[k] for r in rows), 3)
               for k in ("p50_ms", "p90_ms", "p99_ms", "completed_per_s")}
        table.append({"name": name, "load": load, "rounds": len(rows), **med})
    return table


def svg(table, title):
    loads = [r["load"] for r in table]
    lat = [r[k] for r in table for k in DASHES]
    x_max = max(loads) * 1.05
    y_lo, y_hi = math.log10(min(lat) * 0.8), math.log10(max(lat) * 1.25)
    px = lambda x: LEFT + (WIDTH - LEFT - RIGHT) * x / x_max
    py = lambda y: TOP + (HEIGHT - TOP - BOTTOM) * (y_hi - math.log10(y)) / (y_hi - y_lo)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for exp in range(math.floor(y_lo), math.ceil(y_hi) + 1):
        for m in (1, 2, 5):
            v = m * 10 ** exp
            if y_lo <= math.log10(v) <= y_hi:
                out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py(v):.1f}" '
                           f'y2="{py(v):.1f}" stroke="#ddd"/>')
                out.append(f'<text x="{LEFT - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    for load in sorted(set(loads)):
        out.append(f'<line x1="{px(load):.1f}" x2="{px(load):.1f}" y1="{TOP}" '
                   f'y2="{HEIGHT - BOTTOM}" stroke="#eee"/>')
        out.append(f'<text x="{px(load):.1f}" y="{HEIGHT - BOTTOM + 16}" '
                   f'text-anchor="middle">{load:g}</text>')
    out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 20}" text-anchor="middle">'
               'offered load (share of the offline rate)</text>')
    out.append(f'<text transform="translate(18,{(TOP + HEIGHT - BOTTOM) / 2}) rotate(-90)" '
               'text-anchor="middle">latency, ms (log scale)</text>')
    names = sorted({r["name"] for r in table})
    legend_y = TOP + 10
    for i, name in enumerate(names):
        color = COLORS[i % len(COLORS)]
        rows = [r for r in table if r["name"] == name]
        for key, dash in DASHES.items():
            pts = " ".join(f"{px(r['load']):.1f},{py(r[key]):.1f}" for r in rows)
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2" '
                       f'stroke-dasharray="{dash}"/>')
            for r in rows:
                out.append(f'<circle cx="{px(r["load"]):.1f}" cy="{py(r[key]):.1f}" r="2.5" '
                           f'fill="{color}"/>')
            out.append(f'<line x1="{WIDTH - RIGHT + 15}" x2="{WIDTH - RIGHT + 45}" y1="{legend_y}" '
                       f'y2="{legend_y}" stroke="{color}" stroke-width="2" '
                       f'stroke-dasharray="{dash}"/>')
            out.append(f'<text x="{WIDTH - RIGHT + 50}" y="{legend_y + 4}">{name} '
                       f'{key[:-3]}</text>')
            legend_y += 18
        legend_y += 8
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("jsonl")
    parser.add_argument("out_prefix")
    parser.add_argument("--title", default="padless serve: latency against load")
    args = parser.parse_args()
    table = medians(read_points(args.jsonl))
    if not table:
        raise SystemExit(f"{args.jsonl}: no online rows")
    with open(args.out_prefix + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["name", "load", "rounds", "p50_ms", "p90_ms", "p99_ms",
                                          "completed_per_s"])
        w.writeheader()
        w.writerows(table)
    with open(args.out_prefix + ".svg", "w") as f:
        f.write(svg(table, args.title))


if __name__ == "__main__":
    main()
