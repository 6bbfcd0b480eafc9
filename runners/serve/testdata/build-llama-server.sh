#!/usr/bin/env bash
# build-llama-server.sh [CACHE_ROOT]
#
# Builds llama.cpp's own OpenAI-compatible server, llama-server, for CPU from the
# llama.cpp sources vendored in the llama-cpp-python sdist on PyPI (the only place
# it is downloaded from), and caches the binary keyed on the sdist's version:
#
#   CACHE_ROOT/<version>/llama-server     (CACHE_ROOT: $1, else $LACUNA_LLAMA_SERVER_CACHE,
#                                          else $HOME/.cache/lacuna/llama-server)
#
# A second run finds the cached binary and returns at once. The last line printed on
# stdout is the binary's path (everything else goes to stderr), so
#
#   export LACUNA_LLAMA_SERVER=$(runners/serve/testdata/build-llama-server.sh)
#
# Environment: LLAMA_CPP_PYTHON_VERSION and LLAMA_CPP_PYTHON_SHA256 pick another sdist
# (both together); JOBS (default 2) the build's parallelism. The build runs under
# nice -n 10 and compiles only the llama-server target (31 min on 2 busy shared cores).
set -euo pipefail

VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
SHA256=${LLAMA_CPP_PYTHON_SHA256:-832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e}
JOBS=${JOBS:-2}
ROOT=${1:-${LACUNA_LLAMA_SERVER_CACHE:-$HOME/.cache/lacuna/llama-server}}
DIR="$ROOT/$VERSION"
BIN="$DIR/llama-server"

log() { echo "build-llama-server: $*" >&2; }

# Portable CPU flags: never -march=native (GGML_NATIVE=OFF), but AVX2/FMA/F16C where the
# CPU has them (x86-64-v3, every CI machine of the last decade); plain x86-64 otherwise.
# The variant is recorded beside the binary so a cache moved to an older CPU rebuilds.
VARIANT=generic
CPU_FLAGS=(-DGGML_NATIVE=OFF)
if [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then
	VARIANT=x86-64-v3
	CPU_FLAGS+=(-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
fi

cached() {
	[ -x "$BIN" ] && [ "$(cat "$DIR/VARIANT" 2>/dev/null)" = "$VARIANT" ] && "$BIN" --version >/dev/null 2>&1
}

if cached; then
	log "cached: $BIN ($VARIANT)"
	echo "$BIN"
	exit 0
fi

mkdir -p "$DIR"
# One build per version at a time: a second caller waits and then finds the cache.
exec 9>"$DIR/.lock"
if command -v flock >/dev/null; then flock 9; fi
if cached; then
	log "cached (built meanwhile): $BIN"
	echo "$BIN"
	exit 0
fi

WORK=$(mktemp -d "$DIR/.work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
START=$(date +%s)

log "downloading llama-cpp-python==$VERSION sdist from PyPI"
echo "llama-cpp-python==$VERSION --hash=sha256:$SHA256" >"$WORK/req.txt"
python3 -m pip download --quiet --no-binary :all: --no-deps --require-hashes \
	-r "$WORK/req.txt" -d "$WORK" >&2
SDIST=$(ls "$WORK"/llama_cpp_python-"$VERSION".tar.gz)
echo "$SHA256  $SDIST" | sha256sum -c --quiet - >&2

tar -xzf "$SDIST" -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
[ -f "$SRC/tools/server/CMakeLists.txt" ] || { log "no vendor/llama.cpp/tools/server in the sdist"; exit 1; }

# No network at build time: no curl, no OpenSSL, no prebuilt web UI from Hugging Face,
# no npm; static libraries so the binary stands alone in the cache.
log "configuring ($VARIANT); log in $DIR/build.log"
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release \
	-DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
	-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
	-DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
	-DGGML_OPENMP=OFF -DGGML_BACKEND_DL=OFF \
	"${CPU_FLAGS[@]}" >"$DIR/build.log" 2>&1 || { tail -40 "$DIR/build.log" >&2; exit 1; }
log "building llama-server with -j$JOBS under nice"
nice -n 10 cmake --build "$WORK/build" --target llama-server -j"$JOBS" >>"$DIR/build.log" 2>&1 ||
	{ tail -40 "$DIR/build.log" >&2; exit 1; }

OUT=$(find "$WORK/build" -type f -name llama-server -perm -u+x | head -1)
[ -n "$OUT" ] || { log "llama-server not found in the build tree"; exit 1; }
"$OUT" --version >&2 || { log "the built llama-server does not run"; exit 1; }
cp "$OUT" "$BIN.tmp"
echo "$VARIANT" >"$DIR/VARIANT"
mv "$BIN.tmp" "$BIN"
END=$(date +%s)
{
	echo "sdist=llama-cpp-python==$VERSION sha256=$SHA256"
	echo "variant=$VARIANT jobs=$JOBS seconds=$((END - START))"
} >"$DIR/BUILD_INFO"
log "built in $((END - START)) s: $BIN"
echo "$BIN"
