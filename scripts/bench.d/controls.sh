#!/usr/bin/env bash
# A control press to its effect in the frame, from the preview page's endpoint and from the
# control socket doing the same, while `reel record` records 720p30 ProRes proxy in real time
# (the flat pattern: synthetic 1280 sensor, 16x9 crop). Each press sets the zoom to a new
# value: `POST /control?name=zoom&value=V` (HTTP keep-alive, bearer token: what the page's
# slider sends) or `{"set": "zoom", "value": V}` on one open control-socket connection. The
# summary's `controlChanges` name the first frame that carries each change; the preview's
# stream (read by a client here) gives when the session handed that frame, zoomed, to the
# preview (X-Capture-Monotonic-Ns) and when the client had it. Per press, from the moment
# before the request is sent:
#   - to the first frame carrying the change handed to the preview;
#   - to that frame read by a stream client (what the page shows).
# ROUNDS (default 5) rounds of PRESSES (default 20) presses per way, the two ways taking
# turns; presses 150-183 ms apart (random phase against the frames). Prints p50 and p95 per
# way and the page/socket ratio of each round's p50 (its spread over the rounds).
# Then a change made elsewhere, seen in a browser: the control socket sets the zoom (ROUNDS x
# PRESSES/2 times) and the page open in Debian's chromium (Playwright) shows it in its state
# line, pushed on /events: from the request's send to the page's mutation of the line (the
# page's clock brought to this process's by an offset measured each round), p50 and p95,
# against one frame interval (33.3 ms).
# First, the page's first picture from the command's start: LAUNCHES (default 3) times, exec
# of `reel record --preview` to the page's <img> holding a decoded picture in a Chromium
# that was already running (the page is opened once, as soon as the port answers: a connect
# every 2 ms). FRESH=1: each
# launch of reel gets an empty XDG_DATA_HOME and XDG_CACHE_HOME of its own (a newcomer's first
# run; Chromium keeps the machine's: an empty one costs it a font-cache rebuild of seconds).
set -euo pipefail
scripts/setup chromium
python3 -c "import playwright" 2>/dev/null || python3 -m pip install -q playwright
swift build -c release 2>&1 | tail -1
load_before=$(cat /proc/loadavg)
echo "load: $load_before   commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)   scene: pattern"
LOAD_BEFORE="$load_before" python3 - "$PWD/.build/release/reel" "${ROUNDS:-5}" "${PRESSES:-20}" <<'PY'
import http.client, json, os, random, secrets, signal, socket, subprocess, sys, tempfile, threading, time
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
import mjpeg as M
reel, rounds, presses = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
TOKEN = secrets.token_hex(16)

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")

def median(xs):
    return pct(xs, 50)

frames = {}   # frame index -> (capture ns, ns when this client had the whole part)

def stream_client(port, stop):
    def part(h):
        frames[int(h["X-Frame-Index"])] = (int(h["X-Capture-Monotonic-Ns"]), time.monotonic_ns())
    M.read_parts(port, TOKEN, stop, part)

from playwright.sync_api import sync_playwright

# The page's first picture from the command's start: Chromium is up and waiting; `reel record
# --preview` is exec'd; the page is opened as soon as the port answers; the time from exec
# to the page's <img> holding its first decoded picture (naturalWidth > 0), LAUNCHES runs.
def browser_offset(page):
    """The page's clock (performance.timeOrigin + performance.now(): Chromium's monotonic clock
    plus an offset fixed when the page started) minus this process's time.time(), in ms: the
    read with the shortest round trip of 5, against the round trip's midpoint."""
    best = None
    for _ in range(5):
        a = time.time() * 1000
        b = page.evaluate("() => performance.timeOrigin + performance.now()")
        c = time.time() * 1000
        if best is None or c - a < best[0]:
            best = (c - a, b - (a + c) / 2)
    return best[1]

def first_picture_ms(work):
    port = free_port()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        env = dict(os.environ)
        if os.environ.get("FRESH") == "1":   # a newcomer's first run: no pool, no calibration cache (reel's own)
            env["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="reel-bench-xdg-data-")
            env["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="reel-bench-xdg-cache-")
        t0 = time.time() * 1000
        rec = subprocess.Popen([reel, "record", "--scene", "pattern", "--source", "synthetic:1280", "--codec", "prores:proxy", "--plain",
                                "--out", work, "--preview", f"127.0.0.1:{port}", "--preview-token", TOKEN, "--duration", "20"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            # The port answering (a connect every 2 ms), then one navigation: a user opens the
            # address once the `preview:` line shows it.
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.time() * 1000 - t0 > 30000:
                        raise
                    time.sleep(0.002)
            listening.append(time.time() * 1000 - t0)
            page.goto(f"http://127.0.0.1:{port}/?token={TOKEN}", timeout=30000)
            loaded.append(time.time() * 1000 - t0)
            shown = page.wait_for_function("() => document.getElementById('p').naturalWidth > 0 && performance.timeOrigin + performance.now()",
                                           timeout=30000, polling="raf").json_value()
            return shown - browser_offset(page) - t0
        finally:
            rec.send_signal(signal.SIGINT); rec.wait(timeout=60)
            browser.close()

listening, loaded = [], []   # ms from exec to the port answering, to the page's document loaded
launches = int(os.environ.get("LAUNCHES", "3"))
first = [first_picture_ms(tempfile.mkdtemp(prefix="reel-bench-first-")) for _ in range(launches)]
print("the page's first picture from exec (chromium waiting%s): %s ms (median %.0f)" % (
      ", reel on a fresh XDG_DATA_HOME and XDG_CACHE_HOME each time" if os.environ.get("FRESH") == "1" else "",", ".join("%.0f" % x for x in first), median(first)))
print("  of which to the port answering: %s ms; to the page's document loaded: %s ms"
      % (", ".join("%.0f" % x for x in listening), ", ".join("%.0f" % x for x in loaded)))

work = tempfile.mkdtemp(prefix="reel-bench-controls-")
port = free_port()
sock_path = work + "/control.sock"
rec = subprocess.Popen([reel, "record", "--scene", "pattern", "--source", "synthetic:1280", "--codec", "prores:proxy", "--plain", "--json",
                        "--out", work + "/out", "--preview", f"127.0.0.1:{port}", "--preview-token", TOKEN,
                        "--control-socket", sock_path, "--duration", "600"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
page = None
for _ in range(600):
    try:
        page = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        page.request("GET", "/status", headers={"Authorization": "Bearer " + TOKEN})
        r = page.getresponse(); r.read()
        if r.status == 200 and os.path.exists(sock_path):
            break
    except OSError:
        pass
    time.sleep(0.1)
else:
    rec.kill(); sys.exit("scripts/bench controls: the preview never answered")
stop = threading.Event()
reader = threading.Thread(target=stream_client, args=(port, stop), daemon=True)
reader.start()
ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ctl.connect(sock_path)
ctl_file = ctl.makefile("rb")
time.sleep(1)   # the stream client's first parts

def press_page(v):
    global page
    # The keep-alive connection may have been closed by the server's idle timeout (10 s)
    # during the socket's turn: opened again first, outside the timed request.
    page.request("GET", "/status", headers={"Authorization": "Bearer " + TOKEN})
    try:
        page.getresponse().read()
    except (http.client.HTTPException, ConnectionError):
        page.close()
        page = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        page.request("GET", "/status", headers={"Authorization": "Bearer " + TOKEN})
        page.getresponse().read()
    t0 = time.monotonic_ns()
    page.request("POST", f"/control?name=zoom&value={v}", headers={"Authorization": "Bearer " + TOKEN, "Content-Length": "0"})
    r = page.getresponse(); body = r.read()
    assert r.status == 200, (r.status, body)
    return t0

def press_socket(v):
    t0 = time.monotonic_ns()
    ctl.sendall((json.dumps({"set": "zoom", "value": v}) + "\n").encode())
    answer = json.loads(ctl_file.readline())
    assert answer.get("ok"), answer
    return t0

sent = []   # (way, round, t0 ns)
value = 1.0
for rnd in range(rounds):
    for way, press in (("page", press_page), ("socket", press_socket)):
        for _ in range(presses):
            value = 1.0 + (round(value * 8) % 15 + 1) / 8   # a new value every press (1.125 … 2.875)
            sent.append((way, rnd, press(value)))
            time.sleep(0.150 + random.random() / 30)
# A change made elsewhere, seen in the browser: the control socket sets the zoom, and the page
# (Debian's chromium through Playwright) shows it in its state line, pushed on /events. Both
# times on CLOCK_REALTIME: the socket request's send here, the page's mutation of the state
# line (performance.timeOrigin + performance.now()).
followed = {}   # round -> [ms]
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
    tab = browser.new_page()
    tab.goto(f"http://127.0.0.1:{port}/?token={TOKEN}")
    tab.wait_for_function("() => document.getElementById('s').textContent.includes('zoom')", timeout=30000)
    tab.evaluate("""() => { window.seen = []; const s = document.getElementById('s');
        new MutationObserver(() => { const m = s.textContent.match(/zoom ([0-9.]+)×/);
            if (m) window.seen.push([performance.timeOrigin + performance.now(), +m[1]]); })
        .observe(s, {childList: true, characterData: true, subtree: true}); }""")
    steps = [1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0]
    k = 0
    for rnd in range(rounds):
        offset = browser_offset(tab)
        for _ in range(presses // 2):
            v = steps[k % len(steps)]; k += 1
            if abs(v - value) < 1e-9:   # never the zoom in force: each change must change it
                v = steps[k % len(steps)]; k += 1
            value = v
            tab.evaluate("() => { window.seen = []; }")
            t0 = time.time() * 1000
            press_socket(v)
            tab.wait_for_function(f"() => window.seen.some(x => Math.abs(x[1] - {v}) < 0.005)", timeout=10000)
            t1 = tab.evaluate(f"() => window.seen.find(x => Math.abs(x[1] - {v}) < 0.005)[0]")
            followed.setdefault(rnd, []).append(t1 - offset - t0)
            sent.append(("browser", rnd, None))
            time.sleep(0.150 + random.random() / 30)
    browser.close()

time.sleep(1)
stop.set()
rec.send_signal(signal.SIGINT)
out, err = rec.communicate(timeout=120)
reader.join()
summary = json.loads(out)
changes = [c for c in summary["controlChanges"] if c["control"] == "zoom"]
if len(changes) != len(sent):
    sys.exit(f"scripts/bench controls: {len(sent)} presses, {len(changes)} zoom changes in the summary")

period = 1e9 / 30
def capture_ns(f):
    if f in frames:
        return frames[f][0]
    g = min(frames, key=lambda k: abs(k - f))
    return frames[g][0] + (f - g) * period

def shown_ns(f):
    later = [k for k in frames if k >= f]
    return frames[min(later)][1] if later else None

lat = {"page": {"frame": [], "shown": []}, "socket": {"frame": [], "shown": []}}
per_round = {}
for (way, rnd, t0), change in zip(sent, changes):
    if way == "browser":
        continue
    f = change["frameIndex"]
    lat[way]["frame"].append((capture_ns(f) - t0) / 1e6)
    s = shown_ns(f)
    if s is not None:
        lat[way]["shown"].append((s - t0) / 1e6)
        per_round.setdefault((way, rnd), []).append((s - t0) / 1e6)

print(f"{len(sent)} presses ({rounds} rounds x {presses} per way), {len(frames)} stream parts read, "
      f"frames dropped by the recording: {summary['framesDropped']}")
print("%-8s %28s %28s" % ("way", "press -> frame to preview ms", "press -> shown to client ms"))
for way in ("page", "socket"):
    a, b = lat[way]["frame"], lat[way]["shown"]
    print("%-8s %14s p50 %5.1f p95 %5.1f %8s p50 %5.1f p95 %5.1f" % (way, "", median(a), pct(a, 95), "", median(b), pct(b, 95)))
ratios = [median(per_round[("page", r)]) / median(per_round[("socket", r)]) for r in range(rounds)
          if per_round.get(("page", r)) and per_round.get(("socket", r))]
print("page/socket, press -> shown p50 by round: %s (median %.2f, spread %.2f-%.2f)"
      % (", ".join("%.2f" % x for x in ratios), median(ratios), min(ratios), max(ratios)))
all_followed = [x for r in range(rounds) for x in followed.get(r, [])]
followed_p50 = [median(followed[r]) for r in range(rounds) if followed.get(r)]
print("control socket -> the page's state line in chromium: p50 %.1f ms, p95 %.1f ms (%d changes); p50 by round: %s; "
      "one frame interval is 33.3 ms" % (median(all_followed), pct(all_followed, 95), len(all_followed),
                                          ", ".join("%.1f" % x for x in followed_p50)))
heads = [
    R.headline("the page's first picture in chromium from the command's exec (scene: pattern)", first, unit="ms", reel_name="reel record --preview",
               key=False),
    R.headline("a change made elsewhere (control socket) -> shown on the page in chromium, p50 (scene: pattern)", followed_p50,
               unit="ms", reel_name="page", target=("<=", 33.3, "reel")),
    R.headline("a change made elsewhere -> shown on the page, p95", pct(all_followed, 95), unit="ms", reel_name="page", key=False),
    R.headline("zoom press -> shown to a stream client, p50 (scene: pattern)",
               [median(per_round[("page", r)]) for r in range(rounds) if per_round.get(("page", r))], unit="ms",
               reel_name="page (POST /control)",
               peer=[median(per_round[("socket", r)]) for r in range(rounds) if per_round.get(("socket", r))],
               peer_name="control socket", ratio=ratios, ratio_of="page/socket"),
    R.headline("zoom press -> shown to a stream client, p95 (page)", pct(lat["page"]["shown"], 95), unit="ms",
               reel_name="page", key=False),
    R.headline("zoom press -> first frame carrying it handed to the preview, p50 (page)", median(lat["page"]["frame"]), unit="ms",
               reel_name="page", peer=median(lat["socket"]["frame"]), peer_name="control socket", ratio=[], key=False),
    R.headline("frames dropped by the recording", summary["framesDropped"], unit="frames", key=False),
]
R.write("controls", "Control press to effect in frame: the page's endpoint vs the control socket", headlines=heads,
        load_before=os.environ.get("LOAD_BEFORE"), parameters={"rounds": rounds, "presses": presses, "scene": "pattern"})
PY
