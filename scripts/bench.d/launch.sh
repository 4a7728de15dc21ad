#!/usr/bin/env bash
# Launch time of `reel record --preview 0`: Deferred Start (the default) against
# --eager-start, LAUNCHES launches of each (default 10), alternating, for each codec in
# CODECS (default "prores:hq ffv1"; FFV1's encoder is the slowest to open).
#
# For each launch: the time from exec to the first complete JPEG an HTTP client reads from
# /snapshot.jpg (the client learns the port and token from the `preview:` line on stderr), and the time
# from exec to the first frame written (the summary's firstFrameWrittenMs, ±10 ms: the process
# start time's resolution); and whether frame 0 is in the clip (decoded: `reel probe --frames`).
# Prints medians, min–max and the ratio eager/deferred of the medians, and the load.
# What the eager arm initialises before the first frame is issue 11's list: pool open and
# recovery, slot claim, encoder + muxer open, photo encoder at 4032:
# PHOTOS=heic (default; or jpeg, png): both arms get `--photos DIR --photo-format F`, a photo
# output prepared for the synthetic sensor's largest photo, its 4032x4032 still format
# (TurboJPEG's worst-case buffer for 4032x4032 touched, the format's encoder started; eager:
# two copy buffers of the photo's size touched too), initialised before the first frame with --eager-start
# and by Deferred Start after it otherwise; PHOTOS=none: no photo output.
# RECOVERY=1 (default; 0: off): before every launch a recorder writing into the same pool
# (h264, 0.1 s fragments) is killed with SIGKILL 1 s after its 30th frame, so the launch
# opens a pool with a dead recorder's slot and recovers it (publishes its clip, or drops a slot
# with no complete fragment) — before the first frame with --eager-start, right after it under
# Deferred Start. How many victims' clips were published is printed.
set -euo pipefail
scripts/setup
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
work=$(mktemp -d /tmp/reel-launch-XXXXXX)
trap 'rm -rf "$work"' EXIT
pool=$work/pool
"$reel" pool create "$pool" --capacity 1G --slot 256M --write-mode buffered >/dev/null
load_before=$(cat /proc/loadavg)
echo "load before: $load_before"
LOAD_BEFORE="$load_before" python3 - "$reel" "$pool" "$work" "${LAUNCHES:-10}" "${CODECS:-prores:hq ffv1}" "${SOURCE:-synthetic:1920}" "${PHOTOS:-heic}" "${RECOVERY:-1}" <<'PY'
import http.client, json, os, re, signal, statistics, subprocess, sys, time
reel, pool, work, launches, codecs, source, photos = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5].split(), sys.argv[6], sys.argv[7]
photos = "" if photos == "none" else photos
recovery = sys.argv[8] == "1"

TOKENS = {}  # port -> the token its `preview:` line printed

def first_jpeg(port, deadline):
    """GET /snapshot.jpg until one whole JPEG arrives; the monotonic time it was complete."""
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/snapshot.jpg", headers={"Authorization": f"Bearer {TOKENS.get(port, '')}"})
            r = c.getresponse()
            body = r.read()
            c.close()
            if r.status == 200 and body[:2] == b"\xff\xd8" and body[-2:] == b"\xff\xd9":
                return time.monotonic(), int(r.getheader("X-Frame-Index", "-1"))
        except OSError:
            pass
        time.sleep(0.002)
    return None, None

def preview_port(p):
    """The port of the `preview:` line a `reel record --preview 0` prints on stderr (its
    token noted in TOKENS)."""
    lines = []
    while True:
        line = p.stderr.readline().decode()
        if not line:
            return None, lines
        lines.append(line)
        m = re.search(r"preview: http://[^:]+:(\d+)/\?token=([\w-]+)", line)
        if m:
            TOKENS[int(m.group(1))] = m.group(2)
            return int(m.group(1)), lines

def status(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/status", headers={"Authorization": f"Bearer {TOKENS.get(port, '')}"})
    body = json.loads(c.getresponse().read())
    c.close()
    return body

def dead_recorder(n):
    """A recorder writing into the pool, killed (SIGKILL) 1 s after its 30th frame: its
    slot waits for the next opener to recover it into {work}/victim-n."""
    out = f"{work}/victim-{n}"
    p = subprocess.Popen([reel, "record", "--scene", "pattern", "--pressure-handler", "off", "--preview", "0", "--pool", pool, "--source", "synthetic:1280", "--codec", "h264",
                          "--fragment", "0.1", "--duration", "600", "--out", out, "--name", "victim"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ, REEL_POOL=pool))
    port, lines = preview_port(p)
    if port is None:
        p.wait()
        sys.exit("the victim recorder did not start: " + "".join(lines))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            s = status(port)
            if s.get("poolRemainingCapacity") is not None and s.get("frames", 0) >= 30:
                break
        except OSError:
            pass
        time.sleep(0.05)
    else:
        p.kill(); p.wait()
        sys.exit("the victim recorder captured no 30 frames in 60 s")
    time.sleep(1.0)   # the writer catches up and the pool's ring writes the fragments into the slot
    p.send_signal(signal.SIGKILL)
    p.wait()
    return out

def launch(codec, eager, n):
    victim = dead_recorder(n) if recovery else None
    out = f"{work}/out-{n}"
    container = "mkv" if codec == "ffv1" else "mov"
    args = [reel, "record", "--scene", "pattern", "--pressure-handler", "off", "--preview", "0", "--pool", pool, "--source", source, "--codec", codec, "--container", container,
            "--duration", "2", "--out", out, "--name", "l", "--json"] + (["--eager-start"] if eager else []) \
        + (["--photos", out + "/photos", "--photo-format", photos] if photos else [])
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, REEL_POOL=pool))
    port, err_lines = preview_port(p)
    if port is None:
        p.wait()
        sys.exit("reel record did not print its preview address: " + "".join(err_lines))
    t_jpeg, jpeg_index = first_jpeg(port, t0 + 30)
    stdout, rest = p.communicate(timeout=120)
    if p.returncode != 0:
        sys.exit(f"reel record exited {p.returncode}: {''.join(err_lines)}{rest.decode()}")
    s = json.loads(stdout)
    clip = s["clips"][0]
    probe = json.loads(subprocess.run([reel, "probe", "--frames", "--json", clip["path"]], capture_output=True, check=True).stdout)
    idx = probe["frameIndices"]
    recovered = None
    if victim:
        recovered = any(f.endswith(".mov") for f in (os.listdir(victim) if os.path.isdir(victim) else []))
        subprocess.run(["rm", "-rf", victim], check=True)
    subprocess.run(["rm", "-rf", out], check=True)
    return {
        "jpeg": (t_jpeg - t0) * 1000 if t_jpeg else float("nan"),
        "written": s["firstFrameWrittenMs"],
        "frame0": bool(idx) and idx[0] == 0 and clip["firstFrameIndex"] == 0,
        "lostAtStart": 0 if not idx else idx[0],
        "held": s["framesHeldBeforeReady"], "hold": s["longestHoldMs"], "dropped": s["framesDropped"],
        "jpegIndex": jpeg_index, "recovered": recovered,
    }

def spread(xs):
    xs = sorted(xs)
    iqr = statistics.quantiles(xs, n=4)[2] - statistics.quantiles(xs, n=4)[0] if len(xs) > 1 else 0.0   # LAUNCHES=1: no spread
    return f"{statistics.median(xs):8.1f} ms  (min {xs[0]:.1f}, max {xs[-1]:.1f}, IQR {iqr:.1f})"

all_ok = True
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
rows, heads = [], []
for codec in codecs:
    runs = {False: [], True: []}
    for n in range(launches):
        for eager in (False, True):   # alternating, so both see the same load
            runs[eager].append(launch(codec, eager, f"{codec}-{n}-{eager}"))
    extra = f" --photos DIR --photo-format {photos}" if photos else ""
    what = ("a dead recorder's slot recovered at each launch" if recovery else "no recovery") + \
        (f", photo output prepared at 4032x4032 ({photos})" if photos else ", no photo output")
    print(f"\n{codec}, {source}, {launches} launches each (alternating), `reel record --preview 0 --pool P{extra}`; {what}:")
    for eager in (False, True):
        r = runs[eager]
        name = "eager (--eager-start)" if eager else "deferred (default)"
        print(f"  {name:24s} first preview JPEG {spread([x['jpeg'] for x in r])}")
        print(f"  {'':24s} first frame written {spread([x['written'] for x in r])}")
        lost = [x["lostAtStart"] for x in r]
        print(f"  {'':24s} frame 0 in the clip: {sum(x['frame0'] for x in r)}/{len(r)}; frames lost at start {max(lost)}; "
              f"held {statistics.median([x['held'] for x in r])} (median), longest hold {statistics.median([x['hold'] for x in r]):.1f} ms (median), "
              f"drops {sum(x['dropped'] for x in r)}"
              + (f"; dead recorder's clip published by the recovery {sum(1 for x in r if x['recovered'])}/{len(r)}" if recovery else ""))
        all_ok &= all(x["frame0"] for x in r)
    d = statistics.median([x["jpeg"] for x in runs[False]]); e = statistics.median([x["jpeg"] for x in runs[True]])
    dw = statistics.median([x["written"] for x in runs[False]]); ew = statistics.median([x["written"] for x in runs[True]])
    print(f"  time to first preview frame, eager/deferred: {e / d:.2f}x (target >= 2x)")
    print(f"  time to first frame written, eager/deferred: {ew / dw:.2f}x")
    for eager in (False, True):
        for n, x in enumerate(runs[eager]):
            rows.append(dict(codec=codec, arm="eager" if eager else "deferred", launch=n + 1, firstJpegMs=x["jpeg"], firstFrameWrittenMs=x["written"],
                             frame0=x["frame0"], lostAtStart=x["lostAtStart"], held=x["held"], longestHoldMs=x["hold"], dropped=x["dropped"],
                             recovered=x["recovered"]))
    # Paired per launch (deferred n and eager n ran one after the other).
    heads.append(R.headline(f"{codec}: exec to first preview JPEG, Deferred Start (peer: --eager-start)", [x["jpeg"] for x in runs[False]], unit="ms",
                            reel_name="deferred", peer=[x["jpeg"] for x in runs[True]], peer_name="eager",
                            ratio=[e["jpeg"] / d["jpeg"] for d, e in zip(runs[False], runs[True])], target=(">=", 2.0)))
    heads.append(R.headline(f"{codec}: exec to first frame written, Deferred Start (peer: --eager-start)", [x["written"] for x in runs[False]], unit="ms",
                            reel_name="deferred", peer=[x["written"] for x in runs[True]], peer_name="eager",
                            ratio=[e["written"] / d["written"] for d, e in zip(runs[False], runs[True])], key=False))
    heads.append(R.headline(f"{codec}: frames lost at start (frame 0 not in the clip), deferred (peer: eager)", [x["lostAtStart"] for x in runs[False]],
                            unit="frames", reel_name="deferred", peer=[x["lostAtStart"] for x in runs[True]], peer_name="eager", ratio=[],
                            target=("==", 0, "reel"), met=all(x["frame0"] for x in runs[False] + runs[True])))
print("\nframe 0 present in every launch" if all_ok else "\nFRAME 0 MISSING in some launch")
R.write("launch", title="exec of reel record --preview 0 to the first preview JPEG: eager / deferred (paired launches; target >= 2x)",
        columns=["codec", "arm", "launch", "firstJpegMs", "firstFrameWrittenMs", "frame0", "lostAtStart", "held", "longestHoldMs", "dropped", "recovered"],
        rows=rows, headlines=heads,
        plot=dict(unit="eager / deferred time (above 1: Deferred Start is faster); median and range of paired launches", reference=2.0,
                  bars=[dict(label=h["row"].split(",")[0], value=h["ratio"]["median"], low=h["ratio"]["min"], high=h["ratio"]["max"])
                        for h in heads if h["ratio"]]),
        parameters=dict(launches=launches, codecs=codecs, source=source, photos=photos or "none", recovery=recovery),
        load_before=os.environ["LOAD_BEFORE"])
sys.exit(0 if all_ok else 1)
PY
echo "load after: $(cat /proc/loadavg)"
