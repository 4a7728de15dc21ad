#!/usr/bin/env bash
# The photo output, each comparison measured in the same run, runs alternating:
#  1. shutter lag: zero shutter lag (the ring frame nearest the press) vs the naive path
#     (the next frame delivered after the press), 20 presses each at 137 ms (not a multiple
#     of the frame time, so presses fall all over the frame interval);
#  2. bursts of 10 presses at 10 Hz and 30 at 30 Hz asking for `quality` on a noisy sensor:
#     prioritisation + responsive capture on vs all off (--no-prioritization --no-responsive
#     --shutter next-frame): photos delivered, presses blocked, presses whose photo is not the
#     pressed frame (late), the longest press-to-file time;
#  3. the first photo after launch (a press with the first frame): the output initialised
#     after the first frame with the press buffered (default) vs initialised before capture (--eager);
#  4. noise reduction: luma PSNR against the clean pattern of one noisy frame (proxy) vs the
#     ring merged (final), σ 8;
#  5. prepared settings: the first capture (press to file) of an --eager output, prepared
#     (encoder, worst-case buffer and 2 copy buffers made ahead: the default) vs --unprepared
#     (made by the first press), JPEG and HEIC at 4032x3024, PREP_RUNS rounds (default 5),
#     alternating; medians, ranges and the ratio unprepared/prepared paired per round.
# RUNS (default 2) repeats each pair; every run's figures are printed (the spread).
# ONLY=prepared runs section 5 alone.
set -euo pipefail
scripts/setup libimage-exiftool-perl >/dev/null
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
runs=${RUNS:-2}
work=$(mktemp -d /tmp/reel-bench-photo-XXXXXX)
trap 'rm -rf "$work"' EXIT
load_before=$(cat /proc/loadavg)
echo "load: $load_before"
rows=$work/rows.jsonl   # one JSON object a run, for RESULTS_DIR/photo.json
: >"$rows"

# summary FILE SECTION RUN ARM: one line of figures from a `reel photo --json` output (and a row).
summary() {
    python3 - "$1" "$2" "$3" "$4" "$rows" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
p = s["photos"]
lag = [x["lagFrames"] for x in p]; ms = [x["lagMs"] for x in p]
late = sum(1 for x in p if x["frameIndex"] != x["pressedFrameIndex"])
levels = {}
for x in p: levels[x["quality"]] = levels.get(x["quality"], 0) + 1
print("delivered %2d/%-2d blocked %2d refused %d late %2d sensor drops %2d | lag frames mean %.2f max %d | lag ms mean %6.1f max %6.1f | press-to-file max %7.0f ms | levels %s" % (
    s["delivered"], s["presses"], s["blocked"], s["refused"], late, s["framesDropped"],
    sum(lag) / max(1, len(lag)), max(lag or [0]), sum(ms) / max(1, len(ms)), max(ms or [0]),
    max([x["pressToFileMs"] for x in p] or [0]), " ".join("%s=%d" % kv for kv in sorted(levels.items()))))
with open(sys.argv[5], "a") as f:
    f.write(json.dumps(dict(section=sys.argv[2], run=int(sys.argv[3]), arm=sys.argv[4], presses=s["presses"], delivered=s["delivered"],
                            blocked=s["blocked"], refused=s["refused"], late=late, pressedFrame=sum(1 for x in p if x["frameIndex"] == x["pressedFrameIndex"]),
                            sensorDrops=s["framesDropped"], lagFramesMean=sum(lag) / max(1, len(lag)), lagMsMean=sum(ms) / max(1, len(ms)),
                            pressToFileMaxMs=max([x["pressToFileMs"] for x in p] or [0]))) + "\n")
PY
}

# write_results: RESULTS_DIR/photo.json and photo.svg (with RESULTS_DIR set) from $rows.
write_results() {
    LOAD_BEFORE="$load_before" python3 - "$rows" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def of(section, arm, key):
    return [r[key] for r in rows if r["section"] == section and r["arm"] == arm]
heads, bars = [], []
if of("lag", "zsl", "late"):
    heads.append(R.headline("shutter lag: presses a frame late of 20, ZSL (peer: next frame)", of("lag", "zsl", "late"), unit="presses",
                            reel_name="zsl", peer=of("lag", "next-frame", "late"), peer_name="next-frame", ratio=[], target=("==", 0, "reel")))
    heads.append(R.headline("shutter lag: mean lag, ZSL (peer: next frame)", of("lag", "zsl", "lagMsMean"), unit="ms",
                            reel_name="zsl", peer=of("lag", "next-frame", "lagMsMean"), peer_name="next-frame", ratio=[], key=False))
for burst in ("burst10", "burst30"):
    if not of(burst, "on", "pressedFrame"): continue
    n = of(burst, "on", "presses")[0]
    heads.append(R.headline("%s presses at %s Hz: photos of the pressed frame, prioritisation + responsive on (peer: all off)" % (n, burst[5:]),
                            of(burst, "on", "pressedFrame"), unit="photos", reel_name="on", peer=of(burst, "off", "pressedFrame"),
                            peer_name="off", ratio=[], target=("==", n, "reel")))
if of("first", "deferred", "pressToFileMs"):
    late = lambda arm: [abs(r["frameIndex"] - r["pressedFrameIndex"]) for r in rows if r["section"] == "first" and r["arm"] == arm]
    heads.append(R.headline("first photo after launch (a press with the first frame): frames between the pressed and the taken one, deferred start (peer: --eager)",
                            late("deferred"), unit="frames", reel_name="deferred", peer=late("eager"), peer_name="eager", ratio=[], target=("==", 0, "reel")))
    heads.append(R.headline("first photo after launch: press to file, deferred start (peer: --eager)", of("first", "deferred", "pressToFileMs"), unit="ms",
                            reel_name="deferred", peer=of("first", "eager", "pressToFileMs"), peer_name="eager", ratio_of="peer/reel", key=False))
for ring in (3, 5):
    if of("nr", "ring%d" % ring, "psnrFinal"):
        heads.append(R.headline("noise reduction sigma 8, ring %d: luma PSNR of the final (peer: the proxy)" % ring, of("nr", "ring%d" % ring, "psnrFinal"),
                                unit="dB", reel_name="final", peer=of("nr", "ring%d" % ring, "psnrProxy"), peer_name="proxy", ratio_of="reel/peer",
                                target=(">", 1.0), key=ring == 5))
for fmt in ("jpeg", "heic"):
    pre, un = of("prepared-" + fmt, "prepared", "pressToFileMs"), of("prepared-" + fmt, "unprepared", "pressToFileMs")
    if pre:
        heads.append(R.headline("%s first capture of an --eager output, prepared (peer: --unprepared)" % fmt.upper(), pre, unit="ms",
                                reel_name="prepared", peer=un, peer_name="unprepared", ratio=[u / p for p, u in zip(pre, un)], target=(">=", 1.0), key=fmt == "jpeg"))
for h in heads:
    if h["reel"] and h["unit"] in ("presses", "photos"):
        bars.append(dict(label=h["row"][:60], value=h["reel"]["median"], low=h["reel"]["min"], high=h["reel"]["max"], series="reel"))
        if h["peer"]:
            bars.append(dict(label="  peer: " + h["peer"]["name"], value=h["peer"]["median"], low=h["peer"]["min"], high=h["peer"]["max"], series="peer"))
R.write("photo", title="The photo output: shutter lag, bursts, first photo, noise reduction, prepared settings",
        columns=["section", "run", "arm", "presses", "delivered", "blocked", "late", "pressedFrame", "sensorDrops", "lagMsMean",
                 "pressToFileMs", "pressToFileMaxMs", "frameIndex", "psnrProxy", "psnrFinal"],
        rows=rows, headlines=heads, plot=dict(unit="presses late (shutter lag) / photos of the pressed frame (bursts): median and range of the runs", bars=bars),
        parameters=dict(runs=int(os.environ.get("RUNS", "2")), prepRuns=int(os.environ.get("PREP_RUNS", "5")), only=os.environ.get("ONLY", "")),
        load_before=os.environ["LOAD_BEFORE"])
PY
}

prepared_section() {
    echo
    echo "== prepared settings: first capture of an --eager output (press with the first frame), prepared vs --unprepared"
    for fmt in jpeg heic; do
        for r in $(seq "${PREP_RUNS:-5}"); do
            for arm in prepared unprepared; do
                rm -rf "$work/out"
                if [ "$arm" = unprepared ]; then extra=(--unprepared); else extra=(); fi
                "$reel" photo --scene pattern --eager --format "$fmt" --out "$work/out" --json "${extra[@]}" >"$work/prep-$fmt-$arm-$r.json"
            done
        done
        python3 - "$work" "$fmt" "${PREP_RUNS:-5}" "$rows" <<'PY'
import json, statistics, sys
work, fmt, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def first(arm, r):
    s = json.load(open(f"{work}/prep-{fmt}-{arm}-{r}.json"))
    p = s["photos"][0]
    assert s["prepared"] == (arm == "prepared")
    return p["pressToFileMs"], p["encodeMs"], s["initialisationMs"]
rows = {a: [first(a, r) for r in range(1, runs + 1)] for a in ("prepared", "unprepared")}
for a in ("prepared", "unprepared"):
    t = [x[0] for x in rows[a]]; e = [x[1] for x in rows[a]]; i = [x[2] for x in rows[a]]
    print("%s %-10s first capture press-to-file median %7.1f ms (min %.1f, max %.1f) | encode median %7.1f ms | initialisation median %6.1f ms | runs %s" % (
        fmt, a, statistics.median(t), min(t), max(t), statistics.median(e), statistics.median(i), " ".join("%.0f" % x for x in t)))
ratios = [u[0] / p[0] for p, u in zip(rows["prepared"], rows["unprepared"])]
with open(sys.argv[4], "a") as f:
    for a in ("prepared", "unprepared"):
        for r, x in enumerate(rows[a], 1):
            f.write(json.dumps(dict(section="prepared-" + fmt, run=r, arm=a, pressToFileMs=x[0], encodeMs=x[1], initialisationMs=x[2])) + "\n")
print("%s unprepared/prepared first capture: median %.2fx (range %.2f-%.2fx, paired per round)" % (fmt, statistics.median(ratios), min(ratios), max(ratios)))
PY
    done
}
if [ "${ONLY:-}" = prepared ]; then
    prepared_section
    echo "load: $(cat /proc/loadavg)"
    write_results
    exit 0
fi

echo
echo "== shutter lag: 20 presses at 137 ms, JPEG balanced"
for r in $(seq "$runs"); do
    for mode in zsl next-frame; do
        rm -rf "$work/out"
        "$reel" photo --scene pattern --count 20 --interval 0.137 --format jpeg --shutter "$mode" --eager --out "$work/out" --json >"$work/$mode.json"
        printf "run %d %-10s " "$r" "$mode"; summary "$work/$mode.json" lag "$r" "$mode"
    done
done

for burst in "10 0.1" "30 0.0333"; do
    set -- $burst
    echo
    echo "== burst: $1 presses every $2 s, quality asked, --sensor-noise 8, JPEG"
    for r in $(seq "$runs"); do
        for arm in on off; do
            rm -rf "$work/out"
            if [ "$arm" = on ]; then extra=(); else extra=(--no-prioritization --no-responsive --shutter next-frame); fi
            "$reel" photo --scene pattern --count "$1" --interval "$2" --quality quality --sensor-noise 8 --format jpeg \
                --out "$work/out" --json "${extra[@]}" >"$work/$arm.json"
            printf "run %d %-4s " "$r" "$arm"; summary "$work/$arm.json" "burst$1" "$r" "$arm"
        done
    done
done

echo
echo "== first photo after launch: a press with the first frame, HEIC; deferred start + responsive capture vs eager"
for r in $(seq "$runs"); do
    for arm in deferred eager; do
        rm -rf "$work/out"
        if [ "$arm" = eager ]; then extra=(--eager); else extra=(); fi
        s=$(date +%s.%N)
        "$reel" photo --scene pattern --format heic --out "$work/out" --json "${extra[@]}" >"$work/first.json"
        e=$(date +%s.%N)
        python3 - "$work/first.json" "$r" "$arm" "$s" "$e" "$rows" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); p = s["photos"][0]
with open(sys.argv[6], "a") as f:
    f.write(json.dumps(dict(section="first", run=int(sys.argv[2]), arm=sys.argv[3], frameIndex=p["frameIndex"], pressedFrameIndex=p["pressedFrameIndex"],
                            buffered=p["buffered"], initialisationMs=s["initialisationMs"], pressToFileMs=p["pressToFileMs"],
                            processWallS=float(sys.argv[5]) - float(sys.argv[4]))) + "\n")
print("run %s %-8s frame #%d (pressed #%d) buffered %-5s initialisation %6.0f ms | press to file %6.0f ms | process wall %5.2f s" % (
    sys.argv[2], sys.argv[3], p["frameIndex"], p["pressedFrameIndex"], str(p["buffered"]).lower(), s["initialisationMs"],
    p["pressToFileMs"], float(sys.argv[5]) - float(sys.argv[4])))
PY
    done
done

echo
echo "== noise reduction: sigma 8, quality, ring 3 and 5 (second press; the first has a ring of one)"
for ring in 3 5; do
    rm -rf "$work/out"
    "$reel" photo --scene pattern --count 2 --interval 0.4 --quality quality --no-prioritization --sensor-noise 8 --ring "$ring" \
        --format jpeg --out "$work/out" --json >"$work/nr.json"
    python3 - "$work/nr.json" "$ring" "$rows" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["photos"][-1]
with open(sys.argv[3], "a") as f:
    f.write(json.dumps(dict(section="nr", run=1, arm="ring" + sys.argv[2], mergedFrames=p["mergedFrames"], psnrProxy=p["psnrProxy"],
                            psnrFinal=p["psnrFinal"], processMs=p["processMs"])) + "\n")
print("ring %s: merged %d frames, PSNR proxy %.2f dB, final %.2f dB (+%.2f dB), noise reduction %.0f ms" % (
    sys.argv[2], p["mergedFrames"], p["psnrProxy"], p["psnrFinal"], p["psnrFinal"] - p["psnrProxy"], p["processMs"]))
PY
done
prepared_section
echo "load: $(cat /proc/loadavg)"
write_results
