"""The OpenAI-compatible chat server the call benchmarks run against: asyncio (aiohttp) in a forked child, so its
clock and its interpreter lock are its own, answering one reply after a fixed delay. With `rpm`, it limits requests
per minute as a provider does: a request beyond `rpm` in the last 60 s is answered 429 with a Retry-After.

    server, base_url = start(delay, reply, model, rpm=None)    # ... then stats(base_url), and server.kill()

Imports nothing of the project's until the child serves."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import time
import urllib.request


def start(delay: float, reply: str, model: str = "fake", rpm: int | None = None) -> tuple[multiprocessing.Process, str]:
    """A server in a forked child answering `reply` after `delay` seconds (429 beyond `rpm` requests in any 60 s),
    and its base URL (`.../v1`)."""
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(
        target=_serve, args=(delay, reply, model, rpm, send), daemon=True
    )
    child.start()
    return child, f"http://127.0.0.1:{receive.recv()}/v1"


def stats(base_url: str) -> dict:
    """What the server saw: requests, peak in flight, the wall-clock times of its first request and last reply, every
    request body in order; the requests refused 429, and the most it answered in any one second and any 60 s."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=5) as response:
        return json.loads(response.read())


def busiest(times: list[float], window: float) -> int:
    """The most of `times` (sorted) within any `window` seconds."""
    most, first = 0, 0
    for last, t in enumerate(times):
        while t - times[first] >= window:
            first += 1
        most = max(most, last - first + 1)
    return most


def _serve(delay: float, reply: str, model: str, rpm: int | None, port_out) -> None:
    from aiohttp import web

    from kindgi_eval_tests.fake_provider import chat_body

    seen = {"requests": 0, "in_flight": 0, "peak": 0, "first_request": None, "last_reply": None, "refused_429": 0}
    bodies: list[dict] = []
    answered: list[float] = []
    body = chat_body(reply, model).decode()
    limited = {
        "error": {
            "message": f"Rate limit reached: {rpm} requests per minute",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    }

    async def chat(request: web.Request) -> web.Response:
        now = time.time()
        if rpm is not None and len(answered) >= rpm and now - answered[-rpm] < 60:
            seen["refused_429"] += 1
            return web.json_response(limited, status=429, headers={"Retry-After": f"{60 - (now - answered[-rpm]):.0f}"})
        answered.append(now)
        bodies.append(await request.json())
        seen["first_request"] = seen["first_request"] or now
        seen["requests"] += 1
        seen["in_flight"] += 1
        seen["peak"] = max(seen["peak"], seen["in_flight"])
        try:
            await asyncio.sleep(delay)
            response = web.Response(text=body, content_type="application/json")
            await response.prepare(request)
            await response.write_eof()
            seen["last_reply"] = time.time()
            return response
        finally:
            seen["in_flight"] -= 1

    async def report(request: web.Request) -> web.Response:
        return web.json_response(
            {
                **seen,
                "bodies": bodies,
                "busiest_second": busiest(answered, 1.0),
                "busiest_minute": busiest(answered, 60.0),
            }
        )

    async def run() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        app.router.add_get("/stats", report)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        port_out.send(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        await asyncio.Event().wait()

    asyncio.run(run())
