#!/usr/bin/env bash
# Real-time 1080p30 recording for DURATION s (default 60) with a ratio change every second,
# ProRes HQ and H.264: dropped frames, the longest capture wait at a seam, the split error in
# frames. Then the same cut requests (a cut at every whole second) through each peer at its
# best, on the same number of 1080p frames: how far from the requested frame each one cut.
#   ffmpeg       segment muxer with -segment_times at the cuts AND -force_key_frames at the
#                same times (so a long-GOP encoder has a keyframe where each cut is asked).
#   GStreamer    splitmuxsink max-size-time=1 s with send-keyframe-requests=true (it asks the
#                encoder upstream for a keyframe where it wants to cut; x264enc honours it),
#                x264enc configured like Reel's libx264 (veryfast, I420, key-int-max 30).
#   GStreamer caps change: a size change mid-stream (1920x1080 then 1080x1920, `concat` of two
#                sources) into splitmuxsink, to see whether a new frame size starts a new file
#                (it would make splitmuxsink frame-exact on ratio changes). Finding with
#                GStreamer 1.22 (Debian 12), 45 + 45 frames:
#                  x264enc ! h264parse into mp4mux or qtmux: no new file; one file holds both
#                    sizes (the new SPS in-band, the header naming the first size; ffmpeg
#                    decodes 44 + 46 frames of the two sizes).
#                  avenc_prores_aw into qtmux: a new file at the change, frame-exact (45 + 45),
#                    but gst-launch sometimes never exits at EOS (1 run in 3 here; killed, both
#                    files complete).
#                  matroskamux: "Caps changes are not supported by Matroska", the pipeline
#                    fails, the second file is empty.
#                The row prints what happened here.
# Cuts decided live (the ratio changes a person makes): only Reel (keys, or the session API)
# and GStreamer (splitmuxsink's split-now / split-at-running-time action signals, from an
# application) have a live API; the ffmpeg CLI needs the cut times before it starts.
set -euo pipefail
scripts/setup
if [ "${INSTALL_GST:-1}" = 1 ] && ! command -v gst-launch-1.0 >/dev/null; then
    scripts/setup gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav || true
fi
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
dur=${DURATION:-60}
fps=30
work=$(mktemp -d /tmp/reel-seams-XXXXXX)
trap 'rm -rf "$work"' EXIT
rows=$work/rows.tsv   # codec, recorder, clips, dropped, seam wait ms, split error max, mean (for RESULTS_DIR)
: >"$rows"
load_before=$(cat /proc/loadavg)
ratios=(9x16 1x1 4x3 3x4 16x9)
cuts=$(seq -s, 1 $((dur - 1)))

# Frame index each segment starts at, given files in order: cumulative frame counts.
cut_errors() {  # $@: segment files in order; prints "segments maxerr meanerr"
    python3 - "$fps" "$@" <<'PY'
import subprocess, sys
fps = int(sys.argv[1]); files = sys.argv[2:]
starts, n = [], 0
for f in files:
    starts.append(n)
    out = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0",
                          "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", f],
                         capture_output=True, text=True).stdout.strip()
    n += int(out or 0)
requested = [k * fps for k in range(1, len(starts))]
errs = [abs(s - r) for s, r in zip(starts[1:], requested)]
missing = (n // fps) - len(starts)   # requested cuts that never happened
print(len(files), max(errs) if errs else "n/a", "%.1f" % (sum(errs) / len(errs)) if errs else "n/a", n, max(0, missing))
PY
}

printf "%-8s %-28s %9s %9s %12s %14s %12s\n" codec recorder clips dropped "seam wait" "split error" "mean error"
for codec in prores:hq h264; do
    args=()
    for k in $(seq 1 $((dur - 1))); do args+=(--ratio-at "$k:${ratios[$(((k - 1) % 5))]}"); done
    container=mov; [ $codec = h264 ] && container=mp4
    if [ "${PEERS_ONLY:-0}" != 1 ]; then   # PEERS_ONLY=1: the peers' rows only (quick)
    "$reel" record --scene pattern --pressure-handler off --duration "$dur" --codec $codec --container $container --out "$work/reel-$codec" --name s --json "${args[@]}" >"$work/reel.json"
    python3 - "$work/reel.json" "$codec" "$fps" "$rows" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); codec = sys.argv[2]; fps = int(sys.argv[3])
firsts = [c["firstFrameIndex"] for c in d["clips"]][1:]
errs = [abs(f - fps * k) for k, f in enumerate(firsts, start=1)]
print("%-8s %-28s %9d %9d %9.1f ms %14s %12s" % (codec, "reel (real time)", len(d["clips"]), d["framesDropped"],
      d["longestSeamWaitMs"], max(errs) if errs else "n/a", "%.1f" % (sum(errs) / len(errs)) if errs else "n/a"))
open(sys.argv[4], "a").write("\t".join(map(str, [codec, "reel (real time)", len(d["clips"]), d["framesDropped"], d["longestSeamWaitMs"],
    max(errs) if errs else "n/a", "%.1f" % (sum(errs) / len(errs)) if errs else "n/a"])) + "\n")
print("%-8s   writer: longest clip open %.1f ms, queue high-water %d of 8 frames, drops %s" % ("", d["longestClipOpenMs"], d["writerQueueHighWater"], d["dropReasons"]))
PY
    "$reel" verify "$work/reel-$codec" | tail -1 || echo "         reel verify FAILED (a frame is missing: see the dropped column); the benchmark goes on"
    rm -rf "$work/reel-$codec"
    fi

    # ffmpeg's segment muxer, asked to cut at every second, with the same encoder.
    case $codec in
        prores:hq) enc=(-c:v prores -profile:v 3 -pix_fmt yuv422p10le); ext=mov ;;
        h264) enc=(-c:v libx264 -preset veryfast -g 30 -pix_fmt yuv420p); ext=mp4 ;;
    esac
    mkdir -p "$work/ff"
    ffmpeg -nostdin -v error -f lavfi -i "testsrc2=size=1920x1080:rate=$fps" -frames:v $((dur * fps)) "${enc[@]}" \
        -force_key_frames "$cuts" -f segment -segment_times "$cuts" -reset_timestamps 1 "$work/ff/seg%03d.$ext"
    read -r n maxe meane total missing < <(cut_errors "$work/ff"/seg*.$ext)
    printf "%-8s %-28s %9d %9s %12s %14s %12s\n" "$codec" "ffmpeg segment+force_key" "$n" "-" "-" "$maxe" "$meane"
    printf "%s\t%s\t%s\t-\t-\t%s\t%s\n" "$codec" "ffmpeg segment+force_key" "$n" "$maxe" "$meane" >>"$rows"
    [ "$missing" -gt 0 ] && echo "         ffmpeg: $missing requested cuts never happened (it cuts only at keyframes)"
    rm -rf "$work/ff"

    if command -v gst-launch-1.0 >/dev/null; then
        mkdir -p "$work/gst"
        case $codec in
            prores:hq) genc="avenc_prores_aw"; mux=qtmux; gext=mov ;;
            h264) genc="video/x-raw,format=I420 ! x264enc speed-preset=veryfast key-int-max=30"; mux=mp4mux; gext=mp4 ;;
        esac
        # gst-launch sometimes never exits at EOS (qtmux with ProRes, about 1 run in 3 here):
        # it is killed after a bound, and the segments it closed are still counted.
        limit=$((dur * 4 + 60)); set +e
        timeout "$limit" gst-launch-1.0 -q videotestsrc num-buffers=$((dur * fps)) pattern=ball \
            ! video/x-raw,width=1920,height=1080,framerate=$fps/1 ! videoconvert ! $genc \
            ! $( [ $codec = h264 ] && echo "h264parse !" ) splitmuxsink muxer=$mux location="$work/gst/seg%03d.$gext" \
              max-size-time=1000000000 send-keyframe-requests=true >/dev/null 2>"$work/gst.err"
        grc=$?; set -e
        [ $grc = 124 ] && echo "         gstreamer: gst-launch did not exit at EOS within ${limit} s (killed); the segments it wrote are counted"
        if { [ $grc = 0 ] || [ $grc = 124 ]; } && compgen -G "$work/gst/seg*.$gext" >/dev/null; then
            read -r n maxe meane total missing < <(cut_errors "$work/gst"/seg*.$gext)
            printf "%-8s %-28s %9d %9s %12s %14s %12s\n" "$codec" "gst splitmuxsink+kf requests" "$n" "-" "-" "$maxe" "$meane"
            printf "%s\t%s\t%s\t-\t-\t%s\t%s\n" "$codec" "gst splitmuxsink+kf requests" "$n" "$maxe" "$meane" >>"$rows"
            [ "$missing" -gt 0 ] && echo "         splitmuxsink: $missing requested cuts never happened (it cuts only at keyframes)"
        else
            echo "         gstreamer: pipeline with $genc failed (exit $grc): $(tail -1 "$work/gst.err")"
        fi
        rm -rf "$work/gst"
        # A frame-size change mid-stream: 45 frames 1920x1080, then 45 frames 1080x1920.
        gmuxes="qtmux matroskamux"; [ $codec = h264 ] && gmuxes="mp4mux qtmux matroskamux"
        for gm in $gmuxes; do
            mkdir -p "$work/gcap"
            case $gm in matroskamux) gx=mkv ;; qtmux) gx=mov ;; *) gx=mp4 ;; esac
            timeout 60 gst-launch-1.0 -q concat name=c ! videoconvert ! $genc ! $( [ $codec = h264 ] && echo "h264parse !" ) \
                splitmuxsink muxer=$gm location="$work/gcap/seg%03d.$gx" \
                videotestsrc num-buffers=45 ! video/x-raw,width=1920,height=1080,framerate=$fps/1 ! c. \
                videotestsrc num-buffers=45 ! video/x-raw,width=1080,height=1920,framerate=$fps/1 ! c. >"$work/gcap.log" 2>&1 && st=ok || st=$?
            case $st in
                ok) ;;
                124) st="hung at EOS (killed after 60 s)" ;;
                *) st="failed: $( (grep -o -m1 'Caps changes are not supported[^.`]*' "$work/gcap.log" || grep -m1 ERROR "$work/gcap.log") | head -1 || true)" ;;
            esac
            desc=""
            for f in "$work/gcap"/seg*; do
                sizes=$(ffprobe -v error -show_entries frame=width,height -of csv=p=0 "$f" 2>/dev/null | sed 's/,$//' | grep -v '^$' | sort | uniq -c | awk '{printf "%s×%s ", $1, $2}' || true)
                desc+="[$(basename "$f"): ${sizes:-unreadable}] "
            done
            printf "%-8s %-28s pipeline %s; files: %s\n" "$codec" "gst caps change ($gm)" "$st" "$desc"
            printf "%s\t%s\t-\t-\t-\t-\t-\t%s\n" "$codec" "gst caps change ($gm)" "pipeline $st; files: $desc" >>"$rows"
            rm -rf "$work/gcap"
        done
    else
        echo "         gstreamer not installed: splitmuxsink skipped"
    fi
done
echo
echo "gst caps change: 45 frames at 1920x1080 then 45 at 1080x1920 into splitmuxsink; a frame-exact split would be two files of 45 frames, one size each."
echo "split error: |first frame of clip k - k*$fps| in frames, max over the $((dur - 1)) requested cuts (target 0)."
echo "seam wait: the longest time capture waited to hand a frame over near a seam (target < 33 ms; in real time capture never waits: it would drop, and drops are counted)."
LOAD_BEFORE="$load_before" python3 - "$rows" "$dur" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
cols = ["codec", "recorder", "clips", "dropped", "seamWaitMs", "splitErrorMax", "splitErrorMean", "note"]
num = lambda v: float(v) if v.replace(".", "", 1).isdigit() else None
rows = []
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t") + [""] * 8
    rows.append(dict(zip(cols, [f[0], f[1], num(f[2]), num(f[3]), num(f[4]), num(f[5]), num(f[6]), f[7]])))
heads = []
for codec in dict.fromkeys(r["codec"] for r in rows):
    reel = [r for r in rows if r["codec"] == codec and r["recorder"].startswith("reel")]
    peers = [r for r in rows if r["codec"] == codec and not r["recorder"].startswith("reel") and r["splitErrorMax"] is not None]
    if not reel:
        continue
    r = reel[0]
    for p in peers or [None]:
        heads.append(R.headline("%s: largest split error at %d cuts requested every second (peer: %s, cuts known in advance)"
                                % (codec, int(sys.argv[2]) - 1, p["recorder"] if p else "none"), r["splitErrorMax"], unit="frames",
                                reel_name=r["recorder"], peer=p["splitErrorMax"] if p else None, peer_name=p["recorder"] if p else None,
                                ratio=[], target=("==", 0, "reel")))
    heads.append(R.headline("%s: frames dropped in real time at the seams" % codec, r["dropped"], unit="frames", reel_name=r["recorder"],
                            target=("==", 0, "reel")))
R.write("seams", headlines=heads, title="Split error at cuts every second, 1080p30, %s s (frames; 0 = frame-exact)" % sys.argv[2], columns=cols, rows=rows,
        plot=dict(unit="largest split error in frames (0 = every cut on the requested frame)",
                  bars=[dict(label="%s %s" % (r["codec"], r["recorder"]), value=r["splitErrorMax"], series=r["recorder"])
                        for r in rows if r["splitErrorMax"] is not None]),
        parameters=dict(duration=int(sys.argv[2])), load_before=os.environ["LOAD_BEFORE"])
PY
