#!/usr/bin/env bash
# The pool's promise as a newcomer meets it: each recording below runs on a fresh machine's
# state (empty XDG_DATA_HOME and XDG_CACHE_HOME: no default pool, no write-mode measurement,
# no calibration cache), ROUNDS times (default 3), real time, the default (realistic) scene:
#   defaults reel record --duration 30 (every other option its default: issue 24's newcomer run;
#            the row says the configuration the camera chose, `adjusted`)
#   demo     the demo's recording: --duration 5 --ratio-at 2.5:9x16 --preview 127.0.0.1:0
#   preview  reel record --preview 0 --duration 12
#   ffv1     reel record --duration 4 --codec ffv1 --container mkv --ratio-at 1:9x16 --ratio-at 2:1x1 --ratio-at 3:16x9
#   long     reel record --duration LONG (default 900: the 15-minute default recording; LONG=0 skips it), once
# Per recording: frames captured, written and dropped (with reasons), clips and the storage
# each took (plain while the pool is prepared, pool, beyond the pool), `reel verify`'s verdict.
# The peer is the same recording made again with the pool already prepared (a warmed
# machine): 0 dropped frames on both is the target.
#   ROUNDS=3 LONG=900 ONLY=defaults,demo,preview,ffv1,long scripts/bench firstrun
set -euo pipefail
scripts/setup
swift build -c release 2>&1 | tail -1
reel=$PWD/.build/release/reel
rounds=${ROUNDS:-3}
long=${LONG:-900}
only=${ONLY:-defaults,demo,preview,ffv1,long}
work=$(mktemp -d /var/tmp/reel-firstrun-XXXXXX)
# A detached preparation still writing in $work (after Ctrl-C, or a `pool wait` that timed out) is stopped first.
trap 'pkill -f -- "$work/" 2>/dev/null; rm -rf "$work"' EXIT
rows=$work/rows.jsonl
: > "$rows"
load_before=$(cat /proc/loadavg)
echo "load: $load_before; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); scene: the default (realistic)"

# run NAME ROUND STATE XDG ARGS...: one recording with XDG_DATA_HOME=XDG/data and
# XDG_CACHE_HOME=XDG/cache; STATE fresh (made empty first) or warm (as earlier runs left it).
run() {
    local name=$1 round=$2 state=$3 xdg=$4; shift 4
    [ "$state" = fresh ] && { rm -rf "$xdg"; mkdir -p "$xdg/data" "$xdg/cache"; }
    local out=$work/out-$name-$round-$state
    rm -rf "$out"
    local status=0
    XDG_DATA_HOME=$xdg/data XDG_CACHE_HOME=$xdg/cache "$reel" record --json --out "$out" --name "$name" "$@" \
        > "$work/summary.json" 2> "$work/stderr.txt" || status=$?
    local verify=0
    "$reel" verify "$out" > /dev/null 2> "$work/verify.txt" || verify=$?
    python3 - "$name" "$round" "$state" "$status" "$verify" "$work/summary.json" "$work/stderr.txt" "$rows" <<'PY'
import json, sys
name, rnd, state, status, verify, summary, stderr, rows = sys.argv[1:]
try:
    s = json.load(open(summary))
except ValueError:
    s = {}
clips = s.get("clips", [])
adjusted = s.get("adjusted")
chosen = adjusted["chosen"]["description"] + " (asked " + adjusted["requested"]["description"] + ")" if adjusted else "as asked"
row = dict(chosen=chosen, recording=name, round=int(rnd), state=state, exit=int(status), verify=int(verify),
           captured=s.get("framesCaptured"), written=s.get("framesWritten"), dropped=s.get("framesDropped"),
           reasons={k: v for k, v in (s.get("dropReasons") or {}).items() if v},
           clips=len(clips), storage=",".join(str(c.get("storage", "?")) for c in clips),
           beyondPoolBytes=sum(c.get("bytesBeyondPool", 0) or 0 for c in clips),
           warnings=[l for l in open(stderr).read().splitlines() if l.startswith("reel: warning:")])
print("%-8s round %d %-5s exit %d verify %d: %s captured, %s written, %s dropped %s; %d clips (%s)%s; recorded %s" % (
    name, row["round"], state, row["exit"], row["verify"], row["captured"], row["written"], row["dropped"],
    row["reasons"] or "", row["clips"], row["storage"],
    "; %.0f MiB beyond the pool" % (row["beyondPoolBytes"] / 2**20) if row["beyondPoolBytes"] else "", chosen))
open(rows, "a").write(json.dumps(row) + "\n")
PY
    rm -rf "$out"
    if [ "$state" = fresh ] && [ "$round" != 0 ]; then
        # A fresh machine runs no earlier preparation: this one's detached preparation of its
        # default pool is stopped and the pool removed before the next recording.
        pkill -f -- "$xdg/" 2>/dev/null || true
        for _ in $(seq 100); do pgrep -f -- "$xdg/" > /dev/null || break; sleep 0.1; done
        pkill -KILL -f -- "$xdg/" 2>/dev/null || true
        rm -rf "$xdg"
    fi
}

args_of() {
    case $1 in
        defaults) args=(--duration 30) ;;
        demo) args=(--duration 5 --ratio-at 2.5:9x16 --preview 127.0.0.1:0) ;;
        preview) args=(--preview 0 --duration 12) ;;
        ffv1) args=(--duration 4 --codec ffv1 --container mkv --ratio-at 1:9x16 --ratio-at 2:1x1 --ratio-at 3:16x9) ;;
    esac
}
names=()
for name in defaults demo preview ffv1; do [[ ",$only," == *",$name,"* ]] && names+=("$name"); done
warm=$work/xdg-warm
# every_round STATE: each recording of `names`, ROUNDS times: fresh (an empty machine state
# each) or warm (the one state whose pool is prepared).
every_round() {
    for round in $(seq 1 "$rounds"); do
        for name in "${names[@]}"; do
            args_of "$name"
            local xdg=$warm
            [ "$1" = fresh ] && xdg=$work/xdg-$name-$round
            run "$name" "$round" "$1" "$xdg" "${args[@]}"
        done
    done
}
every_round fresh
# The warm twins share one machine state whose default pool a first recording made and whose
# detached preparation (idle I/O class) has finished.
if [ ${#names[@]} -gt 0 ]; then
    args_of "${names[0]}"
    rows=$work/discard.jsonl run "${names[0]}" 0 fresh "$warm" "${args[@]}" > /dev/null   # it only makes the pool
    XDG_DATA_HOME=$warm/data "$reel" pool wait --timeout 1200 > /dev/null || echo "firstrun: the default pool was not ready after 20 min" >&2
    every_round warm
fi
if [[ ",$only," == *",long,"* ]] && [ "$long" != 0 ]; then
    run long 1 fresh "$work/xdg-long" --duration "$long"
fi

ROWS="$rows" LOAD_BEFORE="$load_before" python3 - <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "bench.d"))
import results as R
rows = [json.loads(l) for l in open(os.environ["ROWS"]) if l.strip()]
heads = []
for name in dict.fromkeys(r["recording"] for r in rows):
    fresh = [r for r in rows if r["recording"] == name and r["state"] == "fresh"]
    warm = [r for r in rows if r["recording"] == name and r["state"] == "warm"]
    ok = all(r["exit"] == 0 and r["verify"] == 0 and r["dropped"] == 0 for r in fresh + warm)
    heads.append(R.headline("frames dropped by %s on a fresh machine (peer: the same on the warmed machine, where run); every run exits 0 and verifies" % name,
                            [r["dropped"] if r["dropped"] is not None else -1 for r in fresh], unit="frames", reel_name="fresh",
                            peer=[r["dropped"] if r["dropped"] is not None else -1 for r in warm] or None, peer_name="warm", ratio=False,
                            target=("==", 0, "reel"), met=ok, key=name in ("defaults", "demo", "long")))
R.write("firstrun", headlines=heads, title="Recordings on a fresh machine (no pool yet) and their warm twins, realistic scene (the default)",
        columns=["recording", "round", "state", "exit", "verify", "captured", "written", "dropped", "clips", "storage", "beyondPoolBytes", "chosen"],
        rows=rows, load_before=os.environ["LOAD_BEFORE"], parameters={"scene": "realistic"})
PY
