"""A tiny causal language model defined from a config, for tests and examples.

The model is a Llama (LlamaForCausalLM: the architecture the editors and the
trainer target) with random initialisation, a byte-level BPE tokenizer trained
on the corpus it is given and a minimal chat template. `pretrain` teaches it
a corpus with a plain next-token loss, so that tests can then fine-tune or
edit a model that already knows something.

    python -m lacuna_parametric.tiny --corpus corpus.jsonl --out DIR \
        --steps 400 --seed 1

writes a Hugging Face model directory (config.json, model.safetensors,
tokenizer.json, tokenizer_config.json with the chat template) that
transformers, PEFT, the trainer, the editors and the server load like any
other.

Nothing here reads the environment; threads come from --threads.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import Iterable, Sequence

# The chat template of tiny models: one turn per message, ended by <|end|>,
# which is also the EOS token, so a generation stops after its turn.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL_TOKENS = ["<|pad|>", "<|bos|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]


def build_tokenizer(texts: Iterable[str], vocab_size: int = 1024):
    """Train a byte-level BPE tokenizer on texts; returns a PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|bos|>",
        eos_token="<|end|>",
        pad_token="<|pad|>",
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_model(tokenizer, hidden: int = 64, layers: int = 4, heads: int = 4,
                intermediate: int = 256, context: int = 4096, seed: int = 0):
    """A randomly initialised LlamaForCausalLM sized for tests."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=context,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(cfg)


def pretrain(model, tokenizer, texts: Sequence[str], steps: int, lr: float = 3e-3,
             batch: int = 16, seed: int = 0, log=None) -> list[float]:
    """Next-token training on texts (each ended by EOS); returns the loss per step."""
    import torch

    rng = random.Random(seed)
    torch.manual_seed(seed)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20) * max(0.1, 1 - s / max(1, steps)))
    eos = tokenizer.eos_token
    losses = []
    for step in range(steps):
        chunk = [rng.choice(texts) + eos for _ in range(batch)]
        enc = tokenizer(chunk, return_tensors="pt", padding=True, truncation=True,
                        max_length=model.config.max_position_embeddings)
        labels = enc["input_ids"].clone()
        labels[enc["attention_mask"] == 0] = -100
        out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels)
        opt.zero_grad()
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(out.loss.detach()))
        if log is not None and (step % 50 == 0 or step == steps - 1):
            log(f"step {step + 1}/{steps} loss {losses[-1]:.4f}")
    model.eval()
    return losses


def chat_text(tokenizer, user: str, assistant: str) -> str:
    """One chat exchange as the tiny template writes it (for pretraining corpora)."""
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}],
        tokenize=False,
    )


# Synthetic facts: made-up subjects, so no real model could know them.
_SYL = ["ka", "lo", "mi", "ru", "te", "zo", "pa", "ni", "vo", "se", "du", "fi", "ga", "he", "jo", "qu"]
RELATIONS = [
    ("lives in", "Where does {s} live?"),
    ("works as a", "What is the job of {s}?"),
    ("plays the", "Which instrument does {s} play?"),
]
OBJECTS = {
    "lives in": ["Paris", "Tokyo", "Lima", "Oslo", "Cairo", "Delhi", "Quito", "Perth"],
    "works as a": ["baker", "pilot", "nurse", "judge", "farmer", "tailor", "miner", "chef"],
    "plays the": ["piano", "violin", "drums", "flute", "guitar", "harp", "cello", "oboe"],
}


def synthetic_facts(n: int, seed: int = 0) -> list[dict]:
    """n facts {subject, relation, object, prompt, question}: subjects unique,
    objects drawn from a small closed set per relation. prompt is the fact's
    sentence up to (not including) the object, with no trailing space; the
    object follows after one space."""
    rng = random.Random(seed)
    seen = set()
    out = []
    while len(out) < n:
        name = "".join(rng.choice(_SYL) for _ in range(3)).capitalize()
        if name in seen:
            continue
        seen.add(name)
        rel, q = RELATIONS[len(out) % len(RELATIONS)]
        obj = rng.choice(OBJECTS[rel])
        out.append({
            "subject": name,
            "relation": rel,
            "object": obj,
            "prompt": f"{name} {rel}",
            "question": q.format(s=name),
        })
    return out


def fact_texts(facts: Sequence[dict], tokenizer=None) -> list[str]:
    """The sentences that teach facts: "S rel O." and, with a tokenizer, the
    chat exchange question → "S rel O."."""
    texts = []
    for f in facts:
        sent = f"{f['prompt']} {f['object']}."
        texts.append(sent)
        if tokenizer is not None:
            texts.append(chat_text(tokenizer, f["question"], sent))
    return texts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, help="JSONL, one {\"text\": ...} per line")
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args(argv)
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    with open(a.corpus) as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    tok = build_tokenizer(texts, a.vocab)
    model = build_model(tok, hidden=a.hidden, layers=a.layers, seed=a.seed)
    losses = pretrain(model, tok, texts, a.steps, seed=a.seed, log=lambda s: print(s, file=sys.stderr))
    model.save_pretrained(a.out)
    tok.save_pretrained(a.out)
    with open(f"{a.out}/pretrain.json", "w") as f:
        json.dump({"steps": a.steps, "seed": a.seed, "loss_first": losses[0], "loss_last": losses[-1]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
