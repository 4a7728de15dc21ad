#!/usr/bin/env bash
# The live preview's latency and cost while recording 1080p30 ProRes HQ in real time
# (synthetic 1920 sensor, 16x9 crop 1920x1080; the preview decimates it to 960x540):
#   - capture → last byte of the JPEG read by an HTTP client (X-Capture-Monotonic-Ns of each
#     part against CLOCK_MONOTONIC when the client has read the part), 1 and 8 clients;
#   - capture → decoded in Debian's Chromium (a page script reads /stream.mjpg with fetch,
#     decodes each JPEG with createImageBitmap; CLOCK_MONOTONIC mapped to the page's clock
#     through CLOCK_REALTIME), with Playwright for Python;
#   - frames dropped by the recording in each case, and the CPU the preview costs: the reel
#     process's user+system time with the preview and one client minus the same recording
#     without --preview, as percent of one core.
# Also the JPEG thread's own cost: `previewEncodeMs` from /status (mean ms a picture) × 30.
# DURATION (default 10) seconds per case. Prints p50/p95/p99 in ms.
set -euo pipefail
scripts/setup
python3 -c "import playwright" 2>/dev/null || python3 -m pip install -q playwright
swift build -c release 2>&1 | tail -1
load_before=$(cat /proc/loadavg)
echo "load: $load_before"
LOAD_BEFORE="$load_before" python3 - "$PWD/.build/release/reel" "${DURATION:-10}" <<'PY'
import json, os, secrets, socket, subprocess, sys, tempfile, threading, time, urllib.request
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
import mjpeg as M
reel, dur = sys.argv[1], float(sys.argv[2])

TOKEN = secrets.token_hex(16)  # every run's --preview-token: each request carries it

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")

def stream_client(port, stop, out):
    """Reads /stream.mjpg; for each part, ms from its capture to its last byte read here."""
    M.read_parts(port, TOKEN, stop, lambda h: out.append((time.monotonic_ns() - int(h["X-Capture-Monotonic-Ns"])) / 1e6))

BROWSER_JS = """async ([offsetMs, seconds, token]) => {
  const res = await fetch('/stream.mjpg?token=' + token); const reader = res.body.getReader();
  let buf = new Uint8Array(0); const lat = []; const end = performance.now() + seconds * 1000;
  const enc = new TextEncoder(), dec = new TextDecoder();
  const find = (a, n, from) => { outer: for (let i = from; i + n.length <= a.length; i++) { for (let k = 0; k < n.length; k++) if (a[i + k] !== n[k]) continue outer; return i; } return -1; };
  const sep = enc.encode('\\r\\n\\r\\n');
  while (performance.now() < end) {
    const {value, done} = await reader.read(); if (done) break;
    const b = new Uint8Array(buf.length + value.length); b.set(buf); b.set(value, buf.length); buf = b;
    for (;;) {
      const hs = find(buf, enc.encode('Content-Type: image/jpeg'), 0); if (hs < 0) break;
      const he = find(buf, sep, hs); if (he < 0) break;
      const head = dec.decode(buf.slice(hs, he));
      const len = +/Content-Length: (\\d+)/.exec(head)[1], cap = +/X-Capture-Monotonic-Ns: (\\d+)/.exec(head)[1];
      if (buf.length < he + 4 + len) break;
      const bmp = await createImageBitmap(new Blob([buf.slice(he + 4, he + 4 + len)], {type: 'image/jpeg'}));
      lat.push(performance.timeOrigin + performance.now() - (cap / 1e6 + offsetMs)); bmp.close();
      buf = buf.slice(he + 4 + len);
    }
  }
  reader.cancel(); return lat;
}"""

encode_ms = []

def run(clients=0, preview=True, browser=False):
    out = tempfile.mkdtemp(prefix="reel-bench-preview-")
    port = free_port()
    args = [reel, "record", "--scene", "pattern", "--pressure-handler", "off", "--source", "synthetic:1920", "--codec", "prores", "--duration", str(dur + 4),
            "--plain", "--json", "--out", out]
    if preview:
        args += ["--preview", f"127.0.0.1:{port}", "--preview-token", TOKEN]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lat, browser_lat, threads, stop = [], [], [], threading.Event()
    if preview:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/status?token={TOKEN}", timeout=1).read(); break
            except Exception:
                time.sleep(0.05)
        time.sleep(1)  # past the start
        for _ in range(clients):
            t = threading.Thread(target=stream_client, args=(port, stop, lat)); t.start(); threads.append(t)
        if browser:
            from playwright.sync_api import sync_playwright
            with sync_playwright() as pw:
                b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
                page = b.new_page()
                page.goto(f"http://127.0.0.1:{port}/status?token={TOKEN}")
                offset_ms = (time.time_ns() - time.monotonic_ns()) / 1e6
                browser_lat = page.evaluate(BROWSER_JS, [offset_ms, dur - 2, TOKEN])
                b.close()
        else:
            time.sleep(dur - 1)
        try:  # the browser may outlast the recording
            status = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/status?token={TOKEN}", timeout=5).read())
            encode_ms.append(status["previewEncodeMs"])
        except OSError:
            pass
        stop.set()
    _, status, usage = os.wait4(p.pid, 0)
    summary = json.loads(p.stdout.read())
    for t in threads:
        t.join()
    subprocess.run(["rm", "-rf", out])
    cpu = usage.ru_utime + usage.ru_stime
    return lat, browser_lat, summary["framesDropped"], cpu / summary["elapsedSeconds"] * 100

print(f"{'case':<34} {'parts':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'dropped':>8} {'reel CPU %':>11}")
results = {}
rows = []
for name, kw in [("no preview", dict(preview=False)), ("preview, 1 client", dict(clients=1)),
                 ("preview, 8 clients", dict(clients=8)), ("preview, browser", dict(browser=True)),
                 ("no preview (again)", dict(preview=False))]:
    lat, blat, drops, cpu = run(**kw)
    results[name] = cpu
    xs = blat if kw.get("browser") else lat
    label = name + (" (decoded)" if kw.get("browser") else " (bytes read)" if xs else "")
    print(f"{label:<34} {len(xs):>6} {pct(xs, 50):>8.1f} {pct(xs, 95):>8.1f} {pct(xs, 99):>8.1f} {drops:>8} {cpu:>11.1f}")
    rows.append(dict(case=label, parts=len(xs), p50Ms=pct(xs, 50) if xs else None, p95Ms=pct(xs, 95) if xs else None,
                     p99Ms=pct(xs, 99) if xs else None, dropped=drops, reelCpuPercent=cpu))
base = (results["no preview"] + results["no preview (again)"]) / 2
spread = abs(results["no preview"] - results["no preview (again)"])
print(f"preview JPEG thread: {min(encode_ms):.2f}–{max(encode_ms):.2f} ms a picture (crop copy + TurboJPEG, 960x540), "
      f"{min(encode_ms) * 3:.1f}–{max(encode_ms) * 3:.1f} % of one core at 30 fps")
print(f"preview CPU with 1 client: {results['preview, 1 client'] - base:.1f} % of one core "
      f"(8 clients: {results['preview, 8 clients'] - base:.1f} %); the two runs without preview differ by {spread:.1f} %")
heads = []
for r in rows:
    if r["parts"] and r["p95Ms"] is not None:
        heads.append(R.headline("%s: p95 latency from capture" % r["case"], r["p95Ms"], unit="ms", reel_name="reel --preview",
                                target=("<=", 50.0, "reel")))
        heads.append(R.headline("%s: frames dropped by the recording" % r["case"], r["dropped"], unit="frames", reel_name="reel --preview",
                                target=("==", 0, "reel"), key=r["case"].startswith("preview, 8 clients")))
heads.append(R.headline("preview CPU with 1 client (percent of one core; peer: the spread of the two runs without preview)",
                        results['preview, 1 client'] - base, unit="%", reel_name="preview", peer=spread, peer_name="no-preview spread", ratio=[]))
R.write("preview", headlines=heads, title="Live preview latency while recording 1080p30 ProRes HQ: capture to client (p50, p95-p99 whiskers)",
        columns=["case", "parts", "p50Ms", "p95Ms", "p99Ms", "dropped", "reelCpuPercent"], rows=rows,
        plot=dict(unit="ms from capture (bar: p50, whisker: p95-p99)",
                  bars=[dict(label=r["case"], value=r["p50Ms"], low=r["p95Ms"], high=r["p99Ms"]) for r in rows if r["parts"]]),
        parameters=dict(duration=dur), load_before=os.environ["LOAD_BEFORE"],
        notes=["preview CPU with 1 client: %.1f %% of one core" % (results['preview, 1 client'] - base)])
PY
echo "load: $(cat /proc/loadavg)"
