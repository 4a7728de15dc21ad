#!/usr/bin/env bash
# The standard write-jitter protocol: 150 MB/s in 1 MiB writes, DURATION s per arm (default
# 60), every contention scenario (none, bulk, fsync, metadata, memory, all), arms pool,
# buffered, buffered-fdatasync (ARMS to change), plus the device floor; then, where fio is
# installed, the same paced load through fio (rate=, lat_percentiles) alone and beside the
# bulk writer, for comparison. Report (JSON + SVG) in REPORT (default /tmp/reel-jitter-report).
set -euo pipefail
scripts/setup
[ "${INSTALL_FIO:-1}" = 1 ] && ! command -v fio >/dev/null && { scripts/setup fio || true; }
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
dur=${DURATION:-60}
arms=${ARMS:-pool,buffered,buffered-fdatasync}
dir=${DIR:-/var/tmp/reel-jitter}
report=${REPORT:-/tmp/reel-jitter-report}
mkdir -p "$dir"
"$reel" jitter --dir "$dir" --rate 150M --block 1M --duration "$dur" --ring 128M \
    --contention none,bulk,fsync,metadata,memory,all --arms "$arms" --report "$report"
echo "report: $report/jitter.json, $report/jitter.svg"

if command -v fio >/dev/null; then
    echo
    echo "fio, same load (150 MB/s, 1 MiB writes, ${dur} s); clat = completion latency of each write (fio times from submission, not from the schedule)"
    printf "%-34s %10s %10s %10s %10s\n" job "p50 ms" "p99 ms" "p99.9 ms" "max ms"
    for load in none bulk; do
        for direct in 0 1; do
            lp=""
            if [ $load = bulk ]; then "$reel" _load bulk --dir "$dir" --seconds $((dur + 5)) & lp=$!; sleep 0.5; fi
            out=$(fio --name=reel --directory="$dir" --rw=write --bs=1M --size=16G --rate=150m --runtime="$dur" --time_based \
                      --ioengine=psync --direct=$direct --fallocate=none --lat_percentiles=1 --percentile_list=50:99:99.9 \
                      --output-format=json 2>/dev/null || true)
            [ -n "$lp" ] && { kill $lp 2>/dev/null || true; wait $lp 2>/dev/null || true; }
            rm -f "$dir"/reel.0.0
            FIO_JSON="$out" python3 - "$load" "$direct" <<'PY'
import json, os, sys
load, direct = sys.argv[1], sys.argv[2]
try:
    j = json.loads(os.environ["FIO_JSON"])["jobs"][0]["write"]
    p = j["clat_ns"]["percentile"]
    print("%-34s %10.2f %10.2f %10.2f %10.2f" % ("fio %s under %s" % ("direct" if direct == "1" else "buffered", load),
          p["50.000000"] / 1e6, p["99.000000"] / 1e6, p["99.900000"] / 1e6, j["clat_ns"]["max"] / 1e6))
except Exception as e:
    print("fio %s under %s: no result (%r)" % (direct, load, e))
PY
        done
    done
else
    echo "fio not installed: the fio comparison is skipped"
fi
