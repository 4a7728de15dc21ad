#!/usr/bin/env bash
# Segment boundaries against the peers (issue 25 item 4): the same number of 1280x720 frames
# at 30 fps, H.264, cut every SEGMENT seconds (default 2.1: off a 1 s keyframe grid), FRAMES
# frames in all (default 630: 21 s). Each recorder's segments are counted by ffprobe
# (packets); for each segment k it prints how far its first frame is from the frame asked
# (the first frame at or after k x SEGMENT s), the frames lost or repeated in all, and how far
# each segment's reported duration (ffprobe's format duration) is from its frame count / 30.
#   reel         `reel record --segment-duration SEGMENT --frames FRAMES` in real time,
#                libx264 (its own keyframe grid; a forced IDR at each boundary).
#   ffmpeg       the segment muxer, `-segment_time SEGMENT`, libx264 at a 1 s keyframe
#                interval (-g 30, the issue's setting), and again at its best: the same with
#                `-force_key_frames` at every boundary (the times known in advance).
#   GStreamer    splitmuxsink max-size-time=SEGMENT, x264enc key-int-max=30, and at its best:
#                `send-keyframe-requests=true` (it asks the encoder for a keyframe where it cuts).
# The peers encode their own test sources (testsrc2, videotestsrc): what is compared is where
# each cuts, not the pictures.
set -euo pipefail
scripts/setup
# x264enc is in -plugins-ugly, h264parse in -bad, splitmuxsink in -good.
if [ "${INSTALL_GST:-1}" = 1 ] && ! { gst-inspect-1.0 x264enc && gst-inspect-1.0 h264parse && gst-inspect-1.0 splitmuxsink; } >/dev/null 2>&1; then
    scripts/setup gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav || true
fi
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
seg=${SEGMENT:-2.1}
frames=${FRAMES:-630}
fps=30
work=$(mktemp -d /tmp/reel-segments-XXXXXX)
trap 'rm -rf "$work"' EXIT
rows=$work/rows.tsv
: >"$rows"
load_before=$(cat /proc/loadavg)
echo "load: $load_before   commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)   scene: pattern (reel), testsrc2 / videotestsrc (peers)"
# The boundary times, for the peers that take them in advance.
times=$(python3 -c "import math; s=$seg; n=$frames; print(','.join('%.6f' % (k*s) for k in range(1, math.ceil(n/30/s))))")

measure() {  # $1: recorder name; then the segment files in order
    python3 - "$fps" "$seg" "$frames" "$rows" "$@" <<'PY'
import math, subprocess, sys
fps, seg, total, rows, name, files = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]
counts, drift = [], []
for f in files:
    n = int(subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries",
                            "stream=nb_read_packets", "-of", "csv=p=0", f], capture_output=True, text=True).stdout.strip() or 0)
    d = float(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", f],
                             capture_output=True, text=True).stdout.strip() or "nan")
    counts.append(n); drift.append(abs(d - n / fps))
starts = [sum(counts[:k]) for k in range(len(counts))]
asked = [math.ceil(k * seg * fps - 1e-9) for k in range(len(counts))]
errors = [abs(s - a) for s, a in zip(starts[1:], asked[1:])]
expected = math.ceil(total / (seg * fps))
lost = total - sum(counts)   # > 0 lost, < 0 repeated
print("%-34s %8d %8d %12s %10s %14s   %s" % (name, len(files), expected, max(errors) if errors else "n/a", lost,
      "%.3f" % max(drift) if drift else "n/a", " ".join(map(str, counts))))
open(rows, "a").write("\t".join(map(str, [name, len(files), expected, max(errors) if errors else "", lost,
                                          "%.4f" % max(drift) if drift else "", " ".join(map(str, counts))])) + "\n")
PY
}

printf "%-34s %8s %8s %12s %10s %14s   %s\n" recorder segments asked "max error" "lost(+)" "max dur. err s" "frames per segment"
mkdir -p "$work/reel"
# In real time, as a camera records: the session clock is the capture time (under
# --no-realtime the source waits for the encoder, and 2.1 s of capture time then holds fewer
# frames). Drops, if any, are printed: a boundary stays on its time all the same.
"$reel" record --scene pattern --source synthetic:1280 --frames "$frames" --codec h264 --container mp4 --plain \
    --segment-duration "$seg" --out "$work/reel" --name seg --json >"$work/reel.json"
python3 -c "import json; d=json.load(open('$work/reel.json')); print('reel: %d frames captured, %d dropped' % (d['framesCaptured'], d['framesDropped']))"
"$reel" verify "$work/reel" | tail -1
measure "reel --segment-duration" $(python3 -c "import json; print(' '.join(c['path'] for c in json.load(open('$work/reel.json'))['clips']))")

for variant in grid forced; do
    mkdir -p "$work/ff-$variant"
    extra=(); [ $variant = forced ] && extra=(-force_key_frames "$times")
    ffmpeg -nostdin -v error -f lavfi -i "testsrc2=size=1280x720:rate=$fps" -frames:v "$frames" \
        -c:v libx264 -preset veryfast -g 30 -pix_fmt yuv420p "${extra[@]}" \
        -f segment -segment_time "$seg" -reset_timestamps 1 "$work/ff-$variant/seg%03d.mp4"
    measure "ffmpeg segment, $([ $variant = forced ] && echo "force_key_frames" || echo "1 s GOP")" "$work/ff-$variant"/seg*.mp4
done

if command -v gst-launch-1.0 >/dev/null; then
    ns=$(python3 -c "print(int($seg * 1e9))")
    for variant in grid requests; do
        mkdir -p "$work/gst-$variant"
        req=false; [ $variant = requests ] && req=true
        timeout $((frames / 10 + 60)) gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=ball \
            ! video/x-raw,width=1280,height=720,framerate=$fps/1 ! videoconvert ! video/x-raw,format=I420 \
            ! x264enc speed-preset=veryfast key-int-max=30 ! h264parse \
            ! splitmuxsink muxer=mp4mux location="$work/gst-$variant/seg%03d.mp4" max-size-time="$ns" send-keyframe-requests=$req \
            >/dev/null 2>"$work/gst.err" || echo "         gstreamer ($variant): exit $? $(tail -1 "$work/gst.err")"
        measure "gst splitmuxsink, $([ $variant = requests ] && echo "keyframe requests" || echo "1 s GOP")" "$work/gst-$variant"/seg*.mp4
    done
else
    echo "         gstreamer not installed: splitmuxsink skipped"
fi
echo
echo "max error: |first frame of segment k - first frame at or after k x $seg s| in frames, over the boundaries (target 0)."
echo "lost(+): frames asked ($frames) minus frames in the segments (negative: repeated). max dur. err: |format duration - frames/$fps| in s."
LOAD_BEFORE="$load_before" python3 - "$rows" "$seg" "$frames" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
cols = ["recorder", "segments", "asked", "maxErrorFrames", "lostFrames", "maxDurationErrorS", "framesPerSegment"]
num = lambda v: float(v) if v not in ("", "n/a") else None
rows = [dict(zip(cols, [f[0], num(f[1]), num(f[2]), num(f[3]), num(f[4]), num(f[5]), f[6]]))
        for f in (l.rstrip("\n").split("\t") for l in open(sys.argv[1]))]
reel = next(r for r in rows if r["recorder"].startswith("reel"))
heads = [R.headline("segment boundary error, H.264 every %s s, %s frames (peer: %s)" % (sys.argv[2], sys.argv[3], p["recorder"]),
                    reel["maxErrorFrames"], unit="frames", reel_name="reel", peer=p["maxErrorFrames"], peer_name=p["recorder"],
                    ratio=[], target=("==", 0, "reel")) for p in rows if not p["recorder"].startswith("reel")]
heads.append(R.headline("frames lost or repeated across the segments", reel["lostFrames"], unit="frames", reel_name="reel",
                        target=("==", 0, "reel"), key=False))
R.write("segments", "Segment boundaries: H.264 every %s s, reel against ffmpeg's segment muxer and splitmuxsink" % sys.argv[2],
        columns=cols, rows=rows, headlines=heads, load_before=os.environ["LOAD_BEFORE"],
        parameters={"segment": float(sys.argv[2]), "frames": int(sys.argv[3]), "scene": "pattern"})
PY
