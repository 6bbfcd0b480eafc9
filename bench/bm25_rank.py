"""rank_bm25 side of bench/bm25.sh.

usage: bm25_rank.py TOKENS.json REPS TOP.i64

Times BM25Okapi over the token lists bench/bm25 wrote (index build, then
get_scores, then get_scores plus a stable top-50 argsort, for every query;
the median of REPS repetitions each), writes the first repetition's top-50
lists as little-endian int64, and prints one JSON line. index_bytes is the
memory tracemalloc sees allocated by one more build, outside the timings.
"""
import json
import statistics
import sys
import time
import tracemalloc
from importlib.metadata import version

import numpy as np
from rank_bm25 import BM25Okapi


def main():
    path, reps, top_out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    docs, queries, k = data["docs"], data["queries"], 50
    build, scores, top = [], [], []
    for _ in range(reps):
        t = time.perf_counter()
        bm25 = BM25Okapi(docs)
        build.append(time.perf_counter() - t)
    for _ in range(reps):
        t = time.perf_counter()
        for q in queries:
            bm25.get_scores(q)
        scores.append(time.perf_counter() - t)
    tops = []
    for r in range(reps):
        t = time.perf_counter()
        for q in queries:
            best = np.argsort(-bm25.get_scores(q), kind="stable")[:k]
            if r == 0:
                tops.append(best)
        top.append(time.perf_counter() - t)
    np.concatenate(tops).astype("<i8").tofile(top_out)
    del bm25
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    bm25 = BM25Okapi(docs)
    index_bytes = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    nq = len(queries)
    print(json.dumps({
        "impl": "rank_bm25 %s (Python %s, numpy %s)" % (
            version("rank_bm25"), sys.version.split()[0], np.__version__),
        "docs": len(docs),
        "queries": nq,
        "build_s": statistics.median(build),
        "scores_qps": nq / statistics.median(scores),
        "top50_qps": nq / statistics.median(top),
        "index_bytes": index_bytes,
    }))


if __name__ == "__main__":
    main()
