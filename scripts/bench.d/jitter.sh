#!/usr/bin/env bash
# The standard write-jitter protocol: 150 MB/s in 1 MiB writes, ROUNDS rounds (default 5) of
# DURATION s per arm (default 20), every contention scenario (none, bulk, fsync, metadata,
# memory, all), arms pool and buffered interleaved (ARMS to change: buffered-fdatasync, …),
# plus the device floor; the verdict per scenario is the statistic fixed in advance (the
# pool's median p99.9 over the rounds ≤ buffered's, its worst ≤ buffered's worst, 0 ring
# drops in every round: docs/storage.md, Measuring write jitter); then, where fio is
# installed, the same paced load through fio, at the same rate in the same units, one fio job
# per Reel arm doing what that arm does (below), alone and beside the bulk writer.
# Report (JSON + SVG) in REPORT (default /tmp/reel-jitter-report; RESULTS_DIR/jitter-reel when
# RESULTS_DIR is set, which also gets jitter.json and jitter.svg: Reel's arms and fio's jobs).
#   ROUNDS=5 DURATION=20 ARMS=... CONTENTION=none,bulk,... FIO_ONLY=1 (skip Reel's arms) scripts/bench jitter
set -euo pipefail
scripts/setup
[ "${INSTALL_FIO:-1}" = 1 ] && ! command -v fio >/dev/null && { scripts/setup fio || true; }
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
dur=${DURATION:-20}
rounds=${ROUNDS:-5}
arms=${ARMS:-pool,buffered}
dir=${DIR:-/var/tmp/reel-jitter}
report=${REPORT:-/tmp/reel-jitter-report}
[ -n "${RESULTS_DIR:-}" ] && report=${REPORT:-$RESULTS_DIR/jitter-reel}
mkdir -p "$dir"
load_before=$(cat /proc/loadavg)
echo "load: $load_before"
fio_rows=$(mktemp /tmp/reel-jitter-fio-XXXXXX)
trap 'rm -f "$fio_rows"' EXIT
rm -f "$report/jitter.json"   # never an earlier run's report (FIO_ONLY=1 has none)
if [ "${FIO_ONLY:-0}" != 1 ]; then
    "$reel" jitter --dir "$dir" --rate 150M --block 1M --duration "$dur" --ring 128M --rounds "$rounds" \
        --contention "${CONTENTION:-none,bulk,fsync,metadata,memory,all}" --arms "$arms" --report "$report"
    echo "report: $report/jitter.json, $report/jitter.svg"
fi

if command -v fio >/dev/null; then
    # The same rate in the same units: Reel's 150M is 150 000 000 B/s; fio's `150m` would be
    # 150 MiB/s (fio suffixes are base 2), so fio gets the byte count. Each fio job matches one
    # of Reel's arms:
    #   fio-buffered            fresh file, no syncs             vs Reel `buffered`
    #   fio-buffered-fdatasync  fresh file, fdatasync every 1 s  vs Reel `buffered-fdatasync`
    #   fio-pool-like           a file written in full first (overwrite=1: overwrites of written
    #                           extents, as a pool slot), sync_file_range(WRITE) after every
    #                           write and fdatasync every 1 s    vs Reel `pool`
    # (1 s = writes per second at this rate and block size.) With lat_percentiles fio reports
    # total latency (submission to completion) percentiles.
    rate=150000000; bs=1048576
    per_sec=$(( (rate + bs - 1) / bs ))
    size=$(( (rate * dur / bs + 8) * bs ))
    echo
    echo "fio, same load (150 000 000 B/s, 1 MiB writes, ${dur} s); latency of each write from its submission to its completion (fio does not time from the schedule)"
    printf "%-44s %10s %10s %10s %10s %10s\n" job "MB/s" "p50 ms" "p99 ms" "p99.9 ms" "max ms"
    for load in none bulk; do
        for job in buffered buffered-fdatasync pool-like; do
            case $job in
                buffered) extra=(--fallocate=none) ;;
                buffered-fdatasync) extra=(--fallocate=none --fdatasync=$per_sec) ;;
                pool-like) extra=(--overwrite=1 --sync_file_range=write:1 --fdatasync=$per_sec) ;;
            esac
            rm -f "$dir"/reel.0.0
            if [ $job = pool-like ]; then   # lay the file out before the clock starts, as Reel prepares its slot
                fio --name=reel --directory="$dir" --rw=write --bs=1M --size=$size --overwrite=1 --ioengine=psync \
                    --end_fsync=1 --output=/dev/null >/dev/null 2>&1 || true
            fi
            lp=""
            if [ $load = bulk ]; then "$reel" _load bulk --dir "$dir" --seconds $((dur + 5)) & lp=$!; sleep 0.5; fi
            out=$(fio --name=reel --directory="$dir" --rw=write --bs=$bs --size=$size --rate=$rate --runtime="$dur" --time_based \
                      --ioengine=psync --direct=0 "${extra[@]}" --lat_percentiles=1 --percentile_list=50:99:99.9 \
                      --output-format=json 2>/dev/null || true)
            [ -n "$lp" ] && { kill $lp 2>/dev/null || true; wait $lp 2>/dev/null || true; }
            rm -f "$dir"/reel.0.0
            FIO_JSON="$out" python3 - "$load" "fio-$job" "$fio_rows" <<'PY'
import json, os, sys
load, job = sys.argv[1], sys.argv[2]
try:
    j = json.loads(os.environ["FIO_JSON"])["jobs"][0]["write"]
    p = j["lat_ns"]["percentile"] if "percentile" in j.get("lat_ns", {}) else j["clat_ns"]["percentile"]
    print("%-44s %10.1f %10.2f %10.2f %10.2f %10.2f" % ("%s under %s" % (job, load), j["bw_bytes"] / 1e6,
          p["50.000000"] / 1e6, p["99.000000"] / 1e6, p["99.900000"] / 1e6, j.get("lat_ns", j["clat_ns"])["max"] / 1e6))
    open(sys.argv[3], "a").write(json.dumps(dict(source="fio", arm=job, contention=load, throughputMBps=j["bw_bytes"] / 1e6,
        p50Ms=p["50.000000"] / 1e6, p99Ms=p["99.000000"] / 1e6, p999Ms=p["99.900000"] / 1e6,
        maxMs=j.get("lat_ns", j["clat_ns"])["max"] / 1e6)) + "\n")
except Exception as e:
    print("%s under %s: no result (%r)" % (job, load, e))
PY
        done
    done
    echo "compare: fio-buffered with Reel's buffered arm, fio-buffered-fdatasync with buffered-fdatasync, fio-pool-like with pool (same scenario)."
else
    echo "fio not installed: the fio comparison is skipped"
fi
ROUNDS_RUN="$rounds" LOAD_BEFORE="$load_before" python3 - "$report/jitter.json" "$fio_rows" "$dur" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
rows = []
try:
    rep = json.load(open(sys.argv[1]))
    for a in ([rep["floor"]] if rep.get("floor") else []) + rep["arms"]:
        l = a["latencyMs"]
        rows.append(dict(source="reel", arm=a["arm"], contention=a["contention"], throughputMBps=a["throughputMBps"],
                         p50Ms=l["p50"], p99Ms=l["p99"], p999Ms=l["p999"], maxMs=l["max"], ringDrops=a["framesDroppedByRing"], round=a.get("round")))
except (OSError, ValueError, KeyError):
    pass   # FIO_ONLY=1, or no report
rows += [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
heads = []
def arm(source, name, contention):
    return next((r for r in rows if r["source"] == source and r["arm"] == name and r["contention"] == contention), None)
try:
    verdicts = rep.get("verdicts") or []
    nrounds = rep.get("rounds") or 1
except NameError:
    verdicts, nrounds = [], 1
for v in verdicts:
    c = v["contention"]
    # The statistic fixed in advance: median and worst of the pool's p99.9 against buffered's,
    # 0 ring drops in every round; every round is printed above and kept in the rows.
    heads.append(R.headline("p99.9 write latency under %s over %d rounds: the pool, median ≤ buffered's median and worst ≤ buffered's worst, 0 ring drops every round (peer: reel buffered)" % (c, nrounds),
                            v["poolP999Ms"], unit="ms", reel_name="pool", peer=v["bufferedP999Ms"], peer_name="reel buffered",
                            target=("<=", "buffered", "reel"), met=v["met"], key=c in ("bulk", "bulk+fsync+metadata+memory")))
    heads.append(R.headline("ring drops under %s, every round: the pool" % c, v["poolRingDrops"], unit="frames", reel_name="pool",
                            target=("==", 0, "reel"), met=all(d == 0 for d in v["poolRingDrops"]), key=False))
for contention in dict.fromkeys(r["contention"] for r in rows if r["source"] == "fio"):
    pools = [r["p999Ms"] for r in rows if r["source"] == "reel" and r["arm"] == "pool" and r["contention"] == contention]
    other = arm("fio", "fio-pool-like", contention)
    if pools and other:
        heads.append(R.headline("p99.9 write latency under %s: the pool (peer: fio pool-like; fio times each write from its submission, Reel from when it was due)" % contention,
                                pools, unit="ms", reel_name="pool", peer=other["p999Ms"], peer_name="fio pool-like", key=False))
R.write("jitter", headlines=heads, title="Write latency at 150 MB/s in 1 MiB writes, %s s per arm, every round: p99.9 (whiskers p99-max)" % sys.argv[3],
        columns=["source", "round", "arm", "contention", "throughputMBps", "p50Ms", "p99Ms", "p999Ms", "maxMs", "ringDrops"], rows=rows,
        plot=dict(unit="ms (bar: p99.9 write latency; whisker: p99 to max)",
                  bars=[dict(label="%s %s / %s%s" % (r["source"], r["arm"], r["contention"], " #%s" % r["round"] if r.get("round") else ""), value=r["p999Ms"], low=r["p99Ms"], high=r["maxMs"],
                             series=r["source"] + " " + r["arm"]) for r in rows]),
        parameters=dict(duration=float(sys.argv[3]), rounds=int(os.environ.get("ROUNDS_RUN", "1"))), load_before=os.environ["LOAD_BEFORE"],
        notes=["Reel's own report (timelines, CDFs): jitter-reel/jitter.json and jitter.svg"])
PY
