#!/usr/bin/env bash
# Builds bench/embed/tilecheck for a machine without Go: cuts the machine
# code of runners/embed's tile12x32 and tile6x16 out of the package's test
# binary and fmaZ, fmaY out of bench/embed, writes code.bin beside
# tilecheck.c, and, with "run", compiles and runs it here.
#
#   bash bench/embed/tilecheck/tilecheck.sh [run [bench]]
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=bench/out/tilecheck
mkdir -p "$OUT"
go test -c -o "$OUT/embed.test" ./runners/embed
go build -o "$OUT/embedbench" ./bench/embed
python3 - "$OUT" <<'PY'
import struct, subprocess, sys
out = sys.argv[1]
def code(binary, sym):
    nm = subprocess.run(["go", "tool", "nm", "-size", binary], capture_output=True, text=True, check=True).stdout
    va, size = next((int(f[0], 16), int(f[1])) for f in map(str.split, nm.splitlines()) if f[-1] == sym)
    data = open(binary, "rb").read()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        typ, _, off, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
        if typ == 1 and vaddr <= va < vaddr + filesz:
            return data[off + va - vaddr: off + va - vaddr + size]
    sys.exit(f"{sym} not in a loaded segment of {binary}")
pkg = "github.com/lacuna-dev/lacuna/runners/embed."
parts = [code(f"{out}/embed.test", pkg + "tile12x32.abi0"), code(f"{out}/embed.test", pkg + "tile6x16.abi0"),
         code(f"{out}/embedbench", "main.fmaZ.abi0"), code(f"{out}/embedbench", "main.fmaY.abi0")]
open(f"{out}/code.bin", "wb").write(struct.pack("<4I", *map(len, parts)) + b"".join(parts))
PY
cp bench/embed/tilecheck/tilecheck.c "$OUT/"
echo "$OUT/code.bin and $OUT/tilecheck.c: cc -O1 -o tilecheck tilecheck.c -lm && ./tilecheck code.bin [bench]"
if [ "${1:-}" = run ]; then
	cc -O1 -o "$OUT/tilecheck" "$OUT/tilecheck.c" -lm
	"$OUT/tilecheck" "$OUT/code.bin" "${2:-}"
fi
