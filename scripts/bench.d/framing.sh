#!/usr/bin/env bash
# Smart framing on the people scene (issue 29), two parts:
#  1. Face detection against the scene's ground truth: each of OpenCV's frontal cascades at the
#     search sizes tried (`reel _faces CASCADE 1920 SHRINK 12`: every 12th frame of the 24 s
#     timeline on a 1920² sensor), RUNS times (default 2): recall and precision (the same every
#     run: the frames are deterministic) and the CPU time of one detection (min–max of the runs).
#  2. The framing loop: `reel record --source synthetic:4032 --scene people --smart-framing
#     zoom,rotate --no-realtime` over the whole timeline (720 frames, detection frame-stepped
#     every 15th frame): each recommendation, the time from the end of each scripted movement to
#     the first recommendation after it (settling), and the recommendations made while the scene
#     had been still for 45 frames (breathing: the target is 0).
# Scene: people (the realistic scene with portraits), labelled with the commit.
set -euo pipefail
scripts/setup
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
runs=${RUNS:-2}
work=$(mktemp -d /tmp/reel-framing-XXXXXX)
trap 'rm -rf "$work"' EXIT
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
load_before=$(cat /proc/loadavg)
echo "scripts/bench framing — scene: people, commit $commit"
echo
echo "1. Face detection on the ground truth (1920² sensor, every 12th frame of 720)"
: >"$work/detect.jsonl"
for config in "haar 3" "haar-alt2 3" "lbp 3" "lbp 2"; do
    set -- $config
    for r in $(seq "$runs"); do
        "$reel" _faces "$1" 1920 "$2" 12 | jq -c --arg run "$r" '. + {run: $run}' >>"$work/detect.jsonl"
    done
done
python3 - "$work/detect.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'cascade':<10} {'searched at':>11} {'recall':>16} {'precision':>16} {'ms a detection':>18}")
seen = []
for r in rows:
    key = (r["cascade"], r["shrink"])
    if key in seen: continue
    seen.append(key)
    same = [x for x in rows if (x["cascade"], x["shrink"]) == key]
    s = same[0]["score"]
    ms = [x["cpuMsPerDetection"] for x in same]
    print(f"{key[0]:<10} {1920 // key[1]:>11} {s['frontalFound']:>4}/{s['frontalFaces']:<3} = {same[0]['recall']:.2f} "
          f"{s['falseDetections']:>4} false = {same[0]['precision']:.2f} {min(ms):>8.0f}–{max(ms):.0f} ms")
PY
echo
echo "2. The framing loop: --smart-framing zoom,rotate, 4032² sensor, 720 frames, not in real time"
"$reel" record --source synthetic:4032 --scene people --smart-framing zoom,rotate --no-realtime --frames 720 \
    --codec h264 --container mp4 --plain --out "$work/rec" --name framing --json >"$work/rec.json"
LOAD_BEFORE="$load_before" python3 - "$work/rec.json" "$work/detect.jsonl" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
d = json.load(open(sys.argv[1]))
recs = d["framingRecommendations"]
sf = d["smartFraming"]
# The timeline's movements (frames), from docs/framing.md.
moving = [(60, 150), (240, 300), (330, 390), (420, 480), (540, 600), (660, 720)]
for r in recs:
    print(f"  frame {r['frame']:>4}  {r['ratio']}@{r['zoom']:<5} faces {r['faces']}  applied from {r['appliedFrame']}")
settle = []
for (a, e) in moving:
    after = [r["frame"] for r in recs if e <= r["frame"] < e + 90]
    if after: settle.append((e, after[0] - e))
still = [r for r in recs if not any(a <= f <= e for (a, e) in moving for f in range(r["frame"] - 45, r["frame"] + 1))]
print(f"  settling after a movement ended: " + ", ".join(f"frame {e}: {n / 30:.1f} s" for e, n in settle))
print(f"  recommendations after 45 still frames: {len(still)} in {720 / 30 / 60:.1f} min (target 0)")
print(f"  detection: {sf['detections']} runs, {sf['detectionCpuMs']:.0f} ms CPU each (4032² shrunk by 4), every {sf['every']} frames")
print(f"  clips: " + ", ".join(f"{c['width']}x{c['height']} {c['frames']} frames" for c in d["clips"]))
detect = [json.loads(l) for l in open(sys.argv[2])]
default = [x for x in detect if x["cascade"] == "lbp" and x["shrink"] == 2]
cols = ["cascade", "searchedAt", "recall", "precision", "cpuMsPerDetection"]
rows = [{"cascade": x["cascade"], "searchedAt": 1920 // x["shrink"], "recall": x["recall"], "precision": x["precision"],
         "cpuMsPerDetection": x["cpuMsPerDetection"]} for x in detect]
heads = [R.headline("face detection recall, frontal faces of 60 px or more (people scene)", [x["recall"] for x in default], target=(">=", 0.9, "reel")),
         R.headline("face detection precision (people scene)", [x["precision"] for x in default], target=(">=", 0.9, "reel")),
         R.headline("smart-framing recommendations after 45 still frames (people scene)", len(still), target=("==", 0, "reel")),
         R.headline("CPU of one face detection at 1920 (people scene)", [x["cpuMsPerDetection"] for x in default], unit="ms", key=False)]
R.write("framing", "Smart framing on the people scene: face detection against the ground truth, the framing loop",
        columns=cols, rows=rows, headlines=heads, load_before=os.environ["LOAD_BEFORE"],
        parameters={"scene": "people", "sensor": 4032, "frames": 720})
PY
