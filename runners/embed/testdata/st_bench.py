"""Times sentence-transformers (PyTorch, CPU) on the parity texts.

Usage: python st_bench.py MODEL_DIR TEXTS_FILE [REPEATS]
Prints texts/s for batch_size 1 and 16, after one warm-up pass, and
torch's intra-op thread count.
"""
import sys
import time

import torch
from sentence_transformers import SentenceTransformer

model_dir, texts_file = sys.argv[1:3]
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
with open(texts_file, encoding="utf-8") as f:
    texts = f.read().split("\n")[:-1]
model = SentenceTransformer(model_dir, device="cpu")
model.encode(texts, batch_size=16)
for bs in (1, 16):
    start = time.perf_counter()
    for _ in range(repeats):
        model.encode(texts, batch_size=bs, normalize_embeddings=True)
    elapsed = time.perf_counter() - start
    print(f"sentence-transformers batch_size={bs} threads={torch.get_num_threads()}: {repeats * len(texts) / elapsed:.1f} texts/s")
