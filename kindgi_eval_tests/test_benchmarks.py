"""The benchmarks run from the README's plain install (`pip install -e .`), which has no pytest."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kindgi_eval_tests.conftest import REPO

# pytest made unimportable, as where it is not installed: a None entry in sys.modules makes `import pytest` raise
# ModuleNotFoundError.
BLOCK_PYTEST = 'import sys; sys.modules["pytest"] = sys.modules["_pytest"] = None\n'
# Then the script run as `python benchmarks/X.py ARGS` runs it.
RUN_SCRIPT = 'import runpy; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name="__main__")\n'
HELP_SHOWN = "--- help shown ---"
# Or first as `python benchmarks/X.py --help` (whose exit status, if not 0, ends the process with it), then with ARGS:
# one interpreter importing the script's modules once for both.
HELP_THEN_RUN = (
    "import runpy; script, args = sys.argv[1], sys.argv[2:]; sys.argv = [script, '--help']\n"
    "try:\n"
    "    runpy.run_path(script, run_name='__main__')\n"
    "except SystemExit as e:\n"
    "    if e.code:\n"
    "        raise\n"
    f"print({HELP_SHOWN!r}, flush=True); sys.argv = [script, *args]; runpy.run_path(script, run_name='__main__')\n"
)


def run_without_pytest(script: str, *args: str, help_first: bool = False) -> subprocess.CompletedProcess[str]:
    """`python benchmarks/SCRIPT ARGS` in a process where pytest cannot be imported; with `help_first`, `--help` before
    it in the same process, its output ended by `HELP_SHOWN`."""
    code = BLOCK_PYTEST + (HELP_THEN_RUN if help_first else RUN_SCRIPT)
    return subprocess.run(
        [sys.executable, "-c", code, str(REPO / "benchmarks" / script), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_pytest_is_blocked() -> None:
    """The test below would prove nothing if pytest could still be imported."""
    done = subprocess.run([sys.executable, "-c", BLOCK_PYTEST + "import pytest"], capture_output=True, text=True)
    assert "ModuleNotFoundError" in done.stderr


@pytest.mark.parametrize(
    ("script", "args", "shown"),
    [
        # a tiny run of each: a few calls, a server answering at once, one repeat (a few seconds each)
        ("agent_calls.py", ("--calls", "8", "--concurrency", "4", "--delay", "0.01", "--repeat", "1"), ()),
        ("judge_calls.py", ("--cases", "4", "--concurrency", "4", "--delay", "0.01", "--json"), ('"ideal": ',)),
        # a suite over the limit refused, and an answer over it; the slow suite at the limit skipped
        ("big_inputs.py", ("--suite-mb", "20", "--body-mb", "2", "--skip-at-limit"), ()),
        # whole processes: the golden run, and a run of 2 cases, embedded and through a gateway, beside the bare
        # scripts, once each; promptfoo, which is no dependency of this project, skipped and said to be
        ("whole_run.py", ("--quick",), ("promptfoo arm: skipped", "| N = 2, C = 2 |", "run, gateway ")),
        # two scenarios of two moves played by the stage and by the bare script, once each
        (
            "scenarios.py",
            ("--scenarios", "2", "--turns", "2", "--repeat", "1", "--playing-only"),
            ("stage / bare litellm",),
        ),
        # the registry's server under a tenth of each attack
        ("registry_attacks.py", ("--quick",), ()),
        # a tick over three tenants, one of them a registry suite of two costly patterns, and that version's check
        ("tick.py", ("--tenants", "2", "--patterns", "2", "--repeat", "1"), ("3 run requests",)),
        # a few configurations of the corrected interval's coverage, 200 runs each
        ("judged_rates.py", ("--quick",), ("fieller (the product's): worst coverage",)),
        # a night of 3 suites over 2 nights, one dropping, the command run once
        (
            "night.py",
            ("--suites", "3", "--nights", "2", "--cases", "20", "--dropped", "1", "--repeat", "1"),
            ("(1 of 3 tenants got worse)", "kindgi-eval night, the whole process: median "),
        ),
    ],
)
@pytest.mark.long
def test_a_benchmark_runs_without_pytest(script: str, args: tuple[str, ...], shown: tuple[str, ...]) -> None:
    done = run_without_pytest(script, *args, help_first=True)
    assert HELP_SHOWN in done.stdout, done.stderr  # `--help` exited 0
    helped, ran = done.stdout.split(HELP_SHOWN, 1)
    assert "usage:" in helped
    assert done.returncode == 0, done.stderr
    assert "ModuleNotFoundError" not in done.stderr
    assert "peak" in ran  # it got as far as printing its figures
    for text in shown:
        assert text in ran


def test_the_nightly_benchmark_loads_without_pytest() -> None:
    # a night takes minutes and PostgreSQL (the profile's test runs the same profile); here, that the script and the
    # profile's script it imports load from the plain install
    done = run_without_pytest("nightly.py", "--help")
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and "--tenants" in done.stdout


def test_the_judge_bill_benchmark_prices_a_small_suite_without_pytest() -> None:
    done = run_without_pytest(
        "judge_bill.py", "--cases", "4", "--models", "openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert "4 cases" in done.stdout and "batch and cache save" in done.stdout
    prices = json.loads(done.stdout.splitlines()[-1])
    for model in ("openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"):
        # a batch request costs half a call's in litellm's cost map; the cache only takes from that
        assert prices[model]["batch"] == pytest.approx(prices[model]["neither"] / 2)
        assert prices[model]["batch and cache"] <= prices[model]["batch"]
    assert (
        prices["anthropic/claude-sonnet-4-5"]["cache"] < prices["anthropic/claude-sonnet-4-5"]["neither"]
    )  # the breakpoints pay
