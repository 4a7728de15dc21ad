#!/usr/bin/env bash
# The soak (issue 25 item 5; not part of scripts/test): `reel record` with its defaults
# (ProRes 422 HQ 1920x1080 30 fps asked, as adjusted to what this machine holds; the default
# realistic scene; through the default storage pool, which the first run creates) for DURATION s (default 1800) in real time, with SEGMENT-second
# segments (default 60) and `--keep KEEP` (default 10min), as a newcomer runs it: an empty
# XDG_DATA_HOME and XDG_CACHE_HOME of its own. Every 10 s it samples the process's resident
# memory (VmRSS), open descriptors (/proc/PID/fd) and threads. At the end: frames dropped (0),
# RSS growth after the first minute (target <= 5 MB: the largest sample against the one at 60 s;
# beside it the growth of each minute's smallest sample), descriptors and threads (constant after
# the first minute), every remaining segment verified (`reel verify`, against the index), the
# deleted segments exactly the oldest, each finished segment exactly SEGMENT x 30 frames
# (ffprobe). Then ffmpeg doing the same work (testsrc2 1080p30, libavcodec's prores at the
# profile Reel recorded, the segment muxer at SEGMENT s) for PEER_SECONDS (default 120) s in
# real time (-re): its peak RSS beside Reel's.
set -euo pipefail
scripts/setup
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
dur=${DURATION:-1800}
seg=${SEGMENT:-60}
keep=${KEEP:-10min}
peer=${PEER_SECONDS:-120}
work=$(mktemp -d /tmp/reel-soak-XXXXXX)
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
load_before=$(cat /proc/loadavg)
echo "load: $load_before   commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)   scene: the default (realistic)"
echo "reel record --duration $dur --segment-duration $seg --keep $keep --name soak (defaults otherwise), fresh XDG dirs"
samples=$work/samples.tsv
: >"$samples"
XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache "$reel" record --duration "$dur" --segment-duration "$seg" --keep "$keep" \
    --out "$work/out" --name soak --json >"$work/summary.json" 2>"$work/stderr" &
pid=$!
start=$(date +%s)
while kill -0 "$pid" 2>/dev/null; do
    t=$(( $(date +%s) - start ))
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    # Anonymous (heap, buffers) and file-backed (mapped files) parts of it, for the record.
    split=$(awk '/^RssAnon:/ {a=$2} /^RssFile:/ {f=$2} END {print a "\t" f}' "/proc/$pid/status" 2>/dev/null || true)
    printf "%s\t%s\n" "$t" "$split" >>"$work/rss-split.tsv"
    thr=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l || true)
    [ -n "$rss" ] && printf "%s\t%s\t%s\t%s\n" "$t" "$rss" "$fds" "$thr" >>"$samples"
    # What the threads and descriptors are (names; descriptor targets without the clip names),
    # and the disk the recording and its pool take (du of both, KiB).
    names=$(cat /proc/"$pid"/task/*/comm 2>/dev/null | sort | uniq -c | awk '{printf "%s*%s ", $2, $1}' || true)
    targets=$(for f in /proc/"$pid"/fd/*; do readlink "$f" 2>/dev/null; done | sed -e 's#/[^/]*\.\(mov\|mp4\|mkv\|bin\)$#/CLIP#' -e 's#\[[0-9]*\]#[]#' | sort | uniq -c | awk '{printf "%s*%s ", $2, $1}' || true)
    disk=$(du -sk "$work/out" "$work/data" 2>/dev/null | awk '{s += $1} END {print s + 0}' || true)
    printf "%s\t%s\t%s\t%s\n" "$t" "$disk" "$names" "$targets" >>"$work/what.tsv"
    sleep 10 & wait $! || true
done
wait "$pid" || { echo "reel record failed: $(cat "$work/stderr")"; exit 1; }
cat "$work/stderr"
"$reel" verify "$work/out" | tail -1

# ffmpeg on the same work, in real time, for PEER_SECONDS: its peak RSS. The same encoder
# (libavcodec's prores, prores_aw) at the profile the camera recorded (the default request
# is adjusted on a 2-core machine: the summary's `adjusted`).
peer_args=$(python3 -c "
import json; s = json.load(open('$work/summary.json')); a = s.get('adjusted')
codec = a['chosen']['codec'] if a else 'prores:hq'
rate = (a['chosen']['framesPerSecond'] if a else 30)
profiles = {'prores:proxy': 0, 'prores:lt': 1, 'prores:standard': 2, 'prores:hq': 3}
if codec in profiles:
    print('-c:v prores -profile:v %d -pix_fmt yuv422p10le -r %s' % (profiles[codec], rate))
else:
    print('-c:v libx264 -preset veryfast -pix_fmt yuv420p -g %s -r %s' % (int(round(float(rate))), rate))")
mkdir -p "$work/ff"
# shellcheck disable=SC2086
/usr/bin/time -f "%M" -o "$work/ff.rss" ffmpeg -nostdin -v error -re -f lavfi -i "testsrc2=size=1920x1080:rate=30" -t "$peer" \
    $peer_args -f segment -segment_time "$seg" -reset_timestamps 1 "$work/ff/seg%03d.mov" || true
echo "ffmpeg peer: $peer_args"

LOAD_BEFORE="$load_before" python3 - "$work" "$seg" "$dur" "$keep" "$peer" <<'PY'
import json, os, subprocess, sys
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
work, seg, dur, keep, peer = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
s = json.load(open(work + "/summary.json"))
rows = [tuple(map(int, l.split("\t"))) for l in open(work + "/samples.tsv")]
after = [r for r in rows if r[0] >= 60]
rss_growth = (max(r[1] for r in after) - after[0][1]) / 1024 if after else float("nan")
fds = sorted({r[2] for r in after}); threads = sorted({r[3] for r in after})
peak = max(r[1] for r in rows) / 1024
top = max(after, key=lambda r: r[1]) if after else None
# Each minute's smallest sample: what stays resident, without the buffers in flight at the
# moment a sample is taken (a clip's fragment, packets queued for the disk). Growth on these:
# the largest later minute's minimum against the second minute's (the first after the first).
minima = {}
for r in rows:
    minima[r[0] // 60] = min(minima.get(r[0] // 60, r[1]), r[1])
full = sorted(m for m in minima if m >= 1 and any(r[0] // 60 == m for r in rows if r[0] % 60 >= 50))
min_growth = (max(minima[m] for m in full) - minima[full[0]]) / 1024 if len(full) > 1 else float("nan")
print("each minute's smallest sample (MB): " + " ".join("%d:%.1f" % (m, minima[m] / 1024) for m in sorted(minima)))
print("RSS by minute (MB): " + " ".join("%d:%.1f" % (r[0] // 60, r[1] / 1024) for r in rows if r[0] % 60 < 10)
      + ("; the most after the first minute %.1f MB at %d s" % (top[1] / 1024, top[0]) if top else ""))
deleted = [d["firstFrameIndex"] for d in s.get("loopDeletions", [])]
clips = s["clips"]
kept = [c for c in clips if os.path.exists(c["path"])]
firsts = sorted(c["firstFrameIndex"] for c in clips)
oldest = firsts[:len(deleted)]
def frames(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries",
                          "stream=nb_read_packets", "-of", "csv=p=0", path], capture_output=True, text=True).stdout.strip()
    return int(out or 0)
counted = [frames(c["path"]) for c in sorted(kept, key=lambda c: c["firstFrameIndex"])]
rate = ((s.get("adjusted") or {}).get("chosen") or {}).get("framesPerSecond") or 30
per = int(round(seg * rate))
exact = all(n == per for n in counted[:-1])
ff_peak = int(open(work + "/ff.rss").read().split()[-1]) / 1024 if os.path.exists(work + "/ff.rss") else float("nan")
print("frames captured %d, dropped %d (%s)" % (s["framesCaptured"], s["framesDropped"], s["dropReasons"]))
print("segments: %d made, %d deleted (first frames %s), %d kept; the deleted are the oldest: %s"
      % (len(clips), len(deleted), deleted[:12], len(kept), sorted(deleted) == oldest))
print("kept segments' frames (ffprobe): %s; every finished one %d frames: %s" % (counted, per, exact))
print("RSS: peak %.1f MB; growth after the first minute %.2f MB (target <= 5: the largest sample against the one at 60 s); "
      "on each minute's smallest sample %.2f MB; open descriptors after it %s; threads %s"
      % (peak, rss_growth, min_growth, fds, threads))
split = [tuple(map(int, l.split("\t"))) for l in open(work + "/rss-split.tsv") if l.count("\t") == 2 and l.split("\t")[1]]
if split:
    first = next((x for x in split if x[0] >= 60), split[0]); last = split[-1]
    print("RSS after the first minute -> end: anonymous %.1f -> %.1f MB, file-backed %.1f -> %.1f MB"
          % (first[1] / 1024, last[1] / 1024, first[2] / 1024, last[2] / 1024))
what = [l.rstrip("\n").split("\t") for l in open(work + "/what.tsv") if l.count("\t") == 3]
late = [w for w in what if int(w[0]) >= 60]
if late:
    for col, label in ((2, "threads"), (3, "descriptors")):
        seen = sorted({w[col] for w in late})
        if len(seen) > 1:
            print("%s that came and went after the first minute:" % label)
            for v in seen: print("   %s" % v)
    disk = [int(w[1]) for w in late]
    print("disk (output directory + pool), KiB: at 60 s %d, at the end %d, most %d" % (disk[0], disk[-1], max(disk)))
reclaimed = [d.get("reclaimedBytes") for d in s.get("loopDeletions", [])]
print("deleted segments taken back as pool slots: %d of %d (%.1f MiB)" % (sum(1 for r in reclaimed if r), len(reclaimed),
      sum(r or 0 for r in reclaimed) / 2**20))
print("recorded: %s" % ((s.get("adjusted") or {}).get("chosen", {}).get("description") or "as asked"))
print("ffmpeg (testsrc2, the codec Reel recorded, segment muxer, -re, %d s): peak RSS %.1f MB; reel's peak %.1f MB" % (peer, ff_peak, peak))
heads = [
    R.headline("soak %d s: frames dropped" % dur, s["framesDropped"], unit="frames", target=("==", 0, "reel")),
    R.headline("soak: RSS growth after the first minute", rss_growth, unit="MB", target=("<=", 5, "reel")),
    R.headline("soak: RSS growth on each minute's smallest sample (the largest later minute against minute 1)", min_growth, unit="MB",
               target=("<=", 5, "reel"), key=False),
    R.headline("soak: peak RSS (peer: ffmpeg on the same work for %d s)" % peer, peak, unit="MB", peer=ff_peak, peer_name="ffmpeg",
               ratio=[], key=False),
    R.headline("soak: open descriptors after the first minute (distinct counts)", len(fds), unit="values", target=("==", 1, "reel"), key=False),
    R.headline("soak: threads after the first minute (distinct counts)", len(threads), unit="values", target=("==", 1, "reel"), key=False),
    R.headline("soak: deleted segments are the oldest, kept ones exact", 1 if sorted(deleted) == oldest and exact else 0, unit="",
               target=("==", 1, "reel"), key=False),
]
R.write("soak", "Soak: %d s of the default recording, %g s segments, --keep %s" % (dur, seg, keep), headlines=heads,
        rows=[dict(t=r[0], rssKiB=r[1], fds=r[2], threads=r[3]) for r in rows], columns=["t", "rssKiB", "fds", "threads"],
        load_before=os.environ.get("LOAD_BEFORE"), parameters={"duration": dur, "segment": seg, "keep": keep, "peerSeconds": peer, "scene": "realistic"})
PY
