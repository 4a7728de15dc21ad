#!/usr/bin/env python3
"""Results files of the benchmarks: RESULTS_DIR/NAME.json and RESULTS_DIR/NAME.svg.

Each JSON holds what was measured (columns + rows, and a summary where the benchmark has one),
how (the command, its parameters), and where: the machine (CPU model, cores, memory, kernel,
Debian release), the load average before and after, and the versions of everything measured
(Reel's commit, Swift, ffmpeg and libavcodec, GStreamer, x264/x265 where present, fio). The SVG
is a bar chart of the benchmark's headline figures (with their range where there is one).

From Python (the benchmarks' own summary code):
    sys.path.insert(0, "scripts/bench.d"); import results
    results.write("record", title=..., columns=[...], rows=[{...}, ...],
                  plot=dict(unit="x", bars=[dict(label=..., value=..., low=..., high=...)]),
                  load_before="...", load_after="...")      # does nothing unless RESULTS_DIR is set
From the shell:
    results.py json NAME < SPEC.json     the same keyword arguments as one JSON object
    results.py text NAME LOG             a benchmark without structured results: its printed
                                         output is kept (JSON `output`), the SVG shows it
    results.py index DIR                 DIR/index.md: every benchmark's table, command, machine
"""
import datetime
import html
import json
import os
import platform
import re
import subprocess
import sys


def _run(args):
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def machine():
    """The machine's description: what a reader needs to compare figures across machines."""
    cpu = None
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // 1024
    except OSError:
        pass
    try:
        debian = open("/etc/debian_version").read().strip()
    except OSError:
        debian = None
    return {"cpu": cpu, "cores": os.cpu_count(), "memoryMiB": mem, "kernel": platform.release(),
            "machine": platform.machine(), "debian": debian}


def versions():
    """Versions of Reel (git commit) and of the peers it is measured against."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    commit = _run(["git", "-C", root, "rev-parse", "--short", "HEAD"]).strip() or None
    dirty = bool(_run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"]).strip())
    ff = _run(["ffmpeg", "-hide_banner", "-version"])
    def grab(text, pattern):   # the first match of pattern's group 1 (its groups joined by dots)
        m = re.search(pattern, text or "", re.M)
        return ".".join(g for g in m.groups() if g) if m else None
    v = {"reel": (commit + ("+dirty" if dirty else "")) if commit else None,
         "swift": grab(_run(["swift", "--version"]), r"Swift version (\S+)"),
         "ffmpeg": grab(ff, r"^ffmpeg version (\S+)"),
         "libavcodec": grab(ff, r"^libavcodec\s+(\d+)\.\s*(\d+)\.\s*(\d+)"),
         "libswscale": grab(ff, r"^libswscale\s+(\d+)\.\s*(\d+)\.\s*(\d+)"),
         "gstreamer": grab(_run(["gst-launch-1.0", "--version"]), r"^GStreamer (\S+)"),
         "fio": grab(_run(["fio", "--version"]), r"^fio-(\S+)")}
    for pkg in ["libx264-164", "libx265-199", "gstreamer1.0-libav"]:
        out = _run(["dpkg-query", "-W", "-f", "${Version}", pkg]).strip()
        if out:
            v[pkg] = out
    return {k: val for k, val in v.items() if val}


def _loadavg():
    try:
        return open("/proc/loadavg").read().strip()
    except OSError:
        return None


def write(name, title, columns=None, rows=None, plot=None, load_before=None, load_after=None,
          summary=None, parameters=None, notes=None, output=None, command=None):
    """Writes RESULTS_DIR/NAME.json and NAME.svg; does nothing when RESULTS_DIR is unset."""
    out_dir = os.environ.get("RESULTS_DIR")
    if not out_dir:
        return None
    os.makedirs(out_dir, exist_ok=True)
    doc = {
        "benchmark": name,
        "title": title,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": command or os.environ.get("BENCH_COMMAND") or "scripts/bench " + name,
        "parameters": parameters or {},
        "machine": machine(),
        "loadBefore": load_before,
        "loadAfter": load_after or _loadavg(),
        "versions": versions(),
        "columns": columns or [],
        "rows": rows or [],
    }
    if summary is not None:
        doc["summary"] = summary
    if notes:
        doc["notes"] = notes
    if output is not None:
        doc["output"] = output
    if plot is not None:
        doc["plot"] = plot
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(out_dir, name + ".svg"), "w") as f:
        f.write(svg(doc))
    return doc


def _esc(s):
    return html.escape(str(s), quote=True)


def svg(doc):
    """A horizontal bar chart of doc['plot']['bars'] (label, value, optional low/high range),
    or, without bars, the benchmark's printed output as text."""
    title = doc.get("title") or doc["benchmark"]
    sub = "%s · %s · %s cores · load %s → %s · %s" % (
        doc["date"], doc["machine"].get("cpu") or "?", doc["machine"].get("cores"),
        " ".join((doc.get("loadBefore") or "?").split()[:3]), " ".join((doc.get("loadAfter") or "?").split()[:3]),
        doc["versions"].get("reel", "?"))
    plot = doc.get("plot") or {}
    bars = [b for b in plot.get("bars", []) if isinstance(b.get("value"), (int, float))]
    font = 'font-family="DejaVu Sans Mono, monospace"'
    if not bars:
        lines = doc.get("output") or ["(no figures)"]
        width, height = 1200, 70 + 15 * len(lines)
        parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">' % (width, height),
                 '<rect width="100%" height="100%" fill="white"/>',
                 '<text x="10" y="22" font-size="15" %s>%s</text>' % (font, _esc(title)),
                 '<text x="10" y="40" font-size="11" fill="#555" %s>%s</text>' % (font, _esc(sub))]
        for i, line in enumerate(lines):
            parts.append('<text x="10" y="%d" font-size="11" %s xml:space="preserve">%s</text>' % (62 + 15 * i, font, _esc(line)))
        parts.append("</svg>\n")
        return "\n".join(parts)
    label_w, bar_w, row_h, top = 330, 560, 22, 60
    vmax = max(max(b["value"], b.get("high", b["value"])) for b in bars) or 1
    if plot.get("reference") is not None:
        vmax = max(vmax, plot["reference"])
    vmax *= 1.1
    width, height = label_w + bar_w + 150, top + row_h * len(bars) + 50
    x = lambda v: label_w + bar_w * v / vmax
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">' % (width, height),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="10" y="22" font-size="15" %s>%s</text>' % (font, _esc(title)),
             '<text x="10" y="40" font-size="11" fill="#555" %s>%s</text>' % (font, _esc(sub))]
    palette = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb"]
    groups = list(dict.fromkeys(b.get("series", "") for b in bars))
    for i, b in enumerate(bars):
        y = top + i * row_h
        color = palette[groups.index(b.get("series", "")) % len(palette)]
        parts.append('<text x="%d" y="%d" font-size="12" text-anchor="end" %s>%s</text>' % (label_w - 8, y + 15, font, _esc(b["label"])))
        parts.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' % (label_w, y + 3, max(0.5, x(b["value"]) - label_w), row_h - 6, color))
        if "low" in b and "high" in b:
            parts.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="black"/>' % (x(b["low"]), x(b["high"]), y + row_h // 2, y + row_h // 2))
            for v in (b["low"], b["high"]):
                parts.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="black"/>' % (x(v), x(v), y + 6, y + row_h - 6))
        txt = ("%.3g" % b["value"]) + (" (%.3g–%.3g)" % (b["low"], b["high"]) if "low" in b and "high" in b else "")
        parts.append('<text x="%.1f" y="%d" font-size="11" %s>%s</text>' % (max(x(b["value"]), x(b.get("high", 0))) + 6, y + 15, font, _esc(txt)))
    axis_y = top + row_h * len(bars) + 4
    parts.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>' % (label_w, label_w + bar_w, axis_y, axis_y))
    for k in range(6):
        v = vmax * k / 5
        parts.append('<text x="%.1f" y="%d" font-size="10" text-anchor="middle" %s>%.3g</text>' % (x(v), axis_y + 14, font, v))
    if plot.get("reference") is not None:
        rx = x(plot["reference"])
        parts.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#888" stroke-dasharray="4 3"/>' % (rx, rx, top, axis_y))
    parts.append('<text x="%d" y="%d" font-size="11" %s>%s</text>' % (label_w, axis_y + 32, font, _esc(plot.get("unit", ""))))
    parts.append("</svg>\n")
    return "\n".join(parts)


def _markdown_table(columns, rows, limit=40):
    if not rows:
        return ""
    cols = columns or list(rows[0].keys())
    fmt = lambda v: ("%.3g" % v) if isinstance(v, float) else ",".join(map(str, v)) if isinstance(v, list) else str(v)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows[:limit]:
        out.append("| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |")
    if len(rows) > limit:
        out.append("| … %d more rows in the JSON |" % (len(rows) - limit) + " |" * (len(cols) - 1))
    return "\n".join(out)


def index(directory):
    """DIR/index.md: for every NAME.json, its title, command, date, load, machine and table."""
    docs = []
    for f in sorted(os.listdir(directory)):
        if f.endswith(".json"):
            try:
                docs.append(json.load(open(os.path.join(directory, f))))
            except (OSError, ValueError):
                continue
    out = ["# Benchmark results", ""]
    if docs:
        m = docs[0]["machine"]
        out += ["Machine: %s, %s cores, %s MiB, Linux %s, Debian %s." % (m.get("cpu"), m.get("cores"), m.get("memoryMiB"), m.get("kernel"), m.get("debian")),
                "Versions: " + ", ".join("%s %s" % kv for kv in docs[0]["versions"].items()) + ".", ""]
    for d in docs:
        out += ["## %s — %s" % (d["benchmark"], d.get("title", "")), "",
                "`%s` at %s, load %s → %s. Plot: [%s.svg](%s.svg)." % (d["command"], d["date"], d.get("loadBefore"), d.get("loadAfter"), d["benchmark"], d["benchmark"]), ""]
        if d.get("summary"):
            out += [_markdown_table(None, d["summary"]), ""]
        if d.get("rows"):
            out += [_markdown_table(d.get("columns"), d["rows"]), ""]
        elif d.get("output"):
            out += ["```"] + d["output"] + ["```", ""]
    with open(os.path.join(directory, "index.md"), "w") as f:
        f.write("\n".join(out) + "\n")


def main(argv):
    if len(argv) >= 2 and argv[0] == "json":
        spec = json.load(sys.stdin)
        write(argv[1], **spec)
    elif len(argv) >= 3 and argv[0] == "text":
        lines = open(argv[2], errors="replace").read().splitlines()
        loads = [l.split(":", 1)[1].strip() for l in lines if re.match(r"^load( before| after)?:", l)]
        write(argv[1], title="%s (printed output; the script writes no structured results)" % argv[1],
              output=lines, load_before=loads[0] if loads else None, load_after=loads[-1] if len(loads) > 1 else None)
    elif len(argv) >= 2 and argv[0] == "index":
        index(argv[1])
    else:
        print(__doc__, file=sys.stderr)
        return 64
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
