"""`kindgi-eval run` against promptfoo on the same calls: N one-turn cases, each asking a local OpenAI-compatible
server that answers after 200 ms, with one substring assertion, at concurrency C; wall time from the command's start
to its exit, medians of `--repeat`, the two alternated in one sitting.

    .venv/bin/python benchmarks/promptfoo_compare.py --promptfoo /path/to/node_modules/.bin/promptfoo [--cases 2000]
        [--concurrency 64] [--delay 0.2] [--repeat 3]

promptfoo is not a dependency of this project: install it anywhere (`npm install promptfoo@0.121` in a folder of its
own) and pass its executable. Its cache, telemetry and update check are turned off, and its results go to a
temporary folder, so that neither tool is helped by a previous run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the server's kindgi_eval_tests.fake_provider
sys.path.insert(0, str(REPO / "benchmarks"))  # its neighbour chat_server.py

import chat_server  # noqa: E402
from whole_run import CASE, KEY, MODEL, REPLY  # noqa: E402

CLI = Path(sys.executable).parent / "kindgi-eval"


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, str]:
    """Wall seconds, exit status and the end of the error output of one command."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
    return time.perf_counter() - started, done.returncode, done.stderr[-400:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--promptfoo", required=True, help="the promptfoo executable")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    server, base_url = chat_server.start(args.delay, REPLY, MODEL)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "suite").mkdir()
            cases = [{**CASE, "id": f"c{n}"} for n in range(args.cases)]
            (folder / "suite" / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
            config = {
                "description": "the same calls as kindgi-eval run",
                "providers": [{"id": f"openai:chat:{MODEL}", "config": {"apiBaseUrl": base_url, "apiKey": KEY}}],
                "prompts": ["{{text}}"],
                "tests": [{"vars": {"text": c["text"]}, "assert": [{"type": "contains", "value": "$450"}]} for c in cases],
            }
            (folder / "promptfooconfig.json").write_text(json.dumps(config))
            env = {**os.environ, "KINDGI_HOME": f"{tmp}/home", "DAGSTER_HOME": f"{tmp}/home/dagster", "OPENAI_API_KEY": KEY,
                   "OPENAI_BASE_URL": base_url, "PROMPTFOO_CONFIG_DIR": f"{tmp}/promptfoo", "PROMPTFOO_DISABLE_TELEMETRY": "1",
                   "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_CACHE_ENABLED": "false"}
            for var in ("EVAL_DIR", "AGENT_URL", "AGENT_MODEL", "EVAL_JUDGE_MODEL", "EVAL_CONCURRENCY"):
                env.pop(var, None)
            ours = [str(CLI), "run", "--agent-model", f"openai:{MODEL}", "--eval-dir", f"{tmp}/suite", "--concurrency", str(args.concurrency)]
            theirs = [args.promptfoo, "eval", "-c", str(folder / "promptfooconfig.json"), "--max-concurrency", str(args.concurrency),
                      "--no-cache", "--no-table", "--no-progress-bar"]
            walls: dict[str, list[float]] = {"kindgi-eval run": [], "promptfoo eval": []}
            for _ in range(args.repeat):
                for label, command in (("kindgi-eval run", ours), ("promptfoo eval", theirs)):
                    wall, code, said = timed(command, env, folder)
                    if code not in (0, 100):  # promptfoo exits 100 when an assertion failed; none should here
                        raise SystemExit(f"{label} exited {code}: {said}")
                    walls[label].append(wall)
            served = chat_server.stats(base_url)["requests"]
    finally:
        server.terminate()
    print(f"N={args.cases} C={args.concurrency}, server answering after {args.delay * 1000:.0f} ms, median of {args.repeat}, "
          f"{served} requests served in all; load average {' '.join(f'{x:.2f}' for x in os.getloadavg()[:2])}")
    for label, seconds in walls.items():
        print(f"  {label:<16} wall {statistics.median(seconds):6.2f} s  ({', '.join(f'{s:.2f}' for s in seconds)})")
    ratio = statistics.median(walls["kindgi-eval run"]) / statistics.median(walls["promptfoo eval"])
    print(f"  kindgi-eval run / promptfoo eval: {ratio:.2f}")


if __name__ == "__main__":
    main()
