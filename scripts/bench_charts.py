#!/usr/bin/env python3
"""Draws unimem-bench's CSV (--csv FILE) as SVG charts, with no plotting library.

    scripts/bench_charts.py bench.csv OUTDIR [--title "CUDA 13.0, H200"]

Writes, where the CSV has the rows:
  pipeline.svg        the pipeline's strategies side by side: steady-state CPU writes, GPU phase
                      and CPU read stacked, the first iteration (allocation included) as a mark
  movement-h2d.svg    host -> GPU bandwidth against size (pinned copy, raw prefetch, unimem)
  movement-d2h.svg    GPU -> host bandwidth against size
  pipeline-sweep.svg  the pipeline (GPU phase + CPU read) against size, per strategy
  crossover.svg       a kernel reading its input k times: mapped against moved
  oversubscribe-sum.svg, oversubscribe-triad.svg
                      working sets of 0.5x to 2x the GPU's free memory: steady-state GB/s of
                      each variant (naive, zero-copy, prefetch per chunk, explicit copies,
                      unimem's tags and windows) side by side, per working set
Each chart is one self-contained SVG file (docs/pitfalls.md shows them).
"""
import csv
import math
import os
import sys
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
W, H = 760, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 200, 40, 60


def read_rows(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["section"] == "ratio":
                continue
            rows.append({"section": r["section"], "strategy": r["strategy"], "impl": r["impl"],
                         "metric": r["metric"], "unit": r["unit"], "median": float(r["median"]),
                         "min": float(r["min"] or r["median"]), "max": float(r["max"] or r["median"])})
    return rows


class Svg:
    def __init__(self, title):
        self.parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
                      f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
                      f'<rect width="{W}" height="{H}" fill="white"/>',
                      f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">'
                      f'{escape(title)}</text>']

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, anchor="start", size=12, rotate=None):
        t = f' transform="rotate({rotate} {x} {y})"' if rotate is not None else ""
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{t}>'
                 f'{escape(s)}</text>')

    def line(self, x1, y1, x2, y2, color="#000", width=1, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                 f'stroke="{color}" stroke-width="{width}"{d}/>')

    def rect(self, x, y, w, h, color, title=None):
        t = f"<title>{escape(title)}</title>" if title else ""
        self.add(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" '
                 f'fill="{color}">{t}</rect>')

    def legend(self, entries, dashed=()):
        x, y = W - RIGHT + 15, TOP + 10
        for i, (label, color) in enumerate(entries):
            if label in dashed:
                self.line(x, y + 18 * i - 4, x + 12, y + 18 * i - 4, color, 2, "4 2")
            else:
                self.rect(x, y + 18 * i - 9, 12, 10, color)
            self.text(x + 18, y + 18 * i, label)

    def save(self, path):
        with open(path, "w") as f:
            f.write("\n".join(self.parts + ["</svg>"]) + "\n")


def nice_ticks(hi, count=5):
    """Round tick values from 0 to about hi."""
    if hi <= 0:
        return [0, 1]
    raw = hi / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [step * i for i in range(int(math.ceil(hi / step)) + 1)]


def linear_axis(svg, hi, label):
    """A y axis from 0; returns the function from a value to its y."""
    ticks = nice_ticks(hi)
    top = ticks[-1]
    y_of = lambda v: H - BOTTOM - (H - BOTTOM - TOP) * v / top  # noqa: E731
    for t in ticks:
        y = y_of(t)
        svg.line(LEFT, y, W - RIGHT, y, "#ddd")
        svg.text(LEFT - 6, y + 4, f"{t:g}", "end")
    svg.line(LEFT, TOP, LEFT, H - BOTTOM)
    svg.line(LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM)
    svg.text(18, (TOP + H - BOTTOM) / 2, label, "middle", rotate=-90)
    return y_of


def pipeline_chart(rows, title, path):
    names, seen = [], set()
    for r in rows:
        if r["section"] == "pipeline" and (r["strategy"], r["impl"]) not in seen:
            seen.add((r["strategy"], r["impl"]))
            names.append((r["strategy"], r["impl"]))
    if not names:
        return False
    get = lambda s, i, m: next((r for r in rows if r["section"] == "pipeline" and  # noqa: E731
                                r["strategy"] == s and r["impl"] == i and r["metric"] == m), None)
    phases = [("cpu-init", "CPU writes a, b", COLORS[7]), ("gpu-phase", "GPU phase", COLORS[0]),
              ("cpu-read", "CPU reads c", COLORS[2])]
    hi = 0
    for s, i in names:
        hi = max(hi, sum((get(s, i, m) or {"median": 0})["median"] for m, _, _ in phases))
        first = get(s, i, "first")
        if first:
            hi = max(hi, first["median"])
    svg = Svg(title)
    y_of = linear_axis(svg, hi, "milliseconds (steady state; mark: first iteration)")
    slot = (W - RIGHT - LEFT) / len(names)
    for k, (s, i) in enumerate(names):
        x = LEFT + slot * k + slot * 0.15
        w = slot * 0.7
        base = 0
        for m, label, color in phases:
            r = get(s, i, m)
            if not r:
                continue
            svg.rect(x, y_of(base + r["median"]), w, y_of(base) - y_of(base + r["median"]), color,
                     f"{s}/{i} {label}: {r['median']:.1f} ms")
            base += r["median"]
        svg.text(x + w / 2, y_of(base) - 4, f"{base:.0f}", "middle", 10)
        first = get(s, i, "first")
        if first:
            y = y_of(first["median"])
            svg.line(x - 2, y, x + w + 2, y, "#000", 2, "4 2")
        label = s.split("-", 1) if len(s) > 10 and "-" in s else [s]
        label = [label[0] + "-", label[1]] if len(label) == 2 else label
        for j, part in enumerate(label + [i]):
            svg.text(x + w / 2, H - BOTTOM + 14 + 12 * j, part, "middle", 10)
    svg.legend([(label, color) for _, label, color in phases] + [("first iteration", "#000")],
               dashed=("first iteration",))
    svg.save(path)
    return True


def size_of(metric):
    return float(metric[:-3]) if metric.endswith("MiB") else None


def series_chart(rows, section, wanted, title, ylabel, path, log_y=False):
    """Lines of median against size (log2 x axis), one per (strategy, impl) in wanted."""
    series = []
    for s, i, label in wanted:
        pts = sorted((size_of(r["metric"]), r["median"]) for r in rows
                     if r["section"] == section and r["strategy"] == s and r["impl"] == i and
                     size_of(r["metric"]) is not None)
        if pts:
            series.append((label, pts))
    if not series:
        return False
    xs = sorted({p[0] for _, pts in series for p in pts})
    svg = Svg(title)
    lo_x, hi_x = math.log2(xs[0]), math.log2(xs[-1])
    x_of = lambda v: LEFT + (W - RIGHT - LEFT) * (  # noqa: E731
        (math.log2(v) - lo_x) / (hi_x - lo_x) if hi_x > lo_x else 0.5)
    values = [p[1] for _, pts in series for p in pts]
    if log_y:
        lo_y = math.floor(math.log10(min(v for v in values if v > 0)))
        hi_y = math.ceil(math.log10(max(values)))
        hi_y = hi_y if hi_y > lo_y else lo_y + 1
        y_of = lambda v: H - BOTTOM - (H - BOTTOM - TOP) * (  # noqa: E731
            (math.log10(max(v, 10 ** lo_y)) - lo_y) / (hi_y - lo_y))
        for e in range(lo_y, hi_y + 1):
            y = y_of(10 ** e)
            svg.line(LEFT, y, W - RIGHT, y, "#ddd")
            svg.text(LEFT - 6, y + 4, f"{10 ** e:g}", "end")
        svg.line(LEFT, TOP, LEFT, H - BOTTOM)
        svg.line(LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM)
        svg.text(18, (TOP + H - BOTTOM) / 2, ylabel, "middle", rotate=-90)
    else:
        y_of = linear_axis(svg, max(values), ylabel)
    for x in xs:
        svg.line(x_of(x), H - BOTTOM, x_of(x), H - BOTTOM + 4)
        svg.text(x_of(x), H - BOTTOM + 17, f"{x:g}" if x < 1024 else f"{x / 1024:g} Gi", "middle")
    svg.text((LEFT + W - RIGHT) / 2, H - 18, "size (MiB)", "middle")
    for k, (label, pts) in enumerate(series):
        color = COLORS[k % len(COLORS)]
        path_d = " ".join(f"{'M' if j == 0 else 'L'}{x_of(x):.1f},{y_of(v):.1f}"
                          for j, (x, v) in enumerate(pts))
        svg.add(f'<path d="{path_d}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, v in pts:
            svg.add(f'<circle cx="{x_of(x):.1f}" cy="{y_of(v):.1f}" r="3" fill="{color}">'
                    f"<title>{escape(label)} {x:g} MiB: {v:.3g}</title></circle>")
    svg.legend([(label, COLORS[k % len(COLORS)]) for k, (label, _) in enumerate(series)])
    svg.save(path)
    return True


def crossover_chart(rows, title, path):
    ks, data = [], {}
    for r in rows:
        if r["section"] == "crossover" and r["metric"].startswith("k="):
            k = int(r["metric"][2:])
            data[(r["strategy"], k)] = r["median"]
            if k not in ks:
                ks.append(k)
    if not ks:
        return False
    ks.sort()
    svg = Svg(title)
    y_of = linear_axis(svg, max(data.values()), "milliseconds, kernel (and prefetch) until done")
    slot = (W - RIGHT - LEFT) / len(ks)
    entries = [("mapped", "mapped (nothing moves)", COLORS[3]),
               ("moved", "moved (prefetch + kernel)", COLORS[0])]
    for j, k in enumerate(ks):
        for e, (name, label, color) in enumerate(entries):
            v = data.get((name, k))
            if v is None:
                continue
            x = LEFT + slot * j + slot * (0.15 + 0.35 * e)
            svg.rect(x, y_of(v), slot * 0.33, y_of(0) - y_of(v), color, f"{label}, k={k}: {v:.1f} ms")
            svg.text(x + slot * 0.165, y_of(v) - 4, f"{v:.0f}", "middle", 10)
        svg.text(LEFT + slot * (j + 0.5), H - BOTTOM + 16, f"k = {k}", "middle")
    svg.text((LEFT + W - RIGHT) / 2, H - 18, "reads of each element per kernel", "middle")
    svg.legend([(label, color) for _, label, color in entries])
    svg.save(path)
    return True


OVERSUBSCRIBE_VARIANTS = ["naive/raw", "zero-copy/raw", "prefetch-chunks/raw", "explicit/raw",
                          "tagged/unimem", "window/unimem", "window-moved/unimem",
                          "budgeted-pool/unimem"]


def oversubscribe_chart(rows, kernel, title, path):
    """Bars of steady-state GB/s per variant, grouped by working set (x the free memory)."""
    factors, data = [], {}
    for r in rows:
        if r["section"] != "oversubscribe" or r["metric"] != "steady":
            continue
        if not r["strategy"].startswith(kernel + "-"):
            continue
        f = r["strategy"][len(kernel) + 1:]
        data[(f, r["impl"])] = r["median"]
        if f not in factors:
            factors.append(f)
    if not factors:
        return False
    factors.sort(key=lambda f: float(f.rstrip("x")))
    impls = [i for i in OVERSUBSCRIBE_VARIANTS if any((f, i) in data for f in factors)]
    svg = Svg(title)
    y_of = linear_axis(svg, max(data.values()), "GB/s, working set / pass time (steady state)")
    slot = (W - RIGHT - LEFT) / len(factors)
    bar = slot * 0.8 / len(impls)
    for j, f in enumerate(factors):
        for e, impl in enumerate(impls):
            v = data.get((f, impl))
            if v is None:
                continue
            x = LEFT + slot * j + slot * 0.1 + bar * e
            svg.rect(x, y_of(v), bar * 0.9, y_of(0) - y_of(v), COLORS[e % len(COLORS)],
                     f"{impl}, {f}: {v:.1f} GB/s")
        svg.text(LEFT + slot * (j + 0.5), H - BOTTOM + 16, f, "middle")
    svg.text((LEFT + W - RIGHT) / 2, H - 18, "working set, x the GPU's free memory", "middle")
    svg.legend([(impl, COLORS[e % len(COLORS)]) for e, impl in enumerate(impls)])
    svg.save(path)
    return True


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2
    rows = read_rows(argv[1])
    out = argv[2]
    title = argv[argv.index("--title") + 1] if "--title" in argv else "unimem-bench"
    os.makedirs(out, exist_ok=True)
    made = []
    if pipeline_chart(rows, f"Pipeline, 3 x 1 GiB: strategies side by side ({title})",
                      os.path.join(out, "pipeline.svg")):
        made.append("pipeline.svg")
    series = [  # (file, section, lines, title, y label, log y)
        ("movement-h2d.svg", "movement",
         [("h2d-pinned-copy", "raw", "pinned copy (raw)"),
          ("h2d-prefetch", "raw", "prefetch, one call (raw)"),
          ("h2d-prefetch", "unimem", "unimem prefetch")],
         "Host -> GPU bandwidth by size", "GB/s", False),
        ("movement-d2h.svg", "movement",
         [("d2h-pinned-copy", "raw", "pinned copy (raw)"),
          ("d2h-prefetch", "raw", "prefetch, one call (raw)"),
          ("d2h-ready-for-host", "unimem", "unimem ready_for_host")],
         "GPU -> host bandwidth by size", "GB/s", False),
        ("pipeline-sweep.svg", "pipeline-sweep",
         [("explicit-pinned", "raw", "explicit pinned (raw)"),
          ("host-mapped", "raw", "host-mapped (raw)"),
          ("tags", "unimem", "tags, moved (unimem)"),
          ("mapped", "unimem", "tags, mapped (unimem)")],
         "Pipeline by size, GPU phase + CPU read", "milliseconds (log)", True),
    ]
    for name, section, lines, what, ylabel, log_y in series:
        if series_chart(rows, section, lines, f"{what} ({title})", ylabel,
                        os.path.join(out, name), log_y=log_y):
            made.append(name)
    if crossover_chart(rows, f"Crossover: a kernel reading 1 GiB k times ({title})",
                       os.path.join(out, "crossover.svg")):
        made.append("crossover.svg")
    for kernel, what in (("sum", "a read-only stream (sum)"),
                         ("triad", "a read-write stream (triad)")):
        name = f"oversubscribe-{kernel}.svg"
        if oversubscribe_chart(rows, kernel, f"Working sets beyond the GPU, {what} ({title})",
                               os.path.join(out, name)):
            made.append(name)
    print(f"bench_charts: wrote {len(made)} chart(s) to {out}: {', '.join(made) or 'none'}")
    return 0 if made else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
