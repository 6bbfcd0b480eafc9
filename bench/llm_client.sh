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

field() { python3 -c "import json,sys; print('%.${2:-0}f' % json.loads(sys.argv[1])['$3'])" "$1"; }

{
	echo "openai $("$VENV/bin/python" -c 'import openai; print(openai.__version__)'), $(go version | cut -d' ' -f3), $(nproc) cores, N=$N calls per row"
	echo
	echo "| concurrency | Go calls/s | Python calls/s | Go / Python | Go CPU µs/call | Python CPU µs/call |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
	for c in 1 16 64; do
		go_=$("$OUT/llmclient" drive -url "$URL" -n "$N" -c "$c")
		py=$("$VENV/bin/python" bench/llm_openai.py --url "$URL" -n "$N" -c "$c")
		g=$(field "$go_" 0 calls_per_s)
		p=$(field "$py" 0 calls_per_s)
		ratio=$(python3 -c "print('%.1f' % ($g / $p))")
		echo "| $c | $g | $p | $ratio× | $(field "$go_" 0 cpu_us_per_call) | $(field "$py" 0 cpu_us_per_call) |"
	done
	echo
	for c in 1 16; do
		r=$("$OUT/llmclient" replay -n "$N" -c "$c")
		echo "Cache-hit replay (artifacts call cache, $c in flight): $(field "$r" 0 calls_per_s) calls/s, $(field "$r" 0 cpu_us_per_call) CPU µs/call"
		echo
	done
} | tee "$OUT/llm_client.md"
