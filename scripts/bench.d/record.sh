#!/usr/bin/env bash
# reel record --no-realtime vs `ffmpeg` encoding the same frames with the same encoder and
# settings, vs the bare encoder loop (ffmpeg into the null muxer: no muxing, no file).
# The frames are Reel's own test pattern, exported once to raw yuv420p so every contestant
# encodes identical pictures. Each run is repeated RUNS times; the median counts.
set -euo pipefail
scripts/setup
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
frames=${FRAMES:-300}
runs=${RUNS:-3}
work=$(mktemp -d /tmp/reel-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "preparing $frames frames of the synthetic pattern at 1920x1080 (raw yuv420p, in $work)"
"$reel" record --no-realtime --frames "$frames" --codec ffv1 --container mkv --out "$work/src" --name src >/dev/null
ffmpeg -v error -i "$work/src/src-0001-16x9.mkv" -f rawvideo -pix_fmt yuv420p "$work/frames.yuv"
cat "$work/frames.yuv" >/dev/null   # warm the page cache

now() { date +%s.%N; }
median() { python3 -c 'import sys; v=sorted(float(x) for x in sys.argv[1:]); print(v[len(v)//2])' "$@"; }

time_cmd() {  # prints the median wall time of "$@" over $runs runs
    local t=() s e
    for _ in $(seq "$runs"); do
        rm -rf "$work/out"; mkdir -p "$work/out"
        s=$(now); "$@" >/dev/null 2>&1; e=$(now)
        t+=("$(python3 -c "print($e-$s)")")
    done
    median "${t[@]}"
}

raw_in=(-f rawvideo -pix_fmt yuv420p -s 1920x1080 -r 30 -i "$work/frames.yuv")
printf "\n%-10s %-34s %10s %10s %8s\n" codec contestant seconds fps ratio
for codec in prores h264; do
    case $codec in
        prores) reel_codec=prores:hq; container=mov
                enc=(-c:v prores -profile:v 3 -vendor apl0 -pix_fmt yuv422p10le -threads 0) ;;
        h264)   reel_codec=h264; container=mp4
                enc=(-c:v libx264 -preset veryfast -g 30 -pix_fmt yuv420p -threads 0) ;;
    esac
    mov=(-movflags delay_moov+default_base_moof+use_metadata_tags)
    [ $codec = prores ] && mov+=(-frag_duration 1000000) || mov[1]+="+frag_keyframe"
    t_reel=$(time_cmd "$reel" record --no-realtime --frames "$frames" --codec $reel_codec --container $container --out "$work/out" --name b)
    t_ff=$(time_cmd ffmpeg -v error -y "${raw_in[@]}" "${enc[@]}" "${mov[@]}" "$work/out/ff.$container")
    t_bare=$(time_cmd ffmpeg -v error -y "${raw_in[@]}" "${enc[@]}" -f null -)
    for row in "reel record --no-realtime:$t_reel" "ffmpeg CLI (same encoder, file):$t_ff" "bare encoder loop (ffmpeg -f null):$t_bare"; do
        name=${row%:*}; t=${row##*:}
        python3 -c "
t=$t; f=$frames; ff=$t_ff
print('%-10s %-34s %10.2f %10.1f %8s' % ('$codec', '$name', t, f/t, '%.2fx' % (ff/t)))"
    done
    python3 -c "print('%-10s reel / ffmpeg CLI throughput: %.2fx   reel / bare encoder: %.2fx' % ('$codec', $t_ff/$t_reel, $t_bare/$t_reel))"
done
echo
echo "ratio column: the ffmpeg CLI's time divided by the contestant's (above 1: faster than ffmpeg)."
echo "Note: reel also draws every frame of its sensor (1920x1920) and crops it; ffmpeg reads ready frames."
