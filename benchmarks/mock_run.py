"""Wall time and peak memory of `kindgi-eval run --mock`, process start to exit, on the golden set and on
generated suites of 1,000 and 10,000 cases; prints figures and the per-case ratio between the two sizes.

    .venv/bin/python benchmarks/mock_run.py [--sizes 1000 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI = Path(sys.executable).parent / "kindgi-eval"


def timed_run(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit status) of one CLI process."""
    started = time.perf_counter()
    with open(os.devnull, "w") as sink:
        process = subprocess.Popen([str(CLI), *args], cwd=REPO, env=env, stdout=sink, stderr=sink)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def generate(folder: Path, size: int) -> Path:
    """A suite of `size` cases cycled from the golden set, each with a unique id."""
    golden = [json.loads(line) for line in (REPO / "evals/golden/cases.jsonl").read_text().splitlines() if line.strip()]
    folder.mkdir(parents=True)
    with (folder / "cases.jsonl").open("w") as f:
        for n in range(size):
            case = dict(golden[n % len(golden)], id=f"case-{n:06d}")
            f.write(json.dumps(case) + "\n")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "KINDGI_HOME": f"{tmp}/home", "DAGSTER_HOME": f"{tmp}/home/dagster"}
        env.pop("EVAL_DIR", None)
        timed_run(["run", "--mock"], env)  # first run creates the instance's database; not counted
        wall, peak, code = timed_run(["run", "--mock"], env)
        print(f"golden set (run --mock): {wall:.2f} s wall, {peak:.0f} MB peak, exit {code}  (goal <= 5 s)")
        per_case = {}
        for size in args.sizes:
            suite = generate(Path(tmp) / f"suite{size}", size)
            wall, peak, code = timed_run(["run", "--mock", "--eval-dir", str(suite)], env)
            per_case[size] = wall / size
            print(
                f"{size:>6} cases: {wall:.2f} s wall, {peak:.0f} MB peak, {1000 * wall / size:.3f} ms per case, exit {code}"
            )
        if len(per_case) >= 2:
            small, large = min(per_case), max(per_case)
            print(f"per-case time at {large} / at {small}: {per_case[large] / per_case[small]:.2f}  (goal <= 1.2)")


if __name__ == "__main__":
    main()
