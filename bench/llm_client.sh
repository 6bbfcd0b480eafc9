#!/usr/bin/env bash
# Client benchmark (issue 10, item 10): lacuna's Go model client against the
# Python openai package's AsyncOpenAI on the same loopback scripted server
# (runners/llm/llmtest) and the same chat calls, at concurrency 1, 16 and
# 64; then the rate of replays from a store's call cache. See bench/README.md.
#
#   bash bench/llm_client.sh            # N=2000 calls per measurement
#   N=500 bash bench/llm_client.sh      # quicker
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000}
OUT=bench/out
VENV=$OUT/llmvenv
mkdir -p "$OUT"

if ! "$VENV/bin/python" -c 'import openai' 2>/dev/null; then
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install -q openai
fi
go build -o "$OUT/llmclient" ./bench/llmclient

# The server runs in its own process for both clients; closing its stdin
# stops it.
exec 3> >("$OUT/llmclient" serve >"$OUT/llm_server.url")
SERVER_PID=$!
trap 'exec 3>&-; wait $SERVER_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	[ -s "$OUT/llm_server.url" ] && break
	sleep 0.1
done
URL=$(cat "$OUT/llm_server.url")
[ -n "$URL" ] || { echo "llm_client.sh: the server did not start" >&2; exit 1; }

# Each measurement runs REPEAT times, Go and Python interleaved so that
# both see the same noise; the table gives medians.
REPEAT=${REPEAT:-3}
RAW=$OUT/llm_client.jsonl
: >"$RAW"
tag() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.update(tool=sys.argv[2], c=int(sys.argv[3])); print(json.dumps(d))' "$@" >>"$RAW"; }
for c in 1 16 64; do
	for _ in $(seq "$REPEAT"); do
		tag "$("$OUT/llmclient" drive -url "$URL" -n "$N" -c "$c")" go "$c"
		tag "$("$VENV/bin/python" bench/llm_openai.py --url "$URL" -n "$N" -c "$c")" python "$c"
	done
done
for c in 1 16; do
	for _ in $(seq "$REPEAT"); do
		tag "$("$OUT/llmclient" replay -n "$N" -c "$c")" replay "$c"
	done
done

OPENAI=$("$VENV/bin/python" -c 'import openai; print(openai.__version__)')
python3 - "$RAW" "$N" "$REPEAT" "$OPENAI" "$(go version | cut -d' ' -f3)" "$(nproc)" <<'PY' | tee "$OUT/llm_client.md"
import json, statistics, sys
raw, n, rep, openai, gover, cores = sys.argv[1:]
rows = [json.loads(l) for l in open(raw)]
def med(tool, c, k):
    return statistics.median(r[k] for r in rows if r["tool"] == tool and r["c"] == c)
print(f"openai {openai}, {gover}, {cores} cores, N={n} calls per measurement, median of {rep}")
print()
print("| concurrency | Go calls/s | Python calls/s | Go / Python | Go CPU µs/call | Python CPU µs/call |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
for c in (1, 16, 64):
    g, p = med("go", c, "calls_per_s"), med("python", c, "calls_per_s")
    print(f"| {c} | {g:.0f} | {p:.0f} | {g/p:.1f}× | {med('go', c, 'cpu_us_per_call'):.0f} | {med('python', c, 'cpu_us_per_call'):.0f} |")
print()
print("| cache-hit replay, in flight | calls/s | CPU µs/call |")
print("| ---: | ---: | ---: |")
for c in (1, 16):
    print(f"| {c} | {med('replay', c, 'calls_per_s'):.0f} | {med('replay', c, 'cpu_us_per_call'):.0f} |")
PY
