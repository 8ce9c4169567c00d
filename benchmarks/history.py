"""Store size and query time over a long history: nightly runs of many tenant suites, generated straight into
the store's layout (every table of every run, typed by the row models), then the three queries of docs/store.md
timed through `kindgi-eval sql`, at 1, 3 and 12 months of history, each time after `kindgi-eval compact`
(closed months merged into one file per table; the current month stays one file per run).

    .venv/bin/python benchmarks/history.py [--suites 50] [--cases 200] [--months 1 3 12]

Generation writes about 7 x suites x days files and takes minutes; the store is deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kindgi_eval.kinds import stored_tables  # noqa: E402
from kindgi_eval.store.arrow import arrow_schema  # noqa: E402
from kindgi_eval.store.layout import table_path, write_atomically  # noqa: E402

CLI = Path(sys.executable).parent / "kindgi-eval"
STATUSES = ["passed"] * 80 + ["reviewed"] * 10 + ["judged-pass"] * 5 + ["failed"] * 3 + ["judged-fail"] * 2
CRITERIA = ["implicit_concession", "semantic_repetition", "answers_the_question"]
QUERIES = {
    "failures last night per tenant": (
        "SELECT suite, count(*) AS failures FROM statuses WHERE date = strftime(current_date, '%Y-%m-%d') "
        "AND status IN ('failed', 'judged-fail') GROUP BY suite ORDER BY suite"
    ),
    "split verdicts of one run": (
        "SELECT case_id, c.criterion, c.votes, c.evidence, c.reason FROM "
        "(SELECT case_id, unnest(criteria) AS c FROM statuses WHERE run_id = '{run_id}') WHERE c.split"
    ),
    "a criterion's verdict history": (
        "SELECT date, run_id, c.verdict, c.split FROM (SELECT date, run_id, unnest(criteria) AS c FROM statuses "
        "WHERE suite = 'tenant-07.nightly' AND case_id = 'case-0042') WHERE c.criterion = 'implicit_concession' "
        "ORDER BY date"
    ),
}


def templates(cases: int, rng: random.Random) -> dict[str, pa.Table]:
    """One run's tables for one suite, built once; each night varies statuses and votes from these."""
    text = "how much is the foundation course, and when does it run?"
    reply = [
        "The Foundation Course is $450 paid upfront and runs Tuesdays and Thursdays, 6pm to 8pm.",
        "Want the link?",
    ]
    criterion = lambda name, verdict: {  # noqa: E731
        "source": "rubric",
        "criterion": name,
        "group": name,
        "verdict": verdict,
        "split": False,
        "votes": [verdict] * 3,
        "evidence": "",
        "reason": "holds to the catalogue",
    }
    rows: dict[str, list[dict]] = {t.asset: [] for t in stored_tables()}
    for n in range(cases):
        cid = f"case-{n:04d}"
        rows["suite"].append(
            {
                "kind": "case",
                "id": cid,
                "line": n + 1,
                "text": text,
                "nudge": False,
                "funnel_stage": "offer",
                "course": "foundation",
                "review": [],
                "body": f'{{"id": "{cid}", "text": "{text}"}}',
                "tenant": "t",
                "eval_dir": "evals/nightly",
                "suite_hash": "0" * 64,
                "config_hash": "1" * 64,
            }
        )
        rows["agent_replies"].append(
            {
                "case_id": cid,
                "agent": "openai:gpt-4o-mini",
                "messages": reply,
                "escalate": False,
                "reason": None,
                "latency_ms": rng.uniform(400, 2000),
                "prompt_tokens": 900,
                "completion_tokens": 60,
                "cost_usd": 0.0002,
                "cost_known": True,
                "error": None,
                "raw": None,
            }
        )
        for assertion in ("escalate", "must_contain", "must_not_contain", "must_end_with_question", "latency"):
            rows["outcomes"].append(
                {"case_id": cid, "assertion": assertion, "held": True, "detail": f"{assertion} held"}
            )
        for name in CRITERIA:
            for sample in (1, 2, 3):
                rows["judge_samples"].append(
                    {
                        "subject": "case",
                        "subject_id": cid,
                        "source": "rubric",
                        "criterion": name,
                        "group": name,
                        "sample": sample,
                        "label": None,
                        "vote": "pass",
                        "evidence": "",
                        "reason": "fine",
                        "invalid_reason": None,
                        "raw": '{"verdict": "pass", "evidence": "", "reason": "fine"}',
                        "judge": "openai:gpt-4o",
                        "latency_ms": 800.0,
                        "prompt_tokens": 1500,
                        "completion_tokens": 40,
                        "cost_usd": 0.004,
                        "cost_known": True,
                    }
                )
        rows["statuses"].append(
            {
                "case_id": cid,
                "status": "passed",
                "failures": [],
                "messages": reply,
                "escalate": False,
                "reason": None,
                "latency_ms": 900.0,
                "error": None,
                "review": [],
                "criteria": [criterion(c, "pass") for c in CRITERIA],
            }
        )
    for group in ("implicit_concession", "semantic_repetition", "answers_the_question", "free_text"):
        rows["calibration"].append(
            {
                "group": group,
                "agreement": 1.0,
                "kappa": 1.0,
                "items": 4,
                "pass_labels": 2,
                "fail_labels": 2,
                "calibrated": True,
                "note": "agreed",
                "judge": "openai:gpt-4o",
            }
        )
    rows["run_summary"].append(
        {
            "tenant": "t",
            "eval_dir": "evals/nightly",
            "suite_hash": "0" * 64,
            "config_hash": "1" * 64,
            "agent": "openai:gpt-4o-mini",
            "judge": "openai:gpt-4o",
            "judge_prompt_hash": "2" * 64,
            "code_version": "0.1.0+bench",
            "replies_from": "",
            "started_at": "",
            "finished_at": "",
            "cases": cases,
            "passed": 0,
            "failed": 0,
            "judged_fail": 0,
            "judged_pass": 0,
            "reviewed": 0,
            "ungraded": 0,
            "agent_usd": 0.04,
            "judge_usd": 2.4,
            "cost_unknown": False,
            "stages": ["offer"],
            "uncovered": [],
        }
    )
    return {t.asset: pa.Table.from_pylist(rows[t.asset], schema=arrow_schema(t.row)) for t in stored_tables()}


def night(base: dict[str, pa.Table], run_id: str, day: str, rng: random.Random) -> dict[str, pa.Table]:
    """One night's tables: statuses drawn afresh, a few verdicts failed and split, lineage filled in."""
    tables = dict(base)
    statuses = base["statuses"]
    drawn = [rng.choice(STATUSES) for _ in range(statuses.num_rows)]
    criteria = statuses.column("criteria").to_pylist()
    for n, status in enumerate(drawn):
        if status == "judged-fail":
            split = rng.random() < 0.5
            criteria[n][0] = dict(
                criteria[n][0],
                verdict="fail",
                split=split,
                votes=["fail", "fail", "pass" if split else "fail"],
                evidence="$450",
            )
    column = pa.array(criteria, type=statuses.schema.field("criteria").type)
    statuses = statuses.set_column(statuses.schema.get_field_index("status"), "status", pa.array(drawn))
    tables["statuses"] = statuses.set_column(statuses.schema.get_field_index("criteria"), "criteria", column)
    summary = base["run_summary"]
    for name, value in (
        ("replies_from", run_id),
        ("started_at", f"{day}T02:00:00+00:00"),
        ("finished_at", f"{day}T02:09:00+00:00"),
    ):
        summary = summary.set_column(summary.schema.get_field_index(name), name, pa.array([value]))
    for status in ("passed", "failed", "judged-fail", "judged-pass", "reviewed"):
        name = status.replace("-", "_")
        count = pc.sum(pc.equal(tables["statuses"].column("status"), status)).as_py() or 0
        summary = summary.set_column(summary.schema.get_field_index(name), name, pa.array([count], pa.int64()))
    tables["run_summary"] = summary
    return tables


def generate(root: Path, suites: int, cases: int, first: date, last: date, rng: random.Random) -> str:
    """Write one run per suite per night from `first` to `last`; the id of a run on the last night."""
    base = templates(cases, rng)
    day, last_run = first, ""
    while day <= last:
        for s in range(suites):
            run_id = f"{day:%Y%m%d}-{s:02d}-{rng.getrandbits(32):08x}"
            for asset, table in night(base, run_id, day.isoformat(), rng).items():
                write_atomically(table, table_path(root, asset, f"tenant-{s:02d}.nightly", day.isoformat(), run_id))
            last_run = run_id
        day += timedelta(days=1)
    return last_run


def size_mb(root: Path) -> float:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 2**20


def time_query(sql: str, env: dict[str, str]) -> tuple[float, float]:
    """(cold, warm) wall seconds of `kindgi-eval sql` as a process; warm is the best of three."""

    def once() -> float:
        started = time.perf_counter()
        done = subprocess.run([str(CLI), "sql", sql, "--format", "csv"], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(done.stderr)
        return time.perf_counter() - started

    cold = once()
    return cold, min(once() for _ in range(3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", type=int, default=50)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--months", type=int, nargs="*", default=[1, 3, 12])
    args = parser.parse_args()
    rng = random.Random(7)
    today = date.today()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "KINDGI_HOME": tmp}
        root = Path(tmp) / "store"
        covered_from = today + timedelta(days=1)
        run_id = None
        started = time.perf_counter()
        for months in sorted(args.months):
            first = today - timedelta(days=round(months * 365 / 12) - 1)
            run_id = generate(root, args.suites, args.cases, first, covered_from - timedelta(days=1), rng) or run_id
            covered_from = first
            days = (today - first).days + 1
            print(
                f"\n{months} months: {days} nights x {args.suites} suites = {days * args.suites} runs, "
                f"{days * args.suites * args.cases:,} status rows, {days * args.suites * args.cases * 9:,} judge samples; "
                f"store {size_mb(root):.0f} MB (generated in {time.perf_counter() - started:.0f} s so far)"
            )
            compacting = time.perf_counter()
            done = subprocess.run([str(CLI), "compact"], env=env, capture_output=True, text=True, check=True)
            files = sum(1 for _ in root.rglob("*.parquet"))
            print(
                f"  {done.stdout.strip()} in {time.perf_counter() - compacting:.0f} s; "
                f"store now {size_mb(root):.0f} MB in {files:,} files"
            )
            for name, sql in QUERIES.items():
                cold, warm = time_query(sql.format(run_id=run_id), env)
                print(f"  {name}: {warm:.2f} s warm, {cold:.2f} s cold (whole `kindgi-eval sql` process)")
        floor = time_query("SELECT 1", env)[1]
        print(f'\n`kindgi-eval sql "SELECT 1"` (process start, imports, view definitions): {floor:.2f} s warm')


if __name__ == "__main__":
    main()
