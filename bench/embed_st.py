"""Times sentence-transformers (PyTorch, CPU) for bench/embed.sh.

Usage: python embed_st.py MODEL_DIR TEXTS_FILE REPS THREADS BATCH OUT.f32
After one warm-up pass, encodes the texts REPS times with batch_size BATCH
on THREADS intra-op threads, writes the last pass's normalised vectors to
OUT.f32 (little-endian float32) and prints a JSON object.
"""
import json
import sys
import time

model_dir, texts_file, reps, threads, batch, out = sys.argv[1:7]
reps, threads, batch = int(reps), int(threads), int(batch)
start = time.perf_counter()
import torch  # noqa: E402  (timed with the model load)
from sentence_transformers import SentenceTransformer  # noqa: E402

torch.set_num_threads(threads)
with open(texts_file, encoding="utf-8") as f:
    texts = f.read().split("\n")[:-1]
model = SentenceTransformer(model_dir, device="cpu")
load = time.perf_counter() - start
model.encode(texts, batch_size=batch)
start = time.perf_counter()
for _ in range(reps):
    vecs = model.encode(texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True)
elapsed = time.perf_counter() - start
vecs.astype("<f4").tofile(out)
print(json.dumps({
    "impl": f"sentence-transformers {__import__('sentence_transformers').__version__}, torch {torch.__version__} CPU",
    "texts": len(texts), "threads": torch.get_num_threads(), "batch": batch,
    "load_s": load, "tps": reps * len(texts) / elapsed,
}))
