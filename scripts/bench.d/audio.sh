#!/usr/bin/env bash
# Sound at segment boundaries against the peers (issue 28 item 8). All three record the same
# emulated ALSA device (scripts/fake-alsa: a 1 kHz tone with a numbered click every device
# second) for DURATION s (default 30) with video, cut every SEGMENT s (default 2.05: off the
# 10 ms grid of the peers' sound buffers and between two frames), PCM sound
# in Matroska:
#   reel         `reel record --audio default --segment-duration SEGMENT` (synthetic 1280² H.264)
#   ffmpeg       `-f alsa -i default` beside testsrc2 (real time), libx264, the segment muxer
#                (`-segment_time SEGMENT`, keyframes forced at the boundaries: its best)
#   GStreamer    alsasrc beside a live videotestsrc, x264enc, splitmuxsink (max-size-time,
#                keyframe requests: its best)
# For each: every segment's sound decoded by ffmpeg and its frames counted; for the segments
# between two cuts, how far the sound's length is from the picture's (sound samples less frames
# / 30 × 48,000: 0 when both are cut at the same instants), and the same for the first segment
# (where the sound starts against the picture); the samples lost or repeated across the
# boundaries (the clicks must be 48,000 samples apart in the joined sound, numbered one after
# another); and the recorder's CPU time (user + system).
set -euo pipefail
scripts/setup alsa-utils
if [ "${INSTALL_GST:-1}" = 1 ] && ! { gst-inspect-1.0 x264enc && gst-inspect-1.0 alsasrc && gst-inspect-1.0 splitmuxsink; } >/dev/null 2>&1; then
    scripts/setup gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-base gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-alsa || true
fi
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
seg=${SEGMENT:-2.05}
dur=${DURATION:-30}
work=$(mktemp -d /tmp/reel-audio-XXXXXX)
trap 'rm -rf "$work"' EXIT
rows=$work/rows.tsv
: >"$rows"
load_before=$(cat /proc/loadavg)
echo "load: $load_before   commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)   scene: pattern (reel), testsrc2 / videotestsrc (peers); sound: the emulated ALSA device, 48 kHz stereo S16"

cpu() {  # runs "$@", prints its user+system CPU seconds on fd 3
    python3 - "$@" 3>&1 >/dev/null 2>"$work/cpu.err" <<'PY'
import os, resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
os.write(3, ("%.2f" % (u.ru_utime + u.ru_stime)).encode())
PY
}

measure() {  # $1: recorder name, $2: CPU seconds; then the segment files in order
    python3 - "$seg" "$rows" "$@" <<'PY'
import array, subprocess, sys
seg, rows, name, cpu, files = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
def sound(f):
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", f, "-map", "0:a:0", "-f", "s16le", "-ac", "1", "-"], capture_output=True).stdout
    a = array.array("h"); a.frombytes(raw); return a
def video_seconds(f):
    # Frames at 30 fps (Matroska's millisecond timestamps would blur a cut by a millisecond).
    n = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_packets", "-of", "csv=p=0", f], capture_output=True, text=True).stdout.strip()
    return int(n or 0) / 30
def clicks(s):
    out, i = [], 0
    while i < len(s):
        if s[i] > 0.4 * 32767 and i + 129 <= len(s) and all(abs(s[j]) < 11468 for j in range(max(0, i - 5), max(0, i - 1))):
            m = max(range(i, min(len(s), i + 4)), key=lambda j: s[j])
            k = 0
            for b in range(32):
                k = (k << 1) | (1 if s[m + 2 + 4 * b] + s[m + 3 + 4 * b] > 0 else 0)
            out.append((m, k)); i = m + 129
        else:
            i += 1
    return out
joined, mismatch = array.array("h"), []
for f in files:
    a = sound(f)
    joined.extend(a)
    mismatch.append(len(a) - video_seconds(f) * 48000)
cs = clicks(joined)
bad = sum(abs((b[0] - a[0]) - (b[1] - a[1]) * 48000) for a, b in zip(cs, cs[1:]) if b[1] > a[1])
# A segment between two cuts holds as much sound as picture when both are cut at the same instants.
inner = max((abs(m) for m in mismatch[1:-1]), default=float("nan"))
first = mismatch[0] if mismatch else float("nan")
print("%-36s %8d %14.0f %12.0f %14d %8d %8s" % (name, len(files), inner, first, bad, len(cs), cpu))
open(rows, "a").write("\t".join(map(str, [name, len(files), "%.0f" % inner, "%.0f" % first, bad, len(cs), cpu])) + "\n")
PY
}

printf "%-36s %8s %14s %12s %14s %8s %8s\n" recorder segments "cut mismatch" "first seg." "lost/repeated" clicks "CPU s"
fa() { scripts/fake-alsa -- "$@"; }

mkdir -p "$work/reel"
c=$(cpu scripts/fake-alsa -- "$reel" record --audio default --scene pattern --source synthetic:1280 --codec h264 --container mkv \
    --plain --segment-duration "$seg" --duration "$dur" --out "$work/reel" --name seg --json)
measure "reel --segment-duration" "$c" "$work/reel"/seg-*.mkv

mkdir -p "$work/ff"
times=$(python3 -c "s=$seg; d=$dur; print(','.join('%g' % (k*s) for k in range(1, int(d/s) + 1)))")
c=$(cpu scripts/fake-alsa -- ffmpeg -nostdin -v error -thread_queue_size 1024 -f alsa -sample_rate 48000 -channels 2 -i default \
    -re -f lavfi -i "testsrc2=size=1280x720:rate=30" -t "$dur" -map 1:v -map 0:a -c:v libx264 -preset veryfast -g 30 \
    -force_key_frames "$times" -pix_fmt yuv420p -c:a pcm_s16le -f segment -segment_time "$seg" -reset_timestamps 1 "$work/ff/seg%03d.mkv")
measure "ffmpeg -f alsa + segment muxer" "$c" "$work/ff"/seg*.mkv

if gst-inspect-1.0 alsasrc >/dev/null 2>&1 && gst-inspect-1.0 x264enc >/dev/null 2>&1; then
    mkdir -p "$work/gst"
    ns=$(python3 -c "print(int($seg * 1e9))")
    c=$(cpu timeout $((dur + 30)) scripts/fake-alsa -- gst-launch-1.0 -q -e \
        splitmuxsink name=mux muxer=matroskamux location="$work/gst/seg%03d.mkv" max-size-time="$ns" send-keyframe-requests=true \
        videotestsrc is-live=true num-buffers=$((dur * 30)) ! video/x-raw,width=1280,height=720,framerate=30/1 ! videoconvert \
        ! x264enc speed-preset=veryfast key-int-max=30 tune=zerolatency ! h264parse ! mux.video \
        alsasrc device=default latency-time=10000 num-buffers=$((dur * 100)) ! audio/x-raw,rate=48000,channels=2,format=S16LE ! audioconvert ! queue ! mux.audio_0)
    measure "gst alsasrc + splitmuxsink" "$c" "$work/gst"/seg*.mkv
else
    echo "         gstreamer's alsasrc or x264enc is not installed: splitmuxsink skipped"
fi
echo
echo "cut mismatch: over the segments between two cuts, |sound samples - frames / 30 x 48,000|, the largest (0: sound and picture cut at the same instants)."
echo "first seg.: the same for the first segment (sound samples less picture time x 48,000): where the sound starts against the picture."
echo "lost/repeated: over the click pairs of the joined sound, |samples between them - 48,000 x clicks apart| summed (0: none lost or repeated)."
LOAD_BEFORE="$load_before" python3 - "$rows" "$seg" "$dur" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
cols = ["recorder", "segments", "cutMismatchSamples", "firstSegmentMismatchSamples", "samplesLostOrRepeated", "clicks", "cpuSeconds"]
num = lambda v: float(v) if v not in ("", "nan", "n/a") else None
rows = [dict(zip(cols, [f[0]] + [num(x) for x in f[1:]])) for f in (l.rstrip("\n").split("\t") for l in open(sys.argv[1]))]
reel = next(r for r in rows if r["recorder"].startswith("reel"))
heads = [R.headline("sound cut off the picture at segment boundaries, PCM every %s s (peer: %s)" % (sys.argv[2], p["recorder"]),
                    reel["cutMismatchSamples"], unit="samples", peer=p["cutMismatchSamples"], peer_name=p["recorder"], ratio=[],
                    target=("<=", 1, "reel")) for p in rows if not p["recorder"].startswith("reel")]
heads.append(R.headline("sound samples lost or repeated across the boundaries", reel["samplesLostOrRepeated"], unit="samples",
                        target=("==", 0, "reel"), key=False))
R.write("audio", "Sound at segment boundaries: reel against ffmpeg -f alsa + segment and alsasrc + splitmuxsink",
        columns=cols, rows=rows, headlines=heads, load_before=os.environ["LOAD_BEFORE"],
        parameters={"segment": float(sys.argv[2]), "seconds": float(sys.argv[3]), "scene": "pattern"})
PY
