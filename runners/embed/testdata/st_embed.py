"""Embeds texts with sentence-transformers, the reference for parity_test.go.

Usage: python st_embed.py MODEL_DIR TEXTS_FILE OUT_FILE [cls]
Reads one text a line from TEXTS_FILE, encodes them on CPU with
SentenceTransformer(MODEL_DIR) (normalize_embeddings=True) and writes the
vectors to OUT_FILE as little-endian float32, row after row, and each text's
model input tokens ([CLS] ... [SEP], truncated to max_seq_length) to
OUT_FILE.tokens.json as a list of lists. With "cls", the model's own pooling
is replaced by CLS-token pooling (as bge-small-en-v1.5 configures it).
"""
import json
import sys

import numpy as np
from sentence_transformers import SentenceTransformer, models

model_dir, texts_file, out_file = sys.argv[1:4]
with open(texts_file, encoding="utf-8") as f:
    texts = f.read().split("\n")[:-1]
model = SentenceTransformer(model_dir, device="cpu")
if sys.argv[4:] == ["cls"]:
    transformer = model[0]
    pooling = models.Pooling(transformer.get_word_embedding_dimension(), pooling_mode="cls")
    model = SentenceTransformer(modules=[transformer, pooling, models.Normalize()], device="cpu")
vecs = model.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
np.asarray(vecs, dtype="<f4").tofile(out_file)
tokens = [
    model.tokenizer.convert_ids_to_tokens(
        model.tokenizer(t, truncation=True, max_length=model.max_seq_length)["input_ids"]
    )
    for t in texts
]
with open(out_file + ".tokens.json", "w", encoding="utf-8") as f:
    json.dump(tokens, f)
