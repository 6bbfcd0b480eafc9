"""Scores the parity corpus with rank_bm25 itself (TestScoresMatchRankBM25OnReleasedData).

usage: rank_bm25_scores.py IN.json OUT_DIR

IN.json is {"docs": [[token, ...], ...], "queries": [[token, ...], ...], "k": K}.
Writes OUT_DIR/scores.f64: BM25Okapi(docs).get_scores(q) for every query, row
by row, little-endian float64; and OUT_DIR/top.i64: each query's K best
documents (score descending, ties by lower index), little-endian int64.
"""
import json
import os
import sys

import numpy as np
from rank_bm25 import BM25Okapi


def main():
    src, out = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        data = json.load(f)
    bm25 = BM25Okapi(data["docs"])
    k = data["k"]
    scores = np.empty((len(data["queries"]), len(data["docs"])), dtype="<f8")
    top = np.empty((len(data["queries"]), k), dtype="<i8")
    for i, q in enumerate(data["queries"]):
        s = bm25.get_scores(q)
        scores[i] = s
        top[i] = np.argsort(-s, kind="stable")[:k]
    scores.tofile(os.path.join(out, "scores.f64"))
    top.tofile(os.path.join(out, "top.i64"))


if __name__ == "__main__":
    main()
