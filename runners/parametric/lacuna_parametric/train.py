"""Supervised fine-tuning of a causal language model on prompt → completion pairs.

    python -m lacuna_parametric.train --base DIR --data FILE.parquet \
        --out DIR --work DIR [--method lora|full] [...]

trains with TRL's SFTTrainer (LoRA through PEFT, or every weight) on a parquet
file with string columns `prompt` and `completion`. When the tokenizer has a
chat template the prompt is the user's message and the completion the
assistant's (TRL's conversational prompt-completion format, so the template
is applied); without one the text is prompt + completion as given. By
default the loss counts only the completion's tokens.

--new-tokens adds ToolGen's virtual tokens (Wang et al., 2024: one token per
tool, such as "<<Weather&&current>>") to the tokenizer as added tokens; the
embedding matrices grow and each new row starts at the mean of the rows of
the tokens its text splits into once "<<", ">>" and "&&" are taken out. With
LoRA the input embeddings and the output head are then trained in full
(PEFT's modules_to_save).

Checkpoints go to --work every --save-steps steps. A run that finds
checkpoints there from an earlier run of the same recipe (hyperparameters,
base weights, data, new tokens) resumes from the latest complete one; a
--work that recorded another recipe is refused. --out receives, in this
order:

    adapter/        LoRA without --merge: PEFT's save_pretrained (and the
                    tokenizer when tokens were added)
    model/          full fine-tuning, or LoRA with --merge: the model and its
                    tokenizer (safetensors)
    manifest.json   written last (to a temporary name, then renamed): method,
                    recipe, seed, base {path, path_name, config_sha256,
                    weights_sha256}, data {rows, sha256}, new_tokens,
                    format (chat or plain),
                    loss_curve [[step, loss], ...], final_loss, steps, epochs,
                    wall_seconds, resumed_from_step, merged, output (adapter
                    or model), versions (torch, transformers, peft, trl)

base.path is the base directory's absolute path and path_name its last
element. recipe holds every hyperparameter that decides the weights
(new tokens as their count and the SHA-256 of their JSON list). new_tokens
counts the tokens the vocabulary did not have. weights_sha256 is the SHA-256 of the base's *.safetensors files (or, without
any, its pytorch_model*.bin files) concatenated in name order; config_sha256
and data.sha256 are those of config.json and of the parquet file.

Progress goes to stderr, one line per optimizer step: "step N/M loss X.XXXX".
Errors in the input (missing column, no rows, a base that is no model
directory, --merge with full fine-tuning, a --work of another recipe) exit
with status 2 and one line on stderr. Nothing is downloaded: models and
tokenizers load with local_files_only. Runs are deterministic given --seed
on CPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import time
import warnings

PROG = "lacuna_parametric.train"
RECIPE_FILE = "lacuna-train-recipe.json"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


class InputError(Exception):
    """A problem with the caller's input: reported in one line, exit status 2."""


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m " + PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="Hugging Face model directory (config, weights, tokenizer)")
    p.add_argument("--data", required=True, help="parquet file with string columns prompt and completion")
    p.add_argument("--out", required=True, help="directory for adapter/ or model/ and manifest.json")
    p.add_argument("--work", required=True, help="checkpoint directory; an interrupted run of the same recipe resumes from it")
    p.add_argument("--method", choices=["lora", "full"], default="lora")
    p.add_argument("--rank", type=int, default=64, help="LoRA rank")
    p.add_argument("--alpha", type=float, default=None, help="LoRA alpha (default 2*rank)")
    p.add_argument("--dropout", type=float, default=0.05, help="LoRA dropout")
    p.add_argument("--target-modules", default="all-linear",
                   help="comma-separated module names for LoRA (default all-linear: every linear projection of attention and MLP, not the output head)")
    p.add_argument("--epochs", type=float, default=3)
    p.add_argument("--lr", type=float, default=None, help="learning rate (default 2e-4 with LoRA, 2e-5 full)")
    p.add_argument("--batch", type=int, default=8, help="examples per device step")
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=None, help="optimizer steps; overrides --epochs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-steps", type=int, default=50, help="checkpoint every N steps")
    p.add_argument("--max-length", type=int, default=1024, help="tokens per example (longer ones are cut at the end)")
    p.add_argument("--new-tokens", default=None,
                   help="JSON file: a list of strings (ToolGen virtual tokens) added to the vocabulary")
    p.add_argument("--merge", action="store_true",
                   help="LoRA only: write the merged full model to out/model instead of the adapter. Needed to serve "
                        "with vLLM a LoRA that adds vocabulary (--new-tokens): vLLM cannot load such an adapter")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--loss-on", choices=["completion", "all"], default="completion",
                   help="tokens that count in the loss: the completion's only, or prompt and completion")
    a = p.parse_args(argv)
    if a.merge and a.method != "lora":
        raise InputError("--merge applies to --method lora only (full fine-tuning already writes out/model)")
    for name in ("rank", "batch", "grad_accum", "save_steps", "max_length"):
        if getattr(a, name) <= 0:
            raise InputError(f"--{name.replace('_', '-')} must be positive")
    if a.max_steps is not None and a.max_steps <= 0:
        raise InputError("--max-steps must be positive")
    if a.epochs <= 0:
        raise InputError("--epochs must be positive")
    if a.alpha is None:
        a.alpha = 2.0 * a.rank
    if a.lr is None:
        a.lr = 2e-4 if a.method == "lora" else 2e-5
    return a


def file_sha256(paths) -> str:
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def base_identity(base: str) -> dict:
    """The base directory's names and digests; InputError when it is no model directory."""
    if not os.path.isdir(base):
        raise InputError(f"--base {base}: not a directory")
    config = os.path.join(base, "config.json")
    if not os.path.isfile(config):
        raise InputError(f"--base {base}: no config.json (not a Hugging Face model directory)")
    names = sorted(n for n in os.listdir(base) if n.endswith(".safetensors"))
    if not names:
        names = sorted(n for n in os.listdir(base) if n.startswith("pytorch_model") and n.endswith(".bin"))
    if not names:
        raise InputError(f"--base {base}: no weights (*.safetensors or pytorch_model*.bin)")
    return {
        "path": os.path.abspath(base),
        "path_name": os.path.basename(os.path.normpath(os.path.abspath(base))),
        "config_sha256": file_sha256([config]),
        "weights_sha256": file_sha256([os.path.join(base, n) for n in names]),
        "weights_files": names,
    }


def read_pairs(path: str) -> list[tuple[str, str, str]]:
    """The (system, prompt, completion) rows of a parquet file (system "" when
    the file has no system column: sft_data and raft_data write the system
    message the evaluation sends); InputError on a bad file."""
    import pyarrow.parquet as pq

    if not os.path.isfile(path):
        raise InputError(f"--data {path}: no such file")
    try:
        table = pq.read_table(path)
    except Exception as e:  # pyarrow raises several types for a file that is not parquet
        raise InputError(f"--data {path}: not a readable parquet file: {str(e).splitlines()[0]}")
    missing = [c for c in ("prompt", "completion") if c not in table.column_names]
    if missing:
        raise InputError(f"--data {path}: missing column(s) {', '.join(missing)} (has: {', '.join(table.column_names) or 'none'})")
    if table.num_rows == 0:
        raise InputError(f"--data {path}: empty (no rows)")
    prompts = table.column("prompt").to_pylist()
    completions = table.column("completion").to_pylist()
    systems = table.column("system").to_pylist() if "system" in table.column_names else [""] * len(prompts)
    for i, (sy, p, c) in enumerate(zip(systems, prompts, completions)):
        if not isinstance(p, str) or not isinstance(c, str) or not isinstance(sy, (str, type(None))):
            raise InputError(f"--data {path}: row {i}: system, prompt and completion must be strings")
        if c == "":
            raise InputError(f"--data {path}: row {i}: empty completion")
    return [(sy or "", p, c) for sy, p, c in zip(systems, prompts, completions)]


def read_new_tokens(path: str | None) -> list[str]:
    if path is None:
        return []
    try:
        with open(path) as f:
            toks = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"--new-tokens {path}: {e}")
    if not isinstance(toks, list) or not all(isinstance(t, str) and t for t in toks):
        raise InputError(f"--new-tokens {path}: want a JSON list of non-empty strings")
    seen, out = set(), []
    for t in toks:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def toolgen_text(token: str) -> str:
    """The words a ToolGen token stands for: its text without <<, >> and &&."""
    return " ".join(token.replace("<<", " ").replace(">>", " ").replace("&&", " ").split())


def add_new_tokens(model, tok, tokens: list[str]) -> int:
    """Adds tokens to tok and model (ToolGen's initialisation); returns how many were new."""
    import torch

    fresh = [t for t in tokens if t not in tok.get_vocab()]
    if not fresh:
        return 0
    # Split before adding: with the new tokens in the vocabulary, nothing changes
    # (their punctuation is gone), but the old vocabulary is what the mean is over.
    pieces = [tok(toolgen_text(t), add_special_tokens=False)["input_ids"] for t in fresh]
    tok.add_tokens(fresh, special_tokens=False)
    old = model.get_input_embeddings().weight.shape[0]
    model.resize_token_embeddings(len(tok), mean_resizing=False)
    with torch.no_grad():
        mats = [model.get_input_embeddings().weight]
        out = model.get_output_embeddings()
        if out is not None and out.weight.data_ptr() != mats[0].data_ptr():
            mats.append(out.weight)
        for w in mats:
            fallback = w[:old].mean(dim=0)
            for t, ids in zip(fresh, pieces):
                row = tok.convert_tokens_to_ids(t)
                ids = [i for i in ids if i < old]
                w[row] = w[ids].mean(dim=0) if ids else fallback
    return len(fresh)


def module_name(model, module) -> str | None:
    for name, m in model.named_modules():
        if m is module:
            return name.rsplit(".", 1)[-1]
    return None


def recipe_of(a, new_tokens: list[str]) -> dict:
    """The hyperparameters that decide the trained weights (not where things go, nor threads or cadence)."""
    r = {
        "method": a.method,
        "epochs": a.epochs,
        "lr": a.lr,
        "batch": a.batch,
        "grad_accum": a.grad_accum,
        "max_steps": a.max_steps,
        "seed": a.seed,
        "max_length": a.max_length,
        "loss_on": a.loss_on,
        "new_tokens": len(new_tokens),
        "new_tokens_sha256": hashlib.sha256(json.dumps(new_tokens).encode()).hexdigest() if new_tokens else None,
    }
    if a.method == "lora":
        r.update(rank=a.rank, alpha=a.alpha, dropout=a.dropout, target_modules=target_modules(a))
    return r


def target_modules(a):
    if a.target_modules == "all-linear":
        return "all-linear"
    return [m.strip() for m in a.target_modules.split(",") if m.strip()]


def latest_checkpoint(work: str) -> tuple[str | None, int]:
    """The latest complete checkpoint under work and its step (None, 0 when
    there is none). A checkpoint is complete once its trainer_state.json
    (Trainer writes it last) parses; newer incomplete ones, left by a kill
    during a save, are removed so that Trainer does not mistake them."""
    found = []
    for name in os.listdir(work):
        m = _CHECKPOINT.match(name)
        if m and os.path.isdir(os.path.join(work, name)):
            found.append((int(m.group(1)), os.path.join(work, name)))
    for _, path in sorted(found, reverse=True):
        try:
            with open(os.path.join(path, "trainer_state.json")) as f:
                return path, int(json.load(f)["global_step"])
        except (OSError, ValueError, KeyError):
            shutil.rmtree(path)
    return None, 0


def claim_work(work: str, record: dict) -> None:
    """Records the recipe in work, or checks it against the one recorded there."""
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, RECIPE_FILE)
    if os.path.isfile(path):
        with open(path) as f:
            have = json.load(f)
        if have != record:
            diff = sorted(k for k in set(have) | set(record) if have.get(k) != record.get(k))
            raise InputError(f"--work {work} holds a run of another recipe (differs in: {', '.join(diff)}); "
                             "use another --work or empty it")
        return
    write_json_atomic(path, record)


def write_json_atomic(path: str, obj) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def progress_callback():
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                print(f"step {state.global_step}/{state.max_steps} loss {logs['loss']:.4f}", file=sys.stderr, flush=True)

    return Progress()


def example(system: str, prompt: str, completion: str, chat: bool) -> dict:
    """One training example in TRL's prompt-completion format: chat turns
    (the system turn when there is one) or plain text (the system text and
    a blank line before the prompt)."""
    if chat:
        msgs = [{"role": "system", "content": system}] if system else []
        msgs.append({"role": "user", "content": prompt})
        return {"prompt": msgs, "completion": [{"role": "assistant", "content": completion}]}
    return {"prompt": (system + "\n\n" if system else "") + prompt, "completion": completion}


def build_dataset(pairs, chat: bool):
    from datasets import Dataset

    return Dataset.from_list([example(sy, p, c, chat) for sy, p, c in pairs])


def check_lengths(tok, pairs, chat: bool, max_length: int) -> None:
    """InputError when an example is longer than max_length tokens: the
    trainer would cut its end, the answer, and train on the prompt alone
    (or drop it)."""
    long = []
    for sy, p, c in pairs:
        ex = example(sy, p, c, chat)
        if chat:
            ids = tok.apply_chat_template(ex["prompt"] + ex["completion"], tokenize=True)
            n = len(ids["input_ids"] if hasattr(ids, "keys") else ids)
        else:
            n = len(tok(ex["prompt"] + ex["completion"]).input_ids)
        if n > max_length:
            long.append(n)
    if long:
        raise InputError(f"{len(long)} of {len(pairs)} examples are longer than --max-length {max_length} tokens "
                         f"(the longest {max(long)}): their answers would be cut off; raise --max-length")


def train(a) -> dict:
    start = time.monotonic()
    base = base_identity(a.base)
    pairs = read_pairs(a.data)
    new_tokens = read_new_tokens(a.new_tokens)
    recipe = recipe_of(a, new_tokens)
    data = {"rows": len(pairs), "sha256": file_sha256([a.data])}
    claim_work(a.work, {**recipe, "base_config_sha256": base["config_sha256"],
                        "base_weights_sha256": base["weights_sha256"], "data_sha256": data["sha256"]})
    checkpoint, resumed_from = latest_checkpoint(a.work)
    os.makedirs(a.out, exist_ok=True)
    manifest_path = os.path.join(a.out, "manifest.json")
    if os.path.exists(manifest_path):
        os.remove(manifest_path)  # out is incomplete until the new manifest lands

    import torch
    import datasets
    import transformers
    import peft
    import trl
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, set_seed

    if a.threads:
        torch.set_num_threads(a.threads)
    # stderr carries the progress lines: no progress bars, no deprecation chatter.
    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)
    set_seed(a.seed)

    try:
        tok = AutoTokenizer.from_pretrained(a.base, local_files_only=True)
    except Exception as e:
        raise InputError(f"--base {a.base}: cannot load its tokenizer: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
    try:
        model = AutoModelForCausalLM.from_pretrained(a.base, local_files_only=True, dtype=torch.float32)
    except Exception as e:
        raise InputError(f"--base {a.base}: cannot load a causal language model: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    added = add_new_tokens(model, tok, new_tokens)

    peft_config = None
    if a.method == "lora":
        saved = None
        if added:
            names = [module_name(model, model.get_input_embeddings())]
            out = model.get_output_embeddings()
            if out is not None and out.weight.data_ptr() != model.get_input_embeddings().weight.data_ptr():
                names.append(module_name(model, out))
            saved = [n for n in names if n]
        peft_config = peft.LoraConfig(
            r=a.rank, lora_alpha=a.alpha, lora_dropout=a.dropout, target_modules=target_modules(a),
            modules_to_save=saved, task_type="CAUSAL_LM",
        )

    chat = bool(tok.chat_template)
    check_lengths(tok, pairs, chat, a.max_length)
    args = trl.SFTConfig(
        output_dir=a.work,
        num_train_epochs=a.epochs,
        max_steps=a.max_steps if a.max_steps is not None else -1,
        learning_rate=a.lr,
        per_device_train_batch_size=a.batch,
        gradient_accumulation_steps=a.grad_accum,
        seed=a.seed,
        data_seed=a.seed,
        max_length=a.max_length,
        completion_only_loss=a.loss_on == "completion",
        logging_steps=1,
        save_strategy="steps",
        save_steps=a.save_steps,
        save_total_limit=2,
        report_to="none",
        disable_tqdm=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        dataloader_num_workers=0,
        dataloader_pin_memory=False,
        dataset_num_proc=None,
    )
    trainer = trl.SFTTrainer(
        model=model,
        args=args,
        train_dataset=build_dataset(pairs, chat),
        processing_class=tok,
        peft_config=peft_config,
    )
    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(progress_callback())
    trainer.train(resume_from_checkpoint=checkpoint)

    state = trainer.state
    curve = [[h["step"], h["loss"]] for h in state.log_history if "loss" in h and "step" in h]
    final, kind = trainer.model, "model"
    if a.method == "lora" and not a.merge:
        kind = "adapter"
    elif a.method == "lora":
        final = final.merge_and_unload()
    for stale in ("adapter", "model", kind + ".tmp"):
        shutil.rmtree(os.path.join(a.out, stale), ignore_errors=True)
    tmp = os.path.join(a.out, kind + ".tmp")
    final.save_pretrained(tmp)
    if kind == "model" or added:
        tok.save_pretrained(tmp)
    os.replace(tmp, os.path.join(a.out, kind))

    manifest = {
        "method": a.method,
        "recipe": recipe,
        "seed": a.seed,
        "base": {k: base[k] for k in ("path", "path_name", "config_sha256", "weights_sha256")},
        "data": data,
        "new_tokens": added,
        "format": "chat" if chat else "plain",
        "loss_curve": curve,
        "final_loss": curve[-1][1] if curve else None,
        "steps": state.global_step,
        "epochs": state.epoch,
        "wall_seconds": round(time.monotonic() - start, 3),
        "resumed_from_step": resumed_from,
        "merged": bool(a.merge),
        "output": kind,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "peft": peft.__version__, "trl": trl.__version__},
    }
    write_json_atomic(manifest_path, manifest)
    return manifest


def main(argv: list[str] | None = None) -> int:
    try:
        a = parse_args(argv)
        m = train(a)
    except InputError as e:
        print(f"{PROG}: {e}", file=sys.stderr, flush=True)
        return 2
    print(f"trained {m['steps']} steps, final loss {m['final_loss']:.4f}, wrote {os.path.join(a.out, m['output'])}",
          file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
