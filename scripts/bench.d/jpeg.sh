#!/usr/bin/env bash
# scripts/bench jpeg: the preview's JPEG work — TurboJPEG (what `reel record --preview` uses:
# quality 80, 4:2:0, fast DCT) against libavcodec's mjpeg encoder on the same frames, at equal
# quality (luma PSNR of each JPEG decoded again, against the frame it came from).
#
# Frames: FRAMES (default 120) of the synthetic sensor at 1920x1080, decimated to 960x540 as
# the preview does (every other pixel: ffmpeg's neighbor scaler). Each encoder runs on one
# thread (the preview encodes on one thread); CPU time per picture is the median of the frames.
# Prints every setting, then the mjpeg setting nearest TurboJPEG's PSNR from above, and the ratio.
set -euo pipefail
source "$(dirname "$0")/../env.sh"
frames=${FRAMES:-120}
quality=${QUALITY:-80}
reel=.build/release/reel
swift build -c release --product reel 2>&1 | tail -1
if ! pkg-config --exists libturbojpeg libavcodec; then
    apt-get install -y libturbojpeg0-dev libavcodec-dev >/dev/null
fi
work=$(mktemp -d /dev/shm/reel-jpeg-XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/jpegcmp" scripts/bench.d/jpegcmp.c $(pkg-config --cflags --libs libturbojpeg libavcodec libavutil) -lm
load_before=$(cat /proc/loadavg)
echo "load before: $load_before   $(ffmpeg -version | head -1 | cut -d' ' -f1-3)"
"$reel" record --scene pattern --no-realtime --pressure-handler off --frames "$frames" --codec ffv1 --container mkv --plain --out "$work/src" --name src >/dev/null
ffmpeg -nostdin -v error -i "$work/src/src-0001-16x9.mkv" -fps_mode passthrough -vf scale=960:540:flags=neighbor -f rawvideo -pix_fmt yuv420p "$work/frames.yuv"
runs=${RUNS:-3}
for run in $(seq 1 "$runs"); do
    echo "== run $run of $runs"
    "$work/jpegcmp" "$work/frames.yuv" 960 540 "$frames" "$quality" >"$work/out$run.txt"
    [ "$run" = 1 ] && cat "$work/out1.txt"
done
LOAD_BEFORE="$load_before" FRAMES="$frames" QUALITY="$quality" python3 - "$work"/out*.txt <<'PY'
import os, statistics, sys
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
def parse(path):
    rows = []
    for l in open(path):
        if not l.strip() or l.startswith("encoder"): continue
        p = l.split(); cpu, p10, size, psnr = map(float, p[-4:]); rows.append((" ".join(p[:-4]), cpu, size, psnr))
    return rows
runs = [parse(p) for p in sys.argv[1:]]
tj = runs[0][0]
print()
print("TurboJPEG %s: %.2f dB PSNR-Y, %.0f bytes; CPU a picture per run: %s ms"
      % (tj[0], tj[3], tj[2], " ".join("%.3f" % r[0][1] for r in runs)))
heads, bars = [], []
for mode in ("default", "optimal"):
    same = [r for r in runs[0][1:] if r[0].endswith(mode) and r[3] >= tj[3]]
    if not same:
        print("mjpeg huffman=%s: no qscale reaches TurboJPEG's PSNR" % mode); continue
    pick = min(same, key=lambda r: r[3])[0]   # the cheapest qscale at or above TurboJPEG's PSNR
    ratios = [next(x for x in r if x[0] == pick)[1] / r[0][1] for r in runs]
    m = next(x for x in runs[0] if x[0] == pick)
    print("%-40s %.2f dB, %.0f bytes (%.2fx TurboJPEG's): mjpeg/TurboJPEG CPU %.2fx (runs: %s)"
          % (pick, m[3], m[2], m[2] / tj[2], statistics.median(ratios), " ".join("%.2f" % x for x in ratios)))
    heads.append(R.headline("CPU a 960x540 picture at equal luma PSNR: TurboJPEG (the preview's) against %s" % pick, [r[0][1] for r in runs],
                            unit="ms", reel_name=tj[0], peer=[next(x for x in r if x[0] == pick)[1] for r in runs], peer_name=pick,
                            ratio=ratios, target=(">=", 1.0)))
    bars.append(dict(label="huffman=%s" % mode, value=statistics.median(ratios), low=min(ratios), high=max(ratios)))
print("above 1: TurboJPEG is cheaper at equal or better quality")
R.write("jpeg", title="The preview's JPEG work: libavcodec mjpeg CPU / TurboJPEG CPU at equal luma PSNR (960x540, one thread)",
        columns=["run", "encoder", "cpuMs", "bytes", "psnrY"],
        rows=[dict(run=k + 1, encoder=e[0], cpuMs=e[1], bytes=e[2], psnrY=e[3]) for k, r in enumerate(runs) for e in r],
        headlines=heads, plot=dict(unit="mjpeg CPU / TurboJPEG CPU (above 1: TurboJPEG cheaper); median and range of runs", reference=1.0, bars=bars),
        parameters=dict(frames=int(os.environ["FRAMES"]), quality=int(os.environ["QUALITY"]), runs=len(runs)),
        load_before=os.environ["LOAD_BEFORE"])
PY
echo "load after: $(cat /proc/loadavg)"
