#!/usr/bin/env bash
# Real-time capacity: how many concurrent 1080p30 recordings each tool sustains with no dropped
# frame for DURATION s (default 60), ProRes HQ and H.264, from the same real-time sources.
#
# Sources: N emulated V4L2 cameras (scripts/fake-v4l2, YUYV 1920x1080 at 30 fps, each frame
#   carrying the sensor's barcode = its V4L2 sequence number; a frame the camera finds no free
#   buffer for is lost there, as in the kernel, and its number never appears). Each recorder
#   process has its own camera (the emulation is preloaded into it), so N cameras = N processes,
#   each also paying for its camera's drawing (the same for every tool).
# Recorders, N of each at once, every one asked for DURATION*30 frames:
#   reel      reel record --no-adjust --source v4l2:/dev/video0:1920x1080@30:YUYV --plain (real
#             time; --no-adjust: the cost model neither adjusts nor refuses the configuration,
#             so what is measured is what it sustains, not what the cost model allows)
#   ffmpeg    ffmpeg -f v4l2 -input_format yuyv422 -video_size 1920x1080 -framerate 30,
#             -fps_mode passthrough (every captured frame written once, none duplicated to
#             fill a gap), -sws_flags neighbor (Reel converts with SWS_POINT)
#   gst       gst-launch-1.0 -e v4l2src ! queue (30 buffers) ! videoconvert
#             chroma-resampler=nearest dither=none ! ENCODER ! qtmux/mp4mux ! filesink
# Same encoders and settings as Reel's (VideoEncoder.swift), every encoder with its threads on
# auto (libavcodec -threads 0, x264enc threads=0, avenc threads=0), fragmented MOV/MP4 at 1 s:
#   prores    Reel and ffmpeg: libavcodec `prores` (prores_aw) profile HQ, vendor apl0,
#             yuv422p10le. GStreamer cannot give prores_aw a profile (avenc_prores_aw has no
#             profile property and ignores caps; it always writes Standard, apcn), so its row
#             uses avenc_prores_ks profile=hq: the same profile, another libavcodec encoder.
#   h264      libx264 veryfast, CRF 23, keyint 30, yuv420p on all three; x264enc gets
#             pass=qual quantizer=23 (CRF 23), and bitrate=2048000 because x264enc always sets
#             VBV to `bitrate` in that mode (2 Gbit/s never binds). Its x264 settings string
#             (SEI) is otherwise the same as ffmpeg's (checked with GStreamer 1.22).
# Drops are counted from the outputs, not from the tools' reports: every output is decoded with
# `reel probe --frames --json` and its barcodes read; dropped = the sequence numbers missing
# below the last barcode (the camera numbers frames from 0 at STREAMON: frames the tool did not
# take in time, at the start too) + frames short of DURATION*30; a run fails when a tool exits
# non-zero, times out (3×DURATION + 60 s) or writes a frame whose barcode cannot be read.
# N = 1, 2, … (to MAX_N, default 6) with the tools alternating at each N; a tool stops at the
# first N where any of its recordings drops a frame. Also per recording: CPU time (user+sys)
# and peak RSS (/usr/bin/time).
#   DURATION=60 MAX_N=6 CODECS="prores h264" TOOLS="reel ffmpeg gst" scripts/bench capacity
# Outputs go to WORKDIR (default /var/tmp; about 1.4 GB per ProRes recording of 60 s), deleted
# after they are read. With RESULTS_DIR set, writes RESULTS_DIR/capacity.json and capacity.svg.
set -euo pipefail
scripts/setup
if [ "${INSTALL_GST:-1}" = 1 ] && ! command -v gst-launch-1.0 >/dev/null; then
    scripts/setup gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-ugly gstreamer1.0-libav || true
fi
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
fake=$PWD/scripts/fake-v4l2
"$fake" --build >/dev/null
dur=${DURATION:-60}
fps=30
frames=$((dur * fps))
maxn=${MAX_N:-6}
codecs=${CODECS:-prores h264}
tools=${TOOLS:-reel ffmpeg gst}
work=$(mktemp -d "${WORKDIR:-/var/tmp}/reel-capacity-XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache XDG_RUNTIME_DIR=$work/run
mkdir -p "$XDG_CACHE_HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
[ "$dur" -ge 60 ] || echo "note: DURATION=$dur is below the 60 s this benchmark is specified with" >&2
if [[ " $tools " == *" gst "* ]] && ! command -v gst-launch-1.0 >/dev/null; then
    echo "gstreamer not installed: the gst rows are skipped" >&2; tools=${tools//gst/}
fi
load_before=$(cat /proc/loadavg)
echo "load before: $load_before   cpus: $(nproc)   $(ffmpeg -version | head -1 | cut -d' ' -f1-3)   $(gst-launch-1.0 --version 2>/dev/null | sed -n 2p || true)"
echo "$frames frames (${dur} s) per recording, 1920x1080 YUYV cameras at $fps fps"
results=$work/results.txt
: >"$results"

# command TOOL CODEC OUT: the recorder's command line (to run under scripts/fake-v4l2).
command_for() {
    local tool=$1 codec=$2 out=$3
    case $tool:$codec in
        reel:prores) echo "$reel" record --no-adjust --pressure-handler off --source v4l2:/dev/video0:1920x1080@30:YUYV --frames $frames --codec prores:hq \
                          --container mov --plain --out "$out" --name c --json ;;
        reel:h264)   echo "$reel" record --no-adjust --pressure-handler off --source v4l2:/dev/video0:1920x1080@30:YUYV --frames $frames --codec h264 \
                          --container mp4 --plain --out "$out" --name c --json ;;
        ffmpeg:*)    local enc mux ext
                     if [ "$codec" = prores ]; then
                         enc="-c:v prores -profile:v 3 -vendor apl0 -pix_fmt yuv422p10le -threads 0 -g 30"
                         mux="-movflags delay_moov+default_base_moof+use_metadata_tags -frag_duration 1000000"; ext=mov
                     else
                         enc="-c:v libx264 -preset veryfast -g 30 -pix_fmt yuv420p -threads 0"
                         mux="-movflags delay_moov+default_base_moof+use_metadata_tags+frag_keyframe"; ext=mp4
                     fi
                     echo ffmpeg -nostdin -v error -f v4l2 -input_format yuyv422 -video_size 1920x1080 -framerate $fps \
                          -i /dev/video0 -frames:v $frames -fps_mode passthrough -sws_flags neighbor $enc $mux "$out/c.$ext" ;;
        gst:prores)  echo gst-launch-1.0 -e -q v4l2src device=/dev/video0 num-buffers=$frames \
                          ! video/x-raw,format=YUY2,width=1920,height=1080,framerate=$fps/1 \
                          ! queue max-size-buffers=30 max-size-bytes=0 max-size-time=0 \
                          ! videoconvert chroma-resampler=nearest dither=none ! video/x-raw,format=I422_10LE \
                          ! avenc_prores_ks profile=hq vendor=apl0 threads=0 \
                          ! qtmux fragment-duration=1000 ! filesink location="$out/c.mov" ;;
        gst:h264)    echo gst-launch-1.0 -e -q v4l2src device=/dev/video0 num-buffers=$frames \
                          ! video/x-raw,format=YUY2,width=1920,height=1080,framerate=$fps/1 \
                          ! queue max-size-buffers=30 max-size-bytes=0 max-size-time=0 \
                          ! videoconvert chroma-resampler=nearest dither=none ! video/x-raw,format=I420 \
                          ! x264enc speed-preset=veryfast pass=qual quantizer=23 bitrate=2048000 key-int-max=30 threads=0 \
                          ! h264parse ! mp4mux fragment-duration=1000 ! filesink location="$out/c.mp4" ;;
    esac
}

# level TOOL CODEC N: N recordings at once; appends one line per recording to $results;
# returns 1 when any of them dropped a frame or failed.
level() {
    local tool=$1 codec=$2 n=$3 pids=() i
    rm -rf "$work/out"; mkdir -p "$work/out"
    for i in $(seq 1 "$n"); do
        mkdir -p "$work/out/$i"
        # shellcheck disable=SC2046  # the command line is split on purpose (no spaces in its paths)
        ( cd "$work/out/$i" && exec /usr/bin/time -f "%e %U %S %M" -o "$work/out/$i/time" \
              timeout $((dur * 3 + 60)) "$fake" --fps $fps -- $(command_for "$tool" "$codec" "$work/out/$i") \
              >"$work/out/$i/stdout" 2>"$work/out/$i/stderr" ) &
        pids+=($!)
    done
    local bad=0 st
    for i in $(seq 1 "$n"); do
        st=0; wait "${pids[$((i - 1))]}" || st=$?
        echo "$st" >"$work/out/$i/status"
    done
    for i in $(seq 1 "$n"); do
        local f; f=$(shopt -s nullglob; for x in "$work/out/$i"/*.mov "$work/out/$i"/*.mp4; do echo "$x"; break; done)
        # The probe goes through a file: at DURATION=60 its JSON (every frame's index and PTS,
        # ~35 bytes a frame) is ~63 KB, and an environment string over 128 KiB cannot be passed.
        local probe=$work/out/$i/probe.json
        echo '{}' >"$probe"
        if [ -n "$f" ]; then "$reel" probe --frames --json "$f" >"$probe" 2>/dev/null || echo '{}' >"$probe"; fi
        local line
        line=$(PROBE="$probe" python3 - "$tool" "$codec" "$n" "$i" "$frames" "$(cat "$work/out/$i/status")" \
               "$(cat "$work/out/$i/time" 2>/dev/null | tail -1)" <<'PY'
import json, os, sys
tool, codec, n, i, frames, status, tm = sys.argv[1:8]
frames = int(frames)
d = json.load(open(os.environ["PROBE"]))
idx = d.get("frameIndices") or []
read = [k for k in idx if k is not None and k >= 0]   # -1: a frame whose barcode could not be read
uniq = sorted(set(read))
# The camera numbers its frames from 0 at STREAMON: every number below the last one read that
# is missing was lost (at the start too), and a recording that ends early is short.
missing = (uniq[-1] + 1 - len(uniq)) if uniq else frames
short = max(0, frames - (uniq[-1] + 1)) if uniq else 0
dropped = missing + short
unreadable = len(idx) - len(read)
dup = len(read) - len(uniq)
wall, user, sysc, rss = (tm.split() + ["nan"] * 4)[:4] if tm else ("nan",) * 4
ok = status == "0" and len(read) > 0 and unreadable == 0
print(tool, codec, n, i, "ok" if ok else "failed:%s" % status, len(read), dropped, dup, unreadable, wall,
      "%.2f" % (float(user) + float(sysc)) if user != "nan" else "nan", int(rss) // 1024 if rss != "nan" else "nan")
PY
)
        echo "$line" >>"$results"
        read -r _ _ _ _ verdict _ dropped _ _ <<<"$line"
        if [ "$verdict" != ok ] || [ "$dropped" != 0 ]; then bad=1; fi
        if [ "$verdict" != ok ]; then echo "  $tool $codec N=$n #$i $verdict: $(tail -2 "$work/out/$i/stderr" | tr '\n' ' ')" >&2; fi
    done
    rm -rf "$work/out"
    return $bad
}

for codec in $codecs; do
    live=" $tools "
    for n in $(seq 1 "$maxn"); do
        for tool in $tools; do
            [[ "$live" == *" $tool "* ]] || continue
            echo "  $codec N=$n $tool (load $(cut -d' ' -f1-3 /proc/loadavg))"
            if ! level "$tool" "$codec" "$n"; then live=${live/ $tool / }; fi
        done
        [ -n "${live// /}" ] || break
    done
done
load_after=$(cat /proc/loadavg)
echo "load after: $load_after"
cp "$results" "${RESULTS:-/tmp/reel-bench-capacity.txt}"

LOAD_BEFORE="$load_before" LOAD_AFTER="$load_after" python3 - "$results" "$frames" "$maxn" "$dur" <<'PY'
import os, sys, statistics as st
from collections import defaultdict
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
path, frames, maxn, dur = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
runs = defaultdict(list)
for line in open(path):
    tool, codec, n, i, verdict, read, dropped, dup, unreadable, wall, cpu, rss = line.split()
    runs[(codec, tool, int(n))].append(dict(ok=verdict == "ok", verdict=verdict, read=int(read), dropped=int(dropped),
        dup=int(dup), wall=float(wall), cpu=float(cpu), rss=rss))
codecs = list(dict.fromkeys(c for c, _, _ in runs))
tools = list(dict.fromkeys(t for _, t, _ in runs))
print()
print("%-7s %-7s %3s %-22s %10s %18s %18s %12s" % ("codec", "tool", "N", "dropped per recording", "failed", "cpu s/rec (range)", "wall s max", "peak RSS MiB"))
rows = []
for codec in codecs:
    for tool in tools:
        for n in range(1, maxn + 1):
            r = runs.get((codec, tool, n))
            if not r: continue
            cpus = [x["cpu"] for x in r]; walls = [x["wall"] for x in r]
            failed = sum(not x["ok"] for x in r)
            rss = max(int(x["rss"]) for x in r if x["rss"] != "nan") if any(x["rss"] != "nan" for x in r) else 0
            drops = [x["dropped"] for x in r]
            print("%-7s %-7s %3d %-22s %10d %18s %18.1f %12d" % (codec, tool, n, ",".join(map(str, drops)), failed,
                  "%.1f (%.1f-%.1f)" % (st.median(cpus), min(cpus), max(cpus)), max(walls), rss))
            rows.append(dict(codec=codec, tool=tool, n=n, dropped=drops, failed=failed, cpuMedian=st.median(cpus),
                             cpuMin=min(cpus), cpuMax=max(cpus), wallMax=max(walls), peakRssMiB=rss,
                             duplicates=[x["dup"] for x in r]))
def capacity(codec, tool):
    best = 0
    for n in range(1, maxn + 1):
        r = runs.get((codec, tool, n))
        if not r: break
        if all(x["ok"] and x["dropped"] == 0 for x in r): best = n
        else: break
    tested = max((n for (c, t, n) in runs if c == codec and t == tool), default=0)
    return best, best == tested == maxn   # capped: sustained every N tried
print()
print("capacity: the most concurrent recordings with no frame dropped (≥ means MAX_N=%d was reached)" % maxn)
print("%-7s %s %s" % ("codec", " ".join("%10s" % t for t in tools), " ".join("%14s" % ("reel/" + t) for t in tools if t != "reel")))
summary = []
for codec in codecs:
    caps = {t: capacity(codec, t) for t in tools}
    cells = " ".join("%10s" % (("≥" if caps[t][1] else "") + str(caps[t][0])) for t in tools)
    ratios = []
    for t in tools:
        if t == "reel" or "reel" not in caps: continue
        ratios.append("%14s" % ("%.2fx" % (caps["reel"][0] / caps[t][0]) if caps[t][0] else "-"))
    print("%-7s %s %s" % (codec, cells, " ".join(ratios)))
    summary.append(dict(codec=codec, **{t: caps[t][0] for t in tools}, capped={t: caps[t][1] for t in tools}))
print()
print("dropped: barcodes (V4L2 sequence numbers, from 0 at STREAMON) missing from the output below its last one, plus")
print("  frames short of %d; read from the decoded files, not from the tools' reports." % frames)
print("cpu s/rec: user+sys CPU of one recording process (its camera's drawing included), median and range over the N.")
print("gst prores: avenc_prores_ks profile=hq (GStreamer cannot set prores_aw's profile); reel and ffmpeg: prores_aw HQ.")
heads = []
for s in summary:
    if "reel" not in tools:
        break
    for t in tools:
        if t == "reel":
            continue
        heads.append(R.headline("%s: concurrent 1080p30 recordings with 0 dropped frames for %d s, against %s (N = 1..%d%s)" % (
                                    s["codec"], dur, t, maxn, "; Reel sustained every N tried" if s["capped"]["reel"] else ""), s["reel"], unit="recordings",
                                reel_name="reel", peer=s[t], peer_name=t, ratio=[s["reel"] / s[t]] if s[t] else [], ratio_of="reel/peer",
                                target=(">=", 1.0) if s[t] else (">=", 1, "reel")))
R.write("capacity", headlines=heads, title="Concurrent 1080p30 recordings sustained with no dropped frame (%d s each)" % dur,
        columns=["codec", "tool", "n", "dropped", "failed", "cpuMedian", "cpuMin", "cpuMax", "wallMax", "peakRssMiB", "duplicates"],
        rows=rows, summary=summary,
        plot=dict(unit="concurrent recordings with 0 dropped frames",
                  bars=[dict(label="%s %s" % (s["codec"], t), value=s[t], series=t) for s in summary for t in tools]),
        parameters=dict(duration=dur, frames=frames, maxN=maxn, tools=tools, codecs=codecs),
        load_before=os.environ["LOAD_BEFORE"], load_after=os.environ["LOAD_AFTER"])
PY
