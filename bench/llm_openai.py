"""The Python half of bench/llm_client.sh: the same chat calls as
`llmclient drive`, made with the openai package's AsyncOpenAI, at most C in
flight (an asyncio.Semaphore). Prints one JSON line like llmclient's."""

import argparse
import asyncio
import json
import resource
import time

from openai import AsyncOpenAI

SERVED = "bench-model"


def messages(i):
    return [
        {"role": "system", "content": "You are a Go expert. Answer with code only."},
        {"role": "user", "content": f"Write function number {i}."},
    ]


async def run(client, lo, hi, c):
    sem = asyncio.Semaphore(c)

    async def one(i):
        async with sem:
            r = await client.chat.completions.create(
                model=SERVED, messages=messages(i), temperature=0.0, max_tokens=64
            )
            assert r.choices[0].message.content

    await asyncio.gather(*(one(i) for i in range(lo, hi)))


def cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("-c", type=int, default=16)
    ap.add_argument("--warm", type=int, default=50)
    a = ap.parse_args()
    async with AsyncOpenAI(base_url=a.url, api_key="unused", max_retries=0) as client:
        await run(client, a.n, a.n + a.warm, a.c)
        cpu0, t0 = cpu(), time.perf_counter()
        await run(client, 0, a.n, a.c)
        sec, used = time.perf_counter() - t0, cpu() - cpu0
    print(json.dumps({"calls": a.n, "seconds": sec, "calls_per_s": a.n / sec,
                      "cpu_us_per_call": used / a.n * 1e6}))


asyncio.run(main())
