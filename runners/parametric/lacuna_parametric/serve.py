"""A small OpenAI-compatible server of one transformers causal LM.

    python -m lacuna_parametric.serve --model DIR --host 127.0.0.1 --port 8000 \
        [--served-name NAME] [--adapter NAME=DIR ...] [--grace DIR] \
        [--max-logprobs 50] [--context N] [--threads N] [--seed 0] \
        [--dtype float32] [--device auto]

serves the Hugging Face model directory DIR (base weights), PEFT LoRA
adapters beside it (each under its own model id, as vLLM's --lora-modules),
and optionally a GRACE codebook attached to the base, with the subset of
vLLM's API that lacuna uses:

  GET  /health               200 once the model is loaded (503 before)
  GET  /v1/models            the served name, then the adapters' names
  GET  /props                {"total_slots": 1} (llama.cpp's field: one
                             request is computed at a time, so clients
                             cap their concurrency and count queued time)
  POST /v1/chat/completions  messages, chat template applied
  POST /v1/completions       prompt (a string, token ids, or a list of them)

Request fields: model (absent: the base), max_tokens (absent: up to the
context), temperature (absent or 0: greedy, where vLLM would take the
model's generation_config or 1; else sampling), top_p, top_k, min_p, repetition_penalty, n, stop, stop_token_ids,
seed, ignore_eos, skip_special_tokens, include_stop_str_in_output,
logprobs (chat: a bool with top_logprobs; completions: a count),
allowed_token_ids (every step's logits masked to these ids),
return_tokens_as_token_ids (tokens in logprobs written "token_id:N"), and
for chat add_generation_prompt, continue_final_message,
chat_template_kwargs and add_special_tokens. Any other field is refused
(400) rather than ignored, since it could change the answer: streaming,
echo, response_format json_schema / json_object, structured_outputs,
logit_bias, penalties other than repetition_penalty, prompt_logprobs
(frequency_penalty and presence_penalty 0, response_format "text" and user
are taken as they change nothing). The answer's text stops before EOS, a
stop token or a stop string (include_stop_str_in_output keeps the latter
two); their tokens still count in usage and logprobs, as in vLLM.
Completions' top_logprobs include the sampled token, as vLLM's do.

Log-probabilities are vLLM's processed_logprobs: the log-softmax of the
logits the token was drawn from, after the allowed_token_ids mask and the
repetition penalty and, when sampling, after temperature, min_p, top_k and
top_p. top_logprobs lists only tokens that could be drawn (never one the
mask or a filter removed), so it may be shorter than asked.

One request is computed at a time (one lock around the model); /health,
/v1/models and /props answer meanwhile. Once loaded the server prints
"listening on http://HOST:PORT" to stderr; SIGTERM or SIGINT stops it
(exit 0). Nothing here reads the environment.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# vLLM writes a log-probability of -inf (a token the mask removed) as this.
NEG_INF_LOGPROB = -9999.0
# The largest request body read.
MAX_BODY = 64 << 20

COMMON_FIELDS = {
    "model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "n", "stop",
    "stop_token_ids", "seed", "ignore_eos", "skip_special_tokens", "include_stop_str_in_output", "logprobs",
    "allowed_token_ids", "return_tokens_as_token_ids", "stream", "user",
    # Accepted only at their neutral values (OpenAI's SDKs send them).
    "frequency_penalty", "presence_penalty", "response_format",
}
CHAT_FIELDS = COMMON_FIELDS | {
    "messages", "top_logprobs", "max_completion_tokens", "add_generation_prompt", "continue_final_message",
    "chat_template_kwargs", "add_special_tokens",
}
COMPLETION_FIELDS = COMMON_FIELDS | {"prompt", "echo", "add_special_tokens"}


class RequestError(Exception):
    """A request the server refuses: an HTTP status and OpenAI's error body."""

    def __init__(self, message: str, status: int = 400, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.param = param
        self.code = code

    def body(self) -> dict:
        kind = "invalid_request_error" if self.status < 500 else "service_unavailable_error"
        return {"error": {"message": str(self), "type": kind, "param": self.param, "code": self.code}}


# ---- request parsing -------------------------------------------------------


def _get(body: dict, name: str, kinds, default=None):
    """body[name] checked to be of kinds (a type or a tuple of them; JSON
    true and false are not integers, integers are numbers); default when
    absent or null."""
    v = body.get(name)
    if v is None:
        return default
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if float in kinds and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, bool) and bool not in kinds or not isinstance(v, kinds):
        names = {int: "an integer", float: "a number", bool: "a boolean", str: "a string", list: "a list", dict: "an object"}
        raise RequestError(f"{name}: {json.dumps(v)[:80]} is not {' or '.join(names[k] for k in kinds)}", param=name)
    return v


class Sampling:
    """The decoding parameters of one request, checked."""

    def __init__(self, body: dict, vocab: int, max_logprobs: int, chat: bool):
        fields = CHAT_FIELDS if chat else COMPLETION_FIELDS
        unknown = sorted(set(body) - fields)
        if unknown:
            raise RequestError(
                f"unsupported field(s) {', '.join(unknown)}: lacuna_parametric.serve implements "
                f"{', '.join(sorted(fields))}", param=unknown[0])
        if _get(body, "stream", bool, False):
            raise RequestError("stream: streaming is not supported by this server; send stream false", param="stream")
        for f in ("frequency_penalty", "presence_penalty"):
            if _get(body, f, float, 0.0) != 0.0:
                raise RequestError(f"{f}: not supported (only 0); use repetition_penalty", param=f)
        rf = _get(body, "response_format", dict)
        if rf is not None and rf.get("type", "text") != "text":
            raise RequestError(
                f"response_format {rf.get('type')!r} is not supported: this server constrains decoding only through "
                "allowed_token_ids (no json_schema or json_object); send no response_format (lacuna: "
                "structured_output = \"none\" in the model block, the answer is checked by the client)",
                param="response_format")
        if not chat and _get(body, "echo", bool, False):
            raise RequestError("echo: not supported (only false)", param="echo")

        self.temperature = _get(body, "temperature", float, 0.0)
        if self.temperature < 0 or not math.isfinite(self.temperature):
            raise RequestError("temperature must be at least 0", param="temperature")
        self.greedy = self.temperature < 1e-5
        self.top_p = _get(body, "top_p", float, 1.0)
        if not 0 < self.top_p <= 1:
            raise RequestError("top_p must be in (0, 1]", param="top_p")
        self.top_k = _get(body, "top_k", int, 0)
        if self.top_k < -1:
            raise RequestError("top_k must be -1 or 0 (disabled) or at least 1", param="top_k")
        self.top_k = max(self.top_k, 0)
        self.min_p = _get(body, "min_p", float, 0.0)
        if not 0 <= self.min_p <= 1:
            raise RequestError("min_p must be in [0, 1]", param="min_p")
        self.repetition_penalty = _get(body, "repetition_penalty", float, 1.0)
        if self.repetition_penalty <= 0:
            raise RequestError("repetition_penalty must be above 0", param="repetition_penalty")
        self.n = _get(body, "n", int, 1)
        if self.n < 1:
            raise RequestError("n must be at least 1", param="n")
        self.seed = _get(body, "seed", int)
        mt = _get(body, "max_tokens", int)
        if chat and mt is None:
            mt = _get(body, "max_completion_tokens", int)
        if mt is not None and mt < 1:
            raise RequestError("max_tokens must be at least 1", param="max_tokens")
        self.max_tokens = mt
        stop = _get(body, "stop", (str, list), [])
        if isinstance(stop, str):
            stop = [stop]
        if not all(isinstance(s, str) for s in stop):
            raise RequestError("stop must be a string or a list of strings", param="stop")
        self.stop = [s for s in stop if s]
        self.stop_token_ids = self._ids(body, "stop_token_ids", vocab) or []
        self.ignore_eos = _get(body, "ignore_eos", bool, False)
        self.skip_special_tokens = _get(body, "skip_special_tokens", bool, True)
        self.include_stop = _get(body, "include_stop_str_in_output", bool, False)
        self.allowed = self._ids(body, "allowed_token_ids", vocab)
        if self.allowed is not None and not self.allowed:
            raise RequestError("allowed_token_ids is empty", param="allowed_token_ids")
        self.as_ids = _get(body, "return_tokens_as_token_ids", bool, False)

        # logprobs: None (not asked) or the number of top alternatives.
        if chat:
            want = _get(body, "logprobs", bool, False)
            top = _get(body, "top_logprobs", int)
            if top is not None and top < 0:
                raise RequestError("top_logprobs must be at least 0", param="top_logprobs")
            if top and not want:
                raise RequestError("top_logprobs needs logprobs true", param="top_logprobs")
            self.logprobs = (top or 0) if want else None
            name = "top_logprobs"
        else:
            lp = _get(body, "logprobs", int)
            if lp is not None and lp < 0:
                raise RequestError("logprobs must be at least 0", param="logprobs")
            self.logprobs = lp
            name = "logprobs"
        if self.logprobs is not None and self.logprobs > max_logprobs:
            raise RequestError(
                f"{name} {self.logprobs} is above the server's maximum, {max_logprobs} (start it with "
                f"--max-logprobs {self.logprobs} or more)", param=name)

    @staticmethod
    def _ids(body: dict, name: str, vocab: int):
        ids = _get(body, name, list)
        if ids is None:
            return None
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise RequestError(f"{name} must be a list of token ids", param=name)
        bad = [i for i in ids if not 0 <= i < vocab]
        if bad:
            raise RequestError(f"{name} holds ids outside the vocabulary [0, {vocab}): {bad[:5]}", param=name)
        return ids


def _message_text(content, i: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if not isinstance(p, dict) or p.get("type") != "text" or not isinstance(p.get("text"), str):
                raise RequestError(f"messages[{i}].content: only text parts are supported", param="messages")
            parts.append(p["text"])
        return "".join(parts)
    raise RequestError(f"messages[{i}].content must be a string or a list of text parts", param="messages")


# ---- the model ---------------------------------------------------------------


class Engine:
    """The model, its tokenizer and its adapters. Hold Engine.lock while
    using any of them: the selected adapter, the random generator and the
    fast tokenizer's settings are shared state."""

    def __init__(self, args):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        if args.device == "auto":
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        else:
            self.device = args.device
        dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "auto": "auto"}[args.dtype]
        self.tokenizer = AutoTokenizer.from_pretrained(args.model)
        for name, path in args.adapter:  # before the weights: fail fast
            _check_adapter_tokenizer(name, path, args.model, self.tokenizer)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype)
        model.to(self.device)
        model.eval()
        limit = getattr(model.config, "max_position_embeddings", None)
        if args.context and limit and args.context > limit:
            raise SystemExit(f"--context {args.context} is above the model's max_position_embeddings ({limit})")
        self.context = args.context or limit or 2048
        # The codebook goes on the base model in place (a forward hook), before
        # the adapters: requests for an adapter see it too.
        self.grace = None
        if args.grace:
            from lacuna_parametric import grace  # only needed with --grace

            self.grace = grace.attach(model, args.grace)
        self.adapters = {}
        for name, path in args.adapter:
            from peft import PeftModel

            if not self.adapters:
                model = PeftModel.from_pretrained(model, path, adapter_name=name)
            else:
                model.load_adapter(path, adapter_name=name)
            self.adapters[name] = path
        model.eval()
        self.model = model
        self.vocab = model.get_output_embeddings().weight.shape[0]
        eos = set()
        for src in (getattr(model, "generation_config", None), model.config):
            e = getattr(src, "eos_token_id", None) if src is not None else None
            if isinstance(e, int):
                eos.add(e)
            elif isinstance(e, (list, tuple)):
                eos.update(int(x) for x in e)
        if self.tokenizer.eos_token_id is not None:
            eos.add(self.tokenizer.eos_token_id)
        self.eos = eos
        self.lock = threading.Lock()
        self.rng = torch.Generator(device=self.device)
        self.rng.manual_seed(args.seed)

    def use(self, adapter: str | None):
        """A context in which the model runs with adapter (None: the base)."""
        import contextlib

        if not self.adapters:
            return contextlib.nullcontext()
        if adapter is None:
            return self.model.disable_adapter()
        self.model.set_adapter(adapter)
        return contextlib.nullcontext()

    def token_text(self, tid: int, as_ids: bool) -> str:
        return f"token_id:{tid}" if as_ids else self.tokenizer.decode([tid])

    def process(self, logits, history, sp: Sampling):
        """The log-probabilities tokens are drawn from ([rows, vocab]):
        vLLM's processed logprobs."""
        torch = self.torch
        if sp.allowed is not None:
            mask = torch.full_like(logits, float("-inf"))
            mask[:, sp.allowed] = 0.0
            logits = logits + mask
        if sp.repetition_penalty != 1.0:
            for r, ids in enumerate(history):
                idx = torch.tensor(sorted(set(ids)), dtype=torch.long, device=logits.device)
                if len(idx):
                    sel = logits[r, idx]
                    logits[r, idx] = torch.where(sel > 0, sel / sp.repetition_penalty, sel * sp.repetition_penalty)
        if sp.greedy:
            return torch.log_softmax(logits, dim=-1)
        logits = logits / sp.temperature
        if sp.min_p > 0:
            probs = torch.softmax(logits, dim=-1)
            floor = sp.min_p * probs.max(dim=-1, keepdim=True).values
            logits = logits.masked_fill(probs < floor, float("-inf"))
        if sp.top_k > 0 and sp.top_k < logits.shape[-1]:
            kth = torch.topk(logits, sp.top_k, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        if sp.top_p < 1.0:
            # Nucleus: drop the least likely tokens whose total mass stays
            # within 1 - top_p; the most likely token always stays.
            srt, order = torch.sort(logits, dim=-1)
            mass = torch.cumsum(torch.softmax(srt, dim=-1), dim=-1)
            drop = mass <= 1 - sp.top_p
            drop[:, -1] = False
            srt = srt.masked_fill(drop, float("-inf"))
            logits = torch.empty_like(logits).scatter_(-1, order, srt)
        return torch.log_softmax(logits, dim=-1)

    def generate(self, prompt: list[int], sp: Sampling, adapter: str | None) -> list[dict]:
        """sp.n continuations of prompt: dicts {tokens, logprobs, tops,
        text, finish_reason}; tops[i] is [(id, logprob)] (only with
        sp.logprobs set)."""
        torch = self.torch
        room = self.context - len(prompt)
        if room <= 0 or (sp.max_tokens is not None and sp.max_tokens > room):
            asked = sp.max_tokens if sp.max_tokens is not None else 1
            raise RequestError(
                f"This model's maximum context length is {self.context} tokens. However, you requested "
                f"{len(prompt) + asked} tokens ({len(prompt)} in the prompt, {asked} in the completion). "
                "Please reduce the length of the prompt or completion.", param="max_tokens")
        limit = sp.max_tokens if sp.max_tokens is not None else room
        gen = self.rng
        if sp.seed is not None:
            gen = torch.Generator(device=self.device)
            gen.manual_seed(sp.seed)
        n = sp.n
        rows = [{"tokens": [], "logprobs": [], "tops": [], "text": "", "finish_reason": None} for _ in range(n)]
        stop_ids = set(sp.stop_token_ids) | (set() if sp.ignore_eos else self.eos)
        with torch.inference_mode(), self.use(adapter):
            ids = torch.tensor([prompt] * n, dtype=torch.long, device=self.device)
            out = self.model(input_ids=ids, use_cache=True)
            for step in range(limit):
                logits = out.logits[:, -1, :].float()
                history = [prompt + r["tokens"] for r in rows] if sp.repetition_penalty != 1.0 else None
                lp = self.process(logits, history, sp)
                if sp.greedy:
                    picked = torch.argmax(lp, dim=-1)
                else:
                    picked = torch.multinomial(lp.exp(), 1, generator=gen).squeeze(-1)
                want = sp.logprobs
                if want:
                    top_v, top_i = torch.topk(lp, min(want, lp.shape[-1]), dim=-1)
                    top_v, top_i = top_v.tolist(), top_i.tolist()
                picked_l = picked.tolist()
                chosen = lp.gather(-1, picked.unsqueeze(-1)).squeeze(-1).tolist()
                for r, row in enumerate(rows):
                    if row["finish_reason"] is not None:
                        continue
                    tid = picked_l[r]
                    row["tokens"].append(tid)
                    row["logprobs"].append(_finite(chosen[r]))
                    if want:
                        row["tops"].append([(i, v) for i, v in zip(top_i[r], top_v[r]) if v > -math.inf])
                    elif want == 0:
                        row["tops"].append([])
                    self._check_stop(row, tid, stop_ids, sp)
                if all(r["finish_reason"] is not None for r in rows) or step == limit - 1:
                    break
                out = self.model(input_ids=picked.unsqueeze(-1), past_key_values=out.past_key_values, use_cache=True)
        for row in rows:
            if row["finish_reason"] is None:
                row["finish_reason"] = "length"
                row["text"] = self._decode(row["tokens"], sp)
        return rows

    def _decode(self, tokens: list[int], sp: Sampling) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=sp.skip_special_tokens)

    def _check_stop(self, row: dict, tid: int, stop_ids: set, sp: Sampling):
        if tid in stop_ids:
            kept = row["tokens"] if sp.include_stop and tid in sp.stop_token_ids else row["tokens"][:-1]
            row["text"], row["finish_reason"] = self._decode(kept, sp), "stop"
            return
        if not sp.stop:
            return
        text = self._decode(row["tokens"], sp)
        hits = [(text.find(s), s) for s in sp.stop if s in text]
        if hits:
            at, s = min(hits)
            row["text"] = text[: at + len(s)] if sp.include_stop else text[:at]
            row["finish_reason"] = "stop"


def _finite(v: float) -> float:
    return v if v > -math.inf else NEG_INF_LOGPROB


_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "added_tokens.json", "vocab.json", "tokenizer.model")


def _tokens_of(path: str) -> set | None:
    """The token strings of the fast tokenizer saved in path (its
    tokenizer.json's vocabulary and added tokens, and added_tokens.json),
    read as JSON without transformers; None without a tokenizer.json."""
    try:
        with open(os.path.join(path, "tokenizer.json")) as f:
            tj = json.load(f)
    except FileNotFoundError:
        return None
    vocab = (tj.get("model") or {}).get("vocab") or {}
    toks = set(vocab) if isinstance(vocab, dict) else {v[0] for v in vocab}  # BPE/WordPiece: a map; Unigram: pairs
    toks |= {a["content"] for a in tj.get("added_tokens") or []}
    try:
        with open(os.path.join(path, "added_tokens.json")) as f:
            toks |= set(json.load(f))
    except FileNotFoundError:
        pass
    return toks


def _check_adapter_tokenizer(name: str, path: str, base_dir: str, base_tok=None):
    """Refuse an adapter directory that carries its own tokenizer with
    tokens the base's lacks: embeddings for them would not fit the base
    model. Checked from the tokenizer files alone where both have a
    tokenizer.json; otherwise, with base_tok (the loaded base tokenizer),
    through transformers, and without it not at all."""
    if not any(os.path.exists(os.path.join(path, f)) for f in _TOKENIZER_FILES):
        return
    ours, base = _tokens_of(path), _tokens_of(base_dir)
    if ours is None or base is None:
        if base_tok is None:
            return
        from transformers import AutoTokenizer

        ours, base = set(AutoTokenizer.from_pretrained(path).get_vocab()), set(base_tok.get_vocab())
    extra = sorted(ours - base)
    if extra:
        shown = ", ".join(extra[:5]) + (" …" if len(extra) > 5 else "")
        raise SystemExit(
            f"adapter {name} ({path}) has its own tokenizer with {len(extra)} token(s) the base's lacks ({shown}): "
            "an adapter trained with added tokens needs resized embeddings, which a LoRA adapter served beside "
            "the base cannot carry. Merge it into the base (a full model directory with its tokenizer) and serve "
            "that with --model instead.")


# ---- HTTP ----------------------------------------------------------------------


class App:
    """What the handlers share: the engine (None while loading) and the
    served names."""

    def __init__(self, args):
        self.args = args
        self.engine: Engine | None = None
        self.created = int(time.time())
        self.served = args.served_name

    def models(self) -> dict:
        a = self.args
        data = [{"id": self.served, "object": "model", "created": self.created, "owned_by": "lacuna",
                 "root": a.model, "parent": None, "max_model_len": self.engine.context}]
        for name, path in a.adapter:
            data.append({"id": name, "object": "model", "created": self.created, "owned_by": "lacuna",
                         "root": path, "parent": self.served, "max_model_len": self.engine.context})
        return {"object": "list", "data": data}

    def resolve(self, body: dict) -> tuple[str, str | None]:
        name = body.get("model")
        if name is None:
            return self.served, None
        if not isinstance(name, str):
            raise RequestError("model must be a string", param="model")
        if name == self.served:
            return name, None
        if name in self.engine.adapters:
            return name, name
        raise RequestError(f"The model `{name}` does not exist.", status=404, param="model", code="model_not_found")

    # chat and completions run with the engine's lock held.

    def chat(self, body: dict) -> dict:
        e = self.engine
        name, adapter = self.resolve(body)
        sp = Sampling(body, e.vocab, self.args.max_logprobs, chat=True)
        msgs = _get(body, "messages", list)
        if not msgs:
            raise RequestError("messages must be a non-empty list", param="messages")
        conv = []
        for i, m in enumerate(msgs):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise RequestError(f"messages[{i}] must be an object with a role", param="messages")
            conv.append({"role": m["role"], "content": _message_text(m.get("content"), i)})
        cont = _get(body, "continue_final_message", bool, False)
        gen_prompt = _get(body, "add_generation_prompt", bool, True)
        if cont and gen_prompt:
            raise RequestError("continue_final_message and add_generation_prompt cannot both be true "
                               "(send add_generation_prompt false)", param="continue_final_message")
        if cont and conv[-1]["role"] != "assistant":
            raise RequestError("continue_final_message needs a final assistant message", param="continue_final_message")
        kwargs = _get(body, "chat_template_kwargs", dict, {})
        try:
            text = e.tokenizer.apply_chat_template(conv, tokenize=False, add_generation_prompt=gen_prompt,
                                                   continue_final_message=cont, **kwargs)
        except Exception as err:  # a template's own error is about the request
            raise RequestError(f"applying the chat template: {err}", param="messages")
        prompt = e.tokenizer(text, add_special_tokens=_get(body, "add_special_tokens", bool, False))["input_ids"]
        rows = e.generate(prompt, sp, adapter)
        choices = []
        for i, r in enumerate(rows):
            lp = None
            if sp.logprobs is not None:
                content = []
                for tid, v, top in zip(r["tokens"], r["logprobs"], r["tops"]):
                    tok = e.token_text(tid, sp.as_ids)
                    content.append({"token": tok, "logprob": v, "bytes": list(tok.encode("utf-8")),
                                    "top_logprobs": [_chat_top(e.token_text(t, sp.as_ids), x) for t, x in top]})
                lp = {"content": content}
            choices.append({"index": i, "message": {"role": "assistant", "content": r["text"], "refusal": None},
                            "logprobs": lp, "finish_reason": r["finish_reason"]})
        return _answer("chatcmpl", "chat.completion", name, choices, len(prompt), rows)

    def completions(self, body: dict) -> dict:
        e = self.engine
        name, adapter = self.resolve(body)
        sp = Sampling(body, e.vocab, self.args.max_logprobs, chat=False)
        prompts = self._prompts(body, _get(body, "add_special_tokens", bool, True))
        choices, all_rows, used = [], [], 0
        for p in prompts:
            rows = e.generate(p, sp, adapter)
            used += len(p)
            for r in rows:
                lp = None
                if sp.logprobs is not None:
                    lp = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
                    off = 0
                    for tid, v, top in zip(r["tokens"], r["logprobs"], r["tops"]):
                        tok = e.token_text(tid, sp.as_ids)
                        lp["tokens"].append(tok)
                        lp["token_logprobs"].append(v)
                        # vLLM's completions list the sampled token among the
                        # alternatives too.
                        alts = {e.token_text(t, sp.as_ids): x for t, x in top}
                        alts.setdefault(tok, v)
                        lp["top_logprobs"].append(alts)
                        lp["text_offset"].append(off)
                        off += len(e.tokenizer.decode([tid], skip_special_tokens=sp.skip_special_tokens))
                choices.append({"index": len(choices), "text": r["text"], "logprobs": lp,
                                "finish_reason": r["finish_reason"]})
            all_rows.extend(rows)
        return _answer("cmpl", "text_completion", name, choices, used, all_rows)

    def _prompts(self, body: dict, special: bool) -> list[list[int]]:
        p = body.get("prompt")
        bad = RequestError("prompt must be a string, a list of token ids, or a list of either", param="prompt")
        if isinstance(p, str):
            return [self.engine.tokenizer(p, add_special_tokens=special)["input_ids"]]
        if not isinstance(p, list) or not p:
            raise bad
        if all(isinstance(x, int) and not isinstance(x, bool) for x in p):
            p = [p]
        out = []
        for x in p:
            if isinstance(x, str):
                out.append(self.engine.tokenizer(x, add_special_tokens=special)["input_ids"])
            elif isinstance(x, list) and x and all(isinstance(t, int) and not isinstance(t, bool) for t in x):
                if not all(0 <= t < self.engine.vocab for t in x):
                    raise RequestError("prompt holds token ids outside the vocabulary", param="prompt")
                out.append(x)
            else:
                raise bad
        return out


def _chat_top(tok: str, v: float) -> dict:
    return {"token": tok, "logprob": v, "bytes": list(tok.encode("utf-8"))}


def _answer(prefix: str, obj: str, model: str, choices: list, prompt_tokens: int, rows: list) -> dict:
    completion = sum(len(r["tokens"]) for r in rows)
    return {"id": f"{prefix}-{uuid.uuid4().hex}", "object": obj, "created": int(time.time()), "model": model,
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                      "total_tokens": prompt_tokens + completion}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "lacuna_parametric.serve"
    sys_version = ""
    app: App  # set on the subclass serve() makes

    def log_message(self, format, *args):  # no access log
        pass

    def version_string(self) -> str:
        return self.server_version

    def _send(self, status: int, obj):
        b = b"" if obj is None else json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8", "replace")
        self.send_response(status)
        if obj is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def _error(self, err: RequestError):
        self._send(err.status, err.body())

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/") or "/"

    def do_GET(self):
        path, app = self._path(), self.app
        if path not in ("/health", "/v1/models", "/props"):
            return self._error(RequestError(f"no route GET {path}", status=404))
        if app.engine is None:
            return self._error(RequestError("the model is loading", status=503))
        if path == "/health":
            return self._send(200, None)
        if path == "/props":
            return self._send(200, {"total_slots": 1, "model_path": app.args.model})
        return self._send(200, app.models())

    def do_POST(self):
        path, app = self._path(), self.app
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            return self._error(RequestError("the request needs a Content-Length of at most 64 MiB", status=413))
        raw = self.rfile.read(length)
        routes = {"/v1/chat/completions": App.chat, "/v1/completions": App.completions}
        if path not in routes:
            return self._error(RequestError(f"no route POST {path}", status=404))
        if app.engine is None:
            return self._error(RequestError("the model is loading", status=503))
        try:
            body = json.loads(raw)
        except ValueError as err:
            return self._error(RequestError(f"the body is not JSON: {err}"))
        if not isinstance(body, dict):
            return self._error(RequestError("the body must be a JSON object"))
        try:
            with app.engine.lock:
                out = routes[path](app, body)
        except RequestError as err:
            return self._error(err)
        except Exception as err:  # the model failed: the server's fault, not the request's
            print(f"serve: {path}: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
            return self._send(500, {"error": {"message": f"{type(err).__name__}: {err}", "type": "InternalServerError",
                                              "param": None, "code": None}})
        self._send(200, out)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # a client that hung up (a readiness probe, a cancelled call)
        super().handle_error(request, client_address)


def _adapter(v: str) -> tuple[str, str]:
    name, sep, path = v.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"{v!r}: want NAME=DIR")
    return name, path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lacuna_parametric.serve", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a Hugging Face model directory")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0: any free port (printed)")
    p.add_argument("--served-name", help="the model id requests name (default: the directory's name)")
    p.add_argument("--adapter", type=_adapter, action="append", default=[], metavar="NAME=DIR",
                   help="a PEFT LoRA adapter served as model id NAME (repeatable)")
    p.add_argument("--grace", help="a GRACE codebook directory to attach to the base model")
    p.add_argument("--max-logprobs", type=int, default=50)
    p.add_argument("--context", type=int, default=0, help="context length in tokens (0: the model's)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=0, help="seeds requests that send no seed")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16", "auto"])
    p.add_argument("--device", default="auto", help="auto (cuda when present, else cpu), cpu, cuda, cuda:N")
    a = p.parse_args(argv)
    a.model = a.model.rstrip("/") or a.model
    a.served_name = a.served_name or os.path.basename(a.model)
    names = [a.served_name] + [n for n, _ in a.adapter]
    if len(set(names)) != len(names):
        p.error(f"model ids used twice: {names}")
    if a.max_logprobs < 0 or a.context < 0:
        p.error("--max-logprobs and --context must not be negative")
    if not os.path.isfile(os.path.join(a.model, "config.json")):
        p.error(f"--model {a.model}: not a model directory (no config.json)")
    for name, path in a.adapter:
        if not os.path.isfile(os.path.join(path, "adapter_config.json")):
            p.error(f"--adapter {name}={path}: not a PEFT adapter directory (no adapter_config.json)")
        _check_adapter_tokenizer(name, path, a.model)  # again after loading where this cannot tell
    if a.grace and not os.path.isdir(a.grace):
        p.error(f"--grace {a.grace}: no such directory")

    app = App(a)
    handler = type("BoundHandler", (Handler,), {"app": app})
    # Bound before anything is imported or loaded: a port in use fails at
    # once, and probes meanwhile get 503.
    try:
        httpd = _HTTPServer((a.host, a.port), handler)
    except OSError as err:
        raise SystemExit(f"cannot listen on {a.host}:{a.port}: {err}")
    stop = threading.Event()

    def on_signal(signum, frame):
        if app.engine is None:
            raise SystemExit(0)  # interrupts loading
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    try:
        t0 = time.time()
        import torch
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # the loading bar would fill the log lacuna quotes
        if a.threads:
            torch.set_num_threads(a.threads)
        torch.manual_seed(a.seed)
        app.engine = engine = Engine(a)
        host, port = httpd.server_address[:2]
        print(f"loaded {a.model} as {a.served_name} ({engine.device}, context {engine.context}"
              f"{', adapters ' + ', '.join(engine.adapters) if engine.adapters else ''}"
              f"{', GRACE ' + a.grace if a.grace else ''}) in {time.time() - t0:.1f}s", file=sys.stderr)
        print(f"listening on http://{host}:{port}", file=sys.stderr, flush=True)
        while not stop.wait(0.1):
            pass
    finally:
        httpd.shutdown()
        httpd.server_close()
    return 0

if __name__ == "__main__":
    try:
        code = main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        if isinstance(e.code, str):
            print(f"serve: {e.code}", file=sys.stderr)
    except Exception:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip the interpreter's teardown: torch's native libraries take seconds
    # to unload, and a stopped server has nothing left to write.
    os._exit(code)
