#!/usr/bin/env bash
# reel record --no-realtime against the ffmpeg CLI doing the same work, and the bare encoder.
#
# Same frames: Reel's synthetic sensor records FRAMES frames losslessly (FFV1), which are
#   decoded once to raw yuv420p 1920x1080 in /dev/shm; ffmpeg reads that file (a memcpy per
#   frame from RAM, which costs about what Reel's per-frame drawing of the barcode, digits and
#   LEDs costs: both are under 1 % of a run in `perf`). Every ffmpeg output is checked to carry
#   the sensor's barcodes 0..FRAMES-1 (`reel probe --frames`).
# Same conversion: ProRes is fed yuv422p10; both sides convert from yuv420p with libswscale's
#   nearest-neighbour scaler (Reel: SWS_POINT; ffmpeg: -sws_flags neighbor). H.264, HEVC and
#   FFV1 are fed yuv420p: no conversion on either side.
# Same encoder settings and muxer options as Reel's (VideoEncoder.swift, Muxer.swift).
# Same durability, two ways:
#   tmpfs    both write a plain file in /dev/shm, where fdatasync is a no-op: no sync at all.
#   durable  on disk (/var/tmp): reel --plain (pwrite, one fdatasync at the end) and reel's
#            storage pool (preallocated slot, ring + writer thread, sync, rename, and the
#            pool's replenishing of the used slot, which the recorder waits for before it
#            exits) against ffmpeg followed by `sync --data` of its file.
# The bare encoder ceiling: `ffmpeg -f null` on the same input with the same conversion:
#   reading, converting and encoding, no muxer, no file. It is what any recorder built on
#   libavcodec can reach on this machine with these frames.
# The encoder alone (`encoder-only`, ProRes): `ffmpeg -f null` reading the same frames already
#   converted to the encoder's pixel format (yuv422p10le, converted once beforehand with the
#   same scaler into a raw file: in /dev/shm when memory allows, else on disk, where the page
#   cache holds it): reading and encoding only. H.264, HEVC and FFV1 take yuv420p, the source's
#   format: their bare encoder already is the encoder alone.
# Runs alternate (one of each contestant per round, the order rotated every round); each row
# shows the median and the range (min-max) of wall time, CPU time (user+sys) and peak RSS
# (/usr/bin/time, %M = the `Maximum resident set size` of -v), and the ratio to ffmpeg
# computed within each round (median and range over the rounds).
# SCENE: what the synthetic sensor draws, `realistic` (the default: as hard to encode as a
#   camera's picture) or `pattern` (the flat test pattern); every row is labelled with it.
#   FRAMES=600 RUNS=5 CODECS="prores h264 hevc ffv1" MODES="tmpfs durable" SCENE=realistic scripts/bench record
# The raw results (one line a run) are kept in RESULTS (default /tmp/reel-bench-record.txt).
# With RESULTS_DIR set, also RESULTS_DIR/record.json and record.svg (scripts/bench.d/results.py).
set -euo pipefail
scripts/setup
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
frames=${FRAMES:-600}
scene=${SCENE:-realistic}
runs=${RUNS:-5}
codecs=${CODECS:-prores h264 hevc ffv1}
modes=${MODES:-tmpfs durable}
[ "$frames" -ge 600 ] || echo "note: FRAMES=$frames is below the 600 this benchmark is specified with" >&2
shm=$(mktemp -d /dev/shm/reel-bench-XXXXXX)
disk=$(mktemp -d /var/tmp/reel-bench-XXXXXX)
trap 'rm -rf "$shm" "$disk"' EXIT

load_before=$(cat /proc/loadavg)
echo "load before: $load_before   cpus: $(nproc)   $(ffmpeg -version | head -1 | cut -d' ' -f1-3)"
echo "preparing $frames frames of the synthetic sensor at 1920x1080 (raw yuv420p in $shm)"
# --pressure-handler off: on a loaded machine the handler would start the sensor at 15 fps, and
# the decoded raw file would hold every frame twice (ffmpeg fills the 30 fps grid).
"$reel" record --no-realtime --pressure-handler off --scene "$scene" --frames "$frames" --codec ffv1 --container mkv --plain --out "$shm/src" --name src >/dev/null
ffmpeg -nostdin -v error -i "$shm/src/src-0001-16x9.mkv" -fps_mode passthrough -f rawvideo -pix_fmt yuv420p "$shm/frames.yuv"
rm -rf "$shm/src"
got=$(( $(stat -c %s "$shm/frames.yuv") / (1920 * 1080 * 3 / 2) ))
[ "$got" = "$frames" ] || { echo "scripts/bench record: the prepared input holds $got frames, not $frames" >&2; exit 1; }
if [[ " $modes " == *" durable "* ]]; then
    "$reel" pool create "$disk/pool" --capacity 2G --slot 1G --write-mode buffered >/dev/null
fi

raw_in=(-nostdin -v error -y -f rawvideo -pix_fmt yuv420p -s 1920x1080 -r 30 -i "$shm/frames.yuv" -sws_flags neighbor)
results=$disk/results.txt
: >"$results"

# run NAME ROUND CMD...: one timed run, its outputs removed afterwards; appends a result line.
run() {
    local name=$1 round=$2; shift 2
    rm -rf "$shm/out" "$disk/out"; mkdir -p "$shm/out" "$disk/out"
    if ! /usr/bin/time -f "%e %U %S %M" -o "$disk/time" "$@" >"$disk/stdout" 2>"$disk/stderr"; then
        echo "  $name failed: $(tail -2 "$disk/stderr")" >&2; return 1
    fi
    if [ "$round" = 1 ] && [ -n "${check:-}" ]; then   # the first output of each contestant: the sensor's frames?
        local outs; outs=$(shopt -s nullglob; echo "$shm"/out/*.* "$disk"/out/*.*)
        if [ -n "$outs" ]; then
            local f=${outs%% *}
            "$reel" probe --frames --json "$f" | python3 -c "
import json, sys
d = json.load(sys.stdin); n = $frames
ok = d['frameIndices'] == list(range(n))
print('  check %-34s %s' % ('$name', 'barcodes 0..%d in order' % (n - 1) if ok else 'WRONG FRAMES: %r...' % d['frameIndices'][:10]))
sys.exit(0 if ok else 1)"
        fi
    fi
    read -r wall user sys rss <"$disk/time"
    # Reel's summary (--json): the CPU its emulated sensor spent drawing the frames.
    local draw=0
    case $name in reel-*) draw=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1])).get('sensorDrawingCPUSeconds') or 0)" "$disk/stdout" 2>/dev/null || echo 0) ;; esac
    echo "$codec $name $round $wall $user $sys $rss $draw" >>"$results"
}

for codec in $codecs; do
    case $codec in
        prores) rc=prores:hq; ext=mov
                enc=(-c:v prores -profile:v 3 -vendor apl0 -pix_fmt yuv422p10le -threads 0 -g 30)
                mux=(-movflags delay_moov+default_base_moof+use_metadata_tags -frag_duration 1000000) ;;
        h264)   rc=h264; ext=mp4
                enc=(-c:v libx264 -preset veryfast -g 30 -pix_fmt yuv420p -threads 0)
                mux=(-movflags delay_moov+default_base_moof+use_metadata_tags+frag_keyframe) ;;
        hevc)   rc=hevc; ext=mp4
                enc=(-c:v libx265 -preset ultrafast -x265-params log-level=error -g 30 -tag:v hvc1 -pix_fmt yuv420p -threads 0)
                mux=(-movflags delay_moov+default_base_moof+use_metadata_tags+frag_keyframe) ;;
        ffv1)   rc=ffv1; ext=mkv
                enc=(-c:v ffv1 -level 3 -slices 4 -slicecrc 1 -g 30 -pix_fmt yuv420p -threads 0)
                mux=(-cluster_time_limit 1000) ;;
        *) echo "unknown codec $codec" >&2; exit 64 ;;
    esac
    names=(); cmds=()
    add() { names+=("$1"); shift; cmds+=("$(printf '%q ' "$@")"); }
    rec=("$reel" record --no-realtime --pressure-handler off --scene "$scene" --frames "$frames" --codec "$rc" --container "$ext" --name b --json)
    if [[ " $modes " == *" tmpfs "* ]]; then
        add "reel-tmpfs" "${rec[@]}" --plain --out "$shm/out"
        add "ffmpeg-tmpfs" ffmpeg "${raw_in[@]}" "${enc[@]}" "${mux[@]}" "$shm/out/ff.$ext"
    fi
    add "bare-encoder" ffmpeg "${raw_in[@]}" "${enc[@]}" -f null -
    if [ "$codec" = prores ]; then   # the encoder alone: frames already in its pixel format
        pre=$shm/frames-yuv422p10le.yuv
        need=$((frames * 1920 * 1080 * 4 / 1024))   # KiB
        avail=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
        [ "$avail" -gt $((need * 2)) ] || pre=$disk/frames-yuv422p10le.yuv
        if [ ! -f "$pre" ]; then
            ffmpeg "${raw_in[@]}" -pix_fmt yuv422p10le -f rawvideo "$pre"
            echo "encoder-only input: $((need / 1024)) MiB of yuv422p10le in $(dirname "$pre")"
        fi
        add "encoder-only" ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt yuv422p10le -s 1920x1080 -r 30 -i "$pre" \
            "${enc[@]}" -f null -
    fi
    if [[ " $modes " == *" durable "* ]]; then
        add "reel-plain-disk" "${rec[@]}" --plain --out "$disk/out"
        add "reel-pool-disk" "${rec[@]}" --pool "$disk/pool" --out "$disk/out"
        add "ffmpeg-disk+fsync" bash -c "$(printf '%q ' ffmpeg "${raw_in[@]}" "${enc[@]}" "${mux[@]}" "$disk/out/ff.$ext") && sync --data $(printf '%q' "$disk/out/ff.$ext")"
    fi
    n=${#names[@]}
    for round in $(seq 1 "$runs"); do
        for k in $(seq 0 $((n - 1))); do
            i=$(( (k + round - 1) % n ))
            check=1; [ "${names[$i]}" = bare-encoder ] || [ "${names[$i]}" = encoder-only ] && check=
            eval "run ${names[$i]} $round ${cmds[$i]}"
        done
    done
    rm -f "$shm"/frames-yuv422p10le.yuv "$disk"/frames-yuv422p10le.yuv
done

echo
load_after=$(cat /proc/loadavg)
echo "load after: $load_after"
cp "$results" "${RESULTS:-/tmp/reel-bench-record.txt}"
SCENE="$scene" LOAD_BEFORE="$load_before" LOAD_AFTER="$load_after" python3 - "$results" "$frames" "$runs" <<'PY'
import os, sys, statistics as st
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
from collections import defaultdict
rows = defaultdict(dict)
for line in open(sys.argv[1]):
    codec, name, rnd, wall, user, sysc, rss, draw = line.split()
    rows[(codec, name)][int(rnd)] = (float(wall), float(user) + float(sysc), int(rss) / 1024, float(draw))
frames = int(sys.argv[2])
def rng(v, fmt): return (fmt % st.median(v)) + " (" + (fmt % min(v)) + "-" + (fmt % max(v)) + ")"
peer = {"reel-tmpfs": "ffmpeg-tmpfs", "ffmpeg-tmpfs": "ffmpeg-tmpfs", "bare-encoder": "ffmpeg-tmpfs", "encoder-only": "ffmpeg-tmpfs",
        "reel-plain-disk": "ffmpeg-disk+fsync", "reel-pool-disk": "ffmpeg-disk+fsync", "ffmpeg-disk+fsync": "ffmpeg-disk+fsync"}
print("%-7s %-18s %22s %7s %22s %16s %20s %20s %20s %20s" % ("codec", "contestant", "wall s (range)", "fps", "cpu s (range)", "peak RSS MiB", "ffmpeg/this wall", "ffmpeg/this cpu", "bare/this cpu", "enc-only/this cpu"))
table, bars = [], []
for codec in dict.fromkeys(c for c, _ in rows):
    for name in ["reel-tmpfs", "ffmpeg-tmpfs", "bare-encoder", "encoder-only", "reel-plain-disk", "reel-pool-disk", "ffmpeg-disk+fsync"]:
        r = rows.get((codec, name))
        if not r: continue
        walls = [v[0] for v in r.values()]; cpus = [v[1] for v in r.values()]; rss = [v[2] for v in r.values()]
        p = rows.get((codec, peer[name] if (codec, peer[name]) in rows else "ffmpeg-tmpfs"), {})
        ratios = [p[k][0] / r[k][0] for k in r if k in p]
        cratios = [p[k][1] / r[k][1] for k in r if k in p]
        b = rows.get((codec, "bare-encoder"), {})
        bare = [b[k][1] / r[k][1] for k in r if k in b]
        e = rows.get((codec, "encoder-only")) or b   # without a conversion the bare encoder is the encoder alone
        eonly = [e[k][1] / r[k][1] for k in r if k in e]
        print("%-7s %-18s %22s %7.1f %22s %16s %20s %20s %20s %20s" % (codec, name, rng(walls, "%.2f"), frames / st.median(walls),
              rng(cpus, "%.2f"), rng(rss, "%.0f"), rng(ratios, "%.2fx") if ratios else "-",
              rng(cratios, "%.2fx") if cratios else "-", rng(bare, "%.2fx") if bare else "-", rng(eonly, "%.2fx") if eonly else "-"))
        stat = lambda v: dict(median=st.median(v), min=min(v), max=max(v)) if v else None
        table.append(dict(codec=codec, contestant=name, rounds=len(r), wallS=stat(walls), fps=frames / st.median(walls),
                          cpuS=stat(cpus), peakRssMiB=stat(rss), ffmpegOverThisWall=stat(ratios),
                          ffmpegOverThisCpu=stat(cratios), bareOverThisCpu=stat(bare), encoderOnlyOverThisCpu=stat(eonly)))
        if cratios and name != peer[name]:
            bars.append(dict(label="%s %s" % (codec, name), value=st.median(cratios), low=min(cratios), high=max(cratios), series=name))
# Headlines: per codec, Reel against the ffmpeg CLI (CPU and wall, paired per round), against
# the bare encoder and the encoder alone (CPU: "within 5 % of the bare encoder" is ratio >= 0.95),
# and Reel's peak RSS against ffmpeg's + Reel's rings.
CODEC_NAME = {"prores": "ProRes HQ", "h264": "H.264", "hevc": "HEVC", "ffv1": "FFV1"}
RINGS = {"reel-tmpfs": 192, "reel-plain-disk": 192, "reel-pool-disk": 192 + 64}   # MiB: the sensor's frame ring (+ the pool's)
heads = []
print()
print("verdicts (targets of issue 15: Reel >= 1.0x the ffmpeg CLI on the same work; within 5 % of the bare encoder;")
print("  peak RSS <= ffmpeg's + Reel's rings):")
def paired(a, b, i):   # b's figure i over a's, per round both ran
    return [b[k][i] / a[k][i] for k in a if k in b]
for codec in dict.fromkeys(c for c, _ in rows):
    cn = CODEC_NAME.get(codec, codec)
    for me, them, where in [("reel-tmpfs", "ffmpeg-tmpfs", "/dev/shm"), ("reel-pool-disk", "ffmpeg-disk+fsync", "disk, pool"),
                            ("reel-plain-disk", "ffmpeg-disk+fsync", "disk, plain")]:
        r, p = rows.get((codec, me)), rows.get((codec, them))
        if not r or not p: continue
        for i, what in [(1, "CPU"), (0, "wall")]:
            heads.append(R.headline("%s %s time, %s" % (cn, what, where), [v[i] for v in r.values()], unit="s", reel_name=me,
                                    peer=[v[i] for v in p.values()], peer_name=them, ratio=paired(r, p, i), target=(">=", 1.0),
                                    key=what == "CPU" and me != "reel-plain-disk"))
        if me == "reel-tmpfs":
            # The same without the emulated sensor's drawing (the summary's sensorDrawingCPUSeconds):
            # a camera's frames arrive by DMA; ffmpeg's reading of its input file stays in its figure.
            bare = {k: (v[0], v[1] - v[3]) for k, v in r.items()}
            heads.append(R.headline("%s CPU time without the emulated sensor's drawing, %s" % (cn, where), [v[1] for v in bare.values()],
                                    unit="s", reel_name=me + " - drawing", peer=[v[1] for v in p.values()], peer_name=them,
                                    ratio=paired(bare, p, 1), target=(">=", 1.0), key=False))
            print("  %-9s the emulated sensor's drawing: %s s of Reel's CPU" % (cn, rng([v[3] for v in r.values()], "%.2f")))
        ring = RINGS[me]
        heads.append(R.headline("%s peak RSS, %s (peer: ffmpeg's + Reel's %d MiB of rings)" % (cn, where, ring),
                                [v[2] for v in r.values()], unit="MiB", reel_name=me,
                                peer=[v[2] + ring for v in p.values()], peer_name=them + " + rings", target=(">=", 1.0), key=me == "reel-tmpfs"))
    r = rows.get((codec, "reel-tmpfs"))
    for ceiling, what in [("bare-encoder", "bare encoder (ffmpeg -f null)"), ("encoder-only", "encoder alone (frames in its pixel format)")]:
        c = rows.get((codec, ceiling))
        if not r or not c: continue
        for i, kind in [(1, "CPU"), (0, "wall")]:
            h = R.headline("%s %s time against the %s, /dev/shm" % (cn, kind, what), [v[i] for v in r.values()], unit="s", reel_name="reel-tmpfs",
                           peer=[v[i] for v in c.values()], peer_name=ceiling, ratio=paired(r, c, i), target=(">=", 0.95),
                           key=kind == "CPU" and (ceiling == "encoder-only" or (codec, "encoder-only") not in rows))
            heads.append(h)
            print("  %-9s Reel %-4s %.2f s, %s %.2f s: %s/Reel %.2fx (%.2f-%.2fx), within 5 %% (>= 0.95x): %s" % (
                cn, kind, h["reel"]["median"], ceiling, h["peer"]["median"], ceiling, h["ratio"]["median"], h["ratio"]["min"], h["ratio"]["max"],
                "met" if h["met"] else "NOT met"))
    for h in heads:
        if h["row"].startswith(cn + " ") and " against the " not in h["row"]:
            print("  %-9s %-40s Reel %.2f %s, %s %.2f: %s %.2fx (%.2f-%.2fx), >= 1.0x: %s" % (
                cn, h["row"][len(cn) + 1:].split(" (")[0], h["reel"]["median"], h["unit"], h["peer"]["name"], h["peer"]["median"],
                h["ratio"]["of"], h["ratio"]["median"], h["ratio"]["min"], h["ratio"]["max"], "met" if h["met"] else "NOT met"))
R.write("record", title="reel record vs the ffmpeg CLI on the same work: ffmpeg's CPU time / this one's (%d frames, 1080p, %s scene)" % (frames, os.environ["SCENE"]),
        columns=["codec", "contestant", "rounds", "wallS", "fps", "cpuS", "peakRssMiB", "ffmpegOverThisWall", "ffmpegOverThisCpu",
                 "bareOverThisCpu", "encoderOnlyOverThisCpu"],
        rows=table, plot=dict(unit="ffmpeg CPU / contestant CPU (above 1: cheaper than the ffmpeg CLI); median and range of paired rounds",
                              reference=1.0, bars=bars),
        parameters=dict(frames=frames, runs=int(sys.argv[3]), codecs=list(dict.fromkeys(c for c, _ in rows)), scene=os.environ["SCENE"]),
        load_before=os.environ["LOAD_BEFORE"], load_after=os.environ["LOAD_AFTER"], headlines=heads)
print()
print("ffmpeg/this wall (cpu): the ffmpeg CLI's wall (user+sys CPU) time over this contestant's, paired within each round")
print("  (above 1: faster / cheaper than ffmpeg); tmpfs rows against ffmpeg-tmpfs, disk rows against ffmpeg-disk+fsync.")
print("bare/this cpu: the bare encoder's CPU time over this contestant's (1 = at the ceiling); enc-only/this: the same against")
print("  the encoder fed frames already in its pixel format (ProRes: encoder-only; other codecs: the bare encoder). On a machine whose cores are")
print("  shared with other work, CPU time is the steadier figure: every contestant keeps both cores busy, so on an idle")
print("  machine wall time follows CPU time; wall ratios measured under load (see the load lines) need an idle re-run.")
print("peak RSS: Reel's includes the sensor's frame ring (Recording.sensorBudget, 192 MiB at 1920) and, in a pool, the")
print("  storage ring (64 MiB); the target is ffmpeg's peak + those.")
print("reel-pool-disk includes the pool's replenishing of the slot it used (the recorder waits for it before exiting).")
PY
