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
    results.py json NAME < SPEC.json     the same keyword arguments as one JSON object (headlines
                                         may be given as headline()'s keyword arguments)
    results.py text NAME LOG             a benchmark without structured results: its printed
                                         output is kept (JSON `output`), the SVG shows it
    results.py index DIR                 DIR/index.md: every benchmark's table, command, machine
    results.py summary DIR               DIR/summary.json + DIR/summary.md: every benchmark's
                                         headlines (below) in one table
    results.py table [--all] [DIR|summary.json]  the "Latest results" table of docs/benchmarks.md, made from
                                         summary.json: the key headlines (--all: every one)

Headlines: every benchmark also gives `headlines`, the same shape everywhere (`headline()`):
    {"row": what is compared, "unit": of the values,
     "reel": {"name", "median", "min", "max", "runs"},      Reel's figure
     "peer": {"name", "median", "min", "max", "runs"} | null, what it is compared with
     "ratio": {"median", "min", "max", "runs", "of": "peer/reel" | "reel/peer"} | null,
     "target": {"of": "ratio" | "reel", "op": ">=" | "<=" | "==", "value", "text"} | null,
     "met": true | false | null,
     "key": true | false}                                    false: supporting, not in the Latest results table
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


def stat(values, name=None):
    """The median, min, max and count of values (None without values); `name` labels it."""
    import statistics
    v = [x for x in (values if isinstance(values, (list, tuple)) else [values]) if isinstance(x, (int, float)) and x == x]
    if not v:
        return None
    d = {"median": statistics.median(v), "min": min(v), "max": max(v), "runs": len(v)}
    if name is not None:
        d = {"name": name, **d}
    return d


def headline(row, reel, unit=None, reel_name="reel", peer=None, peer_name=None, ratio=None, ratio_of="peer/reel",
             target=None, met=None, key=True):
    """One headline: Reel's figure (a number or a list of runs), optionally a peer's and the
    ratio between them (a list of paired ratios; None: computed from the medians as ratio_of
    says; [] or False: no ratio, the two are shown side by side),
    and a target (op, value[, "reel"]) checked against the ratio's median, or Reel's median
    when the target says "reel" or there is no ratio; `met` may be given instead (True/False).
    key=False: a supporting figure, in summary.md but left out of the Latest results table."""
    r = stat(reel, reel_name)
    p = stat(peer, peer_name) if peer is not None else None
    q = stat(ratio) if ratio else None   # [] or False: no ratio
    if ratio is None and r and p and r["median"] and p["median"]:
        q = stat(p["median"] / r["median"] if ratio_of == "peer/reel" else r["median"] / p["median"])
    if q is not None:
        q["of"] = ratio_of
    t = None
    if target is not None:
        op, value = target[0], target[1]
        of = target[2] if len(target) > 2 else ("ratio" if q is not None else "reel")
        sym = {">=": "≥", "<=": "≤", "==": "=", ">": ">", "<": "<"}[op]
        t = {"of": of, "op": op, "value": value,
             "text": ("ratio %s %s" % (sym, _num(value))) if of == "ratio" else ("Reel %s %s%s" % (sym, _num(value), " " + unit if unit else ""))}
    verdict = None
    if t is not None and met is None:
        # Met only when the whole spread clears the target; a median that clears it with a
        # spread that crosses it is "within noise" (and not met).
        x = (q if t["of"] == "ratio" else r) or {}
        if x.get("median") is not None:
            check = lambda v: {">=": v >= value, "<=": v <= value, "==": v == value, ">": v > value, "<": v < value}[op]
            whole = check(x["median"]) and check(x["min"]) and check(x["max"])
            met = whole
            verdict = "met" if whole else "within noise" if check(x["median"]) else "not met"
    elif met is not None:
        verdict = "met" if met else "not met"
    return {"row": row, "unit": unit, "reel": r, "peer": p, "ratio": q, "target": t,
            "met": None if met is None else bool(met), "verdict": verdict, "key": bool(key)}


def _num(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if float(v).is_integer() and abs(v) < 1e6:
        return "%d" % v
    return "%.3g" % v if abs(v) < 100 else "%.0f" % v


def write(name, title, columns=None, rows=None, plot=None, load_before=None, load_after=None,
          summary=None, parameters=None, notes=None, output=None, command=None, headlines=None):
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
        "headlines": headlines or [],
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


def add_headlines(name, specs):
    """Adds headlines (a list of headline() keyword-argument objects) to RESULTS_DIR/NAME.json,
    for a benchmark whose results are kept as printed output."""
    out_dir = os.environ.get("RESULTS_DIR")
    if not out_dir:
        return
    path = os.path.join(out_dir, name + ".json")
    doc = json.load(open(path))
    doc["headlines"] = [headline(**h) for h in specs]
    with open(path, "w") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")


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
        if f.endswith(".json") and f != "summary.json":
            try:
                d = json.load(open(os.path.join(directory, f)))
            except (OSError, ValueError):
                continue
            if isinstance(d, dict) and "benchmark" in d:
                docs.append(d)
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


def _fig(s, unit=None, ratio=False):
    """`median (min–max)` of a stat, or `median` for one run; with the unit."""
    if not s:
        return "—"
    f = (lambda v: "%.2f" % v) if ratio else _num
    out = f(s["median"]) + ("×" if ratio else "")
    if s.get("runs", 1) > 1 and s["min"] != s["max"]:
        out += " (%s–%s)" % (f(s["min"]), f(s["max"]))
    if unit and not ratio:
        out += " " + unit
    return out


def _rows_of(doc):
    """The summary rows of one benchmark's JSON: its headlines, or one row saying it has none."""
    hs = doc.get("headlines") or []
    if not hs:
        return [{"row": "(no headlines: see %s.txt)" % doc["benchmark"], "unit": None, "reel": None, "peer": None,
                 "ratio": None, "target": None, "met": None}]
    return hs


def _met(h):
    """A headline's met? cell: yes only when the whole spread clears the target."""
    v = h.get("verdict")
    if v == "within noise":
        return "within noise"
    m = h.get("met")
    return "yes" if m is True else "NO" if m is False else "—"


def _md_cell(text):
    return str(text).replace("|", "\\|")


def summary(directory):
    """DIR/summary.json (every benchmark's command, date, load, and headlines; the machine and
    versions once) and DIR/summary.md (one markdown table: bench, row, Reel, peer, ratio
    (spread), target, met?)."""
    docs = []
    for f in sorted(os.listdir(directory)):
        if f.endswith(".json") and f != "summary.json":
            try:
                d = json.load(open(os.path.join(directory, f)))
            except (OSError, ValueError):
                continue
            if isinstance(d, dict) and "benchmark" in d:
                docs.append(d)
    order = ["record", "seams", "jitter", "pressure", "photo", "preview", "launch", "jpeg", "capacity"]
    docs.sort(key=lambda d: (order.index(d["benchmark"]) if d["benchmark"] in order else len(order), d["benchmark"]))
    out = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": os.environ.get("SUMMARY_COMMAND") or "scripts/bench all",
           "machine": docs[0]["machine"] if docs else machine(),
           "versions": docs[0]["versions"] if docs else versions(),
           "benchmarks": [{"benchmark": d["benchmark"], "title": d.get("title"), "command": d.get("command"),
                           "date": d.get("date"), "loadBefore": d.get("loadBefore"), "loadAfter": d.get("loadAfter"),
                           # Each benchmark's own commit (rows re-run later carry theirs) and the
                           # scene it ran on (the pattern unless its parameters name another).
                           "commit": (d.get("versions") or {}).get("reel"),
                           "scene": (d.get("parameters") or {}).get("scene") or "pattern",
                           "headlines": _rows_of(d)} for d in docs]}
    with open(os.path.join(directory, "summary.json"), "w") as f:
        json.dump(out, f, indent=2, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(directory, "summary.md"), "w") as f:
        f.write(_summary_md(out))
    return out


def _load3(l):
    return " ".join((l or "?").split()[:1])


def _table_rows(doc, with_command, key_only=False):
    lines = []
    for b in doc["benchmarks"]:
        for i, h in enumerate([h for h in b["headlines"] if h.get("key", True) or not key_only]):
            peer = h.get("peer")
            cells = [b["benchmark"] if i == 0 else ""]
            if with_command:
                cells.append(("`%s`" % b.get("command")) if i == 0 else "")
            cells += [h.get("row", ""),
                      _fig(h.get("reel"), h.get("unit")),
                      ("%s %s" % (peer.get("name", ""), _fig(peer, h.get("unit")))) if peer else "—",
                      _fig(h.get("ratio"), ratio=True) + (", %s" % h["ratio"]["of"].replace("reel", "Reel") if h.get("ratio") else ""),
                      (h.get("target") or {}).get("text", "—"),
                      _met(h),
                      b.get("scene") or "pattern",
                      b.get("commit") or "?"]
            lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    return lines


def _machine_line(doc):
    m = doc["machine"]
    v = doc.get("versions", {})
    return "%s, %s cores, %s MiB, Linux %s, Debian %s; Reel %s, ffmpeg %s, GStreamer %s" % (
        m.get("cpu"), m.get("cores"), m.get("memoryMiB"), m.get("kernel"), m.get("debian"),
        v.get("reel", "?"), v.get("ffmpeg", "?"), v.get("gstreamer", "?"))


def _summary_md(doc):
    out = ["# Benchmark summary", "",
           "`%s` at %s on %s." % (doc.get("command"), doc.get("date"), _machine_line(doc)), "",
           "| bench | row | Reel | peer | ratio (spread) | target | met? | scene | commit |", "|---|---|---|---|---|---|---|---|---|"]
    out += _table_rows(doc, with_command=False)
    out += ["", "Commands and load (1-minute average before → after):", ""]
    for b in doc["benchmarks"]:
        out.append("- %s: `%s` at %s, load %s → %s" % (b["benchmark"], b.get("command"), b.get("date"),
                                                      _load3(b.get("loadBefore")), _load3(b.get("loadAfter"))))
    return "\n".join(out) + "\n"


def table(path, every=False):
    """The "Latest results" table of docs/benchmarks.md from summary.json (a file, or the directory
    holding it): a line naming the machine and the command, then one row a key headline
    (every headline with every=True)."""
    if os.path.isdir(path):
        path = os.path.join(path, "summary.json")
    doc = json.load(open(path))
    loads = [float(x.split()[0]) for b in doc["benchmarks"] for x in (b.get("loadBefore"), b.get("loadAfter"))
             if x and x.split() and x.split()[0].replace(".", "", 1).isdigit()]
    out = ["Made by `%s` at %s on %s; the load average (1 min) before and after each benchmark %s. "
           "Ratios are medians of paired runs in one invocation, spread in brackets; the table is "
           "printed by `scripts/bench table` from `bench-results/summary.json`." % (
               doc.get("command"), doc.get("date"), _machine_line(doc),
               ("was %s–%s" % (_num(min(loads)), _num(max(loads)))) if loads else "was not recorded"),
           "",
           "| benchmark | command | row | Reel | peer | ratio (spread) | target | met? | scene | commit |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    out += _table_rows(doc, with_command=True, key_only=not every)
    if not every:
        out += ["", "Key figures; every figure, with its target: `bench-results/summary.md` (`scripts/bench table --all`)."]
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) >= 2 and argv[0] == "json":
        spec = json.load(sys.stdin)
        # Headlines given as headline()'s arguments (Reel's figure a number or a list of runs)
        # are made into headlines; those already made are kept.
        spec["headlines"] = [h if isinstance(h.get("reel"), dict) or h.get("reel") is None else headline(**h)
                             for h in spec.get("headlines") or []]
        write(argv[1], **spec)
    elif len(argv) >= 3 and argv[0] == "text":
        lines = open(argv[2], errors="replace").read().splitlines()
        loads = [l.split(":", 1)[1].strip() for l in lines if re.match(r"^load( before| after)?:", l)]
        write(argv[1], title="%s (printed output; the script writes no structured results)" % argv[1],
              output=lines, load_before=loads[0] if loads else None, load_after=loads[-1] if len(loads) > 1 else None)
    elif len(argv) >= 2 and argv[0] == "index":
        index(argv[1])
    elif len(argv) >= 2 and argv[0] == "summary":
        summary(argv[1])
    elif len(argv) >= 1 and argv[0] == "table":
        every = "--all" in argv[1:]
        rest = [a for a in argv[1:] if a != "--all"]
        path = rest[0] if rest else (os.environ.get("RESULTS_DIR") or "bench-results")
        try:
            sys.stdout.write(table(path, every=every))
        except (OSError, ValueError, KeyError) as e:
            print("results.py table: %s: %s" % (path, e), file=sys.stderr)
            return 66
    elif len(argv) >= 2 and argv[0] == "headlines":
        # results.py headlines NAME < HEADLINES.json: adds headlines to RESULTS_DIR/NAME.json
        add_headlines(argv[1], json.load(sys.stdin))
    else:
        print(__doc__, file=sys.stderr)
        return 64
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
