"""The OpenAI-compatible chat server the call benchmarks run against: asyncio (aiohttp) in a forked child, so its
clock and its interpreter lock are its own, answering one reply after a fixed delay.

    server, base_url = start(delay, reply, model)    # ... then stats(base_url), and server.kill()

Imports nothing of the project's until the child serves."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import time
import urllib.request


def start(delay: float, reply: str, model: str = "fake") -> tuple[multiprocessing.Process, str]:
    """A server in a forked child answering `reply` after `delay` seconds, and its base URL (`.../v1`)."""
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_serve, args=(delay, reply, model, send), daemon=True)
    child.start()
    return child, f"http://127.0.0.1:{receive.recv()}/v1"


def stats(base_url: str) -> dict:
    """What the server saw: requests, peak in flight, the wall-clock times of its first request and last reply, and
    every request body in order."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=5) as response:
        return json.loads(response.read())


def _serve(delay: float, reply: str, model: str, port_out) -> None:
    from aiohttp import web

    from kindgi_eval_tests.fake_provider import chat_body

    seen = {"requests": 0, "in_flight": 0, "peak": 0, "first_request": None, "last_reply": None}
    bodies: list[dict] = []
    body = chat_body(reply, model).decode()

    async def chat(request: web.Request) -> web.Response:
        bodies.append(await request.json())
        seen["first_request"] = seen["first_request"] or time.time()
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
        return web.json_response({**seen, "bodies": bodies})

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
