"""Human-review suites end to end: published over real HTTP, run by `kindgi-eval run --suite` as a real process, the
queue exported, labelled and imported, queried with `kindgi-eval sql`, and promoted into a new suite version."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest

from kindgi_eval.inputs import REVIEW_COLUMNS
from kindgi_eval.kinds import consumers
from kindgi_eval.registry import database_url, open_store, running_server
from kindgi_eval_tests.conftest import files_under, run_cli
from kindgi_eval_tests.registry.conftest import golden_spec

TENANT = "demo-academy"
RUBRIC = ["Answers what the contact asked", "Sounds like a person, not a brochure"]
ROLE = "sales lead"


class Registry(NamedTuple):
    http: httpx.Client
    env: dict[str, str]
    """KINDGI_REGISTRY_URL and KINDGI_REGISTRY_TOKEN for the CLI."""


@pytest.fixture
def registry(home) -> Iterator[Registry]:
    """The registry of the test's runtime folder, served on 127.0.0.1, with a token of the demo tenant."""
    store = open_store(database_url(home.root))
    mine = store.issue_token(TENANT, "test")
    with running_server(store, consumers()) as server:
        http = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {mine.secret}"}, timeout=30)
        yield Registry(http, {"KINDGI_REGISTRY_URL": server.url, "KINDGI_REGISTRY_TOKEN": mine.secret})
        http.close()
    store.close()


def publish(client: httpx.Client, suite_id: str, spec: dict, version: str = "1.0.0") -> None:
    document = {
        "id": suite_id,
        "tenantId": TENANT,
        "version": version,
        "kind": "human-review",
        "description": "",
        "spec": spec,
    }
    response = client.post("/v1/eval-suites", json=document)
    assert response.status_code == 201, response.text


def review_spec(cases: int = 3, **more) -> dict:
    # the first golden cases that pass under the mock agent: a refund, two hand-offs
    return {"rubric": RUBRIC, "reviewerRole": ROLE, "cases": golden_spec()["cases"][:cases], **more}


def run(suite: str, tmp_path: Path) -> tuple[int, dict | None, str]:
    out = tmp_path / f"{suite}.json"
    done = run_cli("run", "--mock", "--suite", suite, "--json", str(out))
    return done.code, json.loads(out.read_text()) if out.exists() else None, done.out + done.err


def sql(query: str) -> list[dict]:
    done = run_cli("sql", query, "--format", "json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def exported_csv(run_id: str, path: Path) -> list[dict]:
    done = run_cli("review", "export", run_id[:8], "--out", str(path))
    assert done.code == 0, done.err
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == REVIEW_COLUMNS
        return list(reader)


def write_csv(path: Path, rows: list[dict]) -> None:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def test_a_run_queues_each_reply_and_rubric_item_and_imported_labels_show_beside_the_judges(
    registry, home, tmp_path
) -> None:
    publish(registry.http, "demo-academy.review", review_spec())
    code, summary, said = run("demo-academy.review", tmp_path)
    assert code == 0, said  # no judge: every case, its rubric ungraded, is `reviewed`
    assert summary["human_review"] == {"reviewer_role": ROLE, "queue": 6, "replies": 3, "skipped": 0}
    assert "Human review: 6 items queued for the sales lead (3 replies, 2 rubric items each)" in said
    assert {c["status"] for c in summary["cases"]} == {"reviewed"}
    run_id = summary["run_id"]
    queue = sql(
        "SELECT case_id, rubric_item, reviewer_role, judge_verdict FROM review_queue ORDER BY case_id, rubric_item"
    )
    cases = sorted(c["id"] for c in review_spec()["cases"])
    assert queue == [
        {"case_id": c, "rubric_item": r, "reviewer_role": ROLE, "judge_verdict": "ungraded"}
        for c in cases
        for r in sorted(RUBRIC)
    ]

    rows = exported_csv(run_id, tmp_path / "review.csv")
    assert len(rows) == 6 and {r["run_id"] for r in rows} == {run_id}
    assert all(r["label"] == r["note"] == r["reviewer"] == "" for r in rows)
    first = next(c for c in summary["cases"] if c["id"] == rows[0]["case_id"])
    assert rows[0]["reply"] == "\n\n".join(first["messages"])  # the messages as the contact saw them
    assert (rows[0]["rubric_item"], rows[1]["rubric_item"]) == tuple(RUBRIC)

    # the reviewer labels the first two replies and leaves the third for later
    rows[0] |= {"label": "Pass", "reviewer": "ana"}  # as a spreadsheet capitalises it
    rows[1] |= {"label": "pass", "reviewer": "ana"}
    rows[2] |= {"label": "FAIL", "note": "says refund twice", "reviewer": "ana"}
    write_csv(tmp_path / "labelled.csv", rows)
    done = run_cli("review", "import", str(tmp_path / "labelled.csv"))
    assert done.code == 0, done.err
    assert done.out.startswith(f"imported 3 labels (2 pass, 1 fail) of run {run_id} as import ")
    assert done.out.rstrip().endswith("; 3 unlabelled rows skipped")
    again = run_cli(
        "review", "import", str(tmp_path / "labelled.csv")
    )  # the same file once more: said, not stored twice
    assert again.code == 0, again.err
    assert again.out.startswith(
        f"already imported: the 3 labels of {tmp_path / 'labelled.csv'} are those in force (import "
    )

    stored = sql(
        "SELECT run_id, case_id, rubric_item, label, note, reviewer, reviewer_role, line FROM reviews ORDER BY line"
    )
    assert [(r["case_id"], r["rubric_item"], r["label"], r["line"]) for r in stored] == [
        (rows[0]["case_id"], RUBRIC[0], "pass", 2),
        (rows[1]["case_id"], RUBRIC[1], "pass", 3),
        (rows[2]["case_id"], RUBRIC[0], "fail", 4),
    ]
    assert {(r["run_id"], r["reviewer"], r["reviewer_role"]) for r in stored} == {(run_id, "ana", ROLE)}
    statuses = {r["case_id"]: r for r in sql("SELECT case_id, status, reviewer_verdict, reviewer_labels FROM statuses")}
    assert statuses[rows[0]["case_id"]]["reviewer_verdict"] == "pass"
    assert statuses[rows[2]["case_id"]]["reviewer_verdict"] == "fail"
    assert statuses[rows[4]["case_id"]]["reviewer_verdict"] is None  # nobody labelled it yet
    assert {r["status"] for r in statuses.values()} == {"reviewed"}  # the judge's status stands beside the label
    (label,) = statuses[rows[2]["case_id"]]["reviewer_labels"]
    assert (label["rubric_item"], label["label"], label["note"], label["reviewer"]) == (
        RUBRIC[0],
        "fail",
        "says refund twice",
        "ana",
    )

    # a second import, from the JSONL export, relabels one item: both imports are kept, the later one counts
    done = run_cli("review", "export", run_id, "--format", "jsonl")
    assert done.code == 0, done.err
    lines = [json.loads(line) for line in done.out.splitlines()]
    assert len(lines) == 6 and lines[0]["reply"] == first["messages"]
    relabelled = [dict(lines[0], label="fail", note="on second reading, it never asks a question")]
    (tmp_path / "again.jsonl").write_text("".join(json.dumps(r) + "\n" for r in relabelled))
    assert run_cli("review", "import", str(tmp_path / "again.jsonl")).code == 0
    assert sql("SELECT count(*) AS n, count(DISTINCT import_id) AS imports FROM reviews") == [{"n": 4, "imports": 2}]
    (now,) = sql(f"SELECT reviewer_verdict FROM statuses WHERE case_id = '{rows[0]['case_id']}'")
    assert now == {"reviewer_verdict": "fail"}


def test_a_label_file_with_a_wrong_row_is_refused_naming_line_and_field_and_nothing_is_stored(
    registry, home, tmp_path
) -> None:
    publish(registry.http, "demo-academy.review", review_spec())
    _, summary, _ = run("demo-academy.review", tmp_path)
    run_id = summary["run_id"]
    rows = exported_csv(run_id, tmp_path / "review.csv")
    rows[0] |= {"label": "pass"}  # a right row: it is not stored either
    rows[1] |= {"label": "maybe"}
    rows[2] |= {"label": "fail", "case_id": "no-such-case"}
    rows[3] |= {"label": "fail", "rubric_item": "Spells the course name right"}
    rows[4] |= {"label": "pass", "run_id": "0a1b2c3d-not-a-run"}
    rows[5] |= {"label": "", "note": "forgot the label"}
    write_csv(tmp_path / "wrong.csv", rows)
    before = files_under(home.store)
    done = run_cli("review", "import", str(tmp_path / "wrong.csv"))
    assert done.code == 2 and "Traceback" not in done.err
    where = str(tmp_path / "wrong.csv")
    assert done.err.splitlines() == [
        f"error: {where}:3: field label: 'maybe' is not a label. Write pass or fail.",
        f"error: {where}:4: field case_id: 'no-such-case' is no case of run {run_id}'s review queue.",
        f"error: {where}:5: field rubric_item: 'Spells the course name right' is no rubric item of case {rows[3]['case_id']!r} in run {run_id}'s review queue.",
        f"error: {where}:6: field run_id: no run '0a1b2c3d-not-a-run' in the store. Label the file kindgi-eval review export wrote for a stored run.",
        f"error: {where}:7: field label: is empty, and the row has a note. Write pass or fail, or clear the note.",
    ]
    assert files_under(home.store) == before  # nothing stored, not even the right row
    assert sql("SELECT count(*) AS n FROM reviews") == [{"n": 0}]

    # a file without the label column: refused on its header line
    (tmp_path / "nolabel.csv").write_text(
        "run_id,case_id,rubric_item,note\n" + f"{run_id},{rows[0]['case_id']},{RUBRIC[0]},ok\n"
    )
    done = run_cli("review", "import", str(tmp_path / "nolabel.csv"))
    assert done.code == 2
    assert done.err.startswith(f"error: {tmp_path / 'nolabel.csv'}:1: field label: missing column.")
    assert files_under(home.store) == before


def test_promoted_labels_are_a_new_version_of_the_suite_and_the_old_version_is_unchanged(
    registry, home, tmp_path
) -> None:
    held = golden_spec()["calibration"][:2]
    publish(registry.http, "demo-academy.review", review_spec(calibration=held))
    old = registry.http.get("/v1/eval-suites/demo-academy.review/versions/1.0.0")
    _, summary, _ = run("demo-academy.review", tmp_path)
    run_id = summary["run_id"]
    rows = exported_csv(run_id, tmp_path / "review.csv")
    rows[0] |= {"label": "pass"}
    rows[3] |= {"label": "fail", "note": "too stiff"}
    write_csv(tmp_path / "labelled.csv", rows)
    assert run_cli("review", "import", str(tmp_path / "labelled.csv")).code == 0

    done = run_cli("review", "promote", run_id[:8], "--suite", "demo-academy.review", env=registry.env)
    assert done.code == 0, done.err
    assert done.out.startswith("published demo-academy.review 1.1.0 with 2 new calibration items: sha256 ")
    versions = [v["version"] for v in registry.http.get("/v1/eval-suites/demo-academy.review/versions").json()["data"]]
    assert versions == ["1.1.0", "1.0.0"]
    again = registry.http.get("/v1/eval-suites/demo-academy.review/versions/1.0.0")
    assert again.content == old.content and again.headers["ETag"] == old.headers["ETag"]  # the old version is untouched

    new = registry.http.get("/v1/eval-suites/demo-academy.review").json()["suite"]
    assert {k: v for k, v in new["spec"].items() if k != "calibration"} == {k: v for k, v in review_spec().items()}
    calibration = new["spec"]["calibration"]
    assert calibration[:2] == held
    case_of = {c["id"]: c for c in review_spec()["cases"]}
    messages = {c["id"]: c["messages"] for c in summary["cases"]}
    promoted = [(i["criterion"], i["label"], i["text"], i["reply"]) for i in calibration[2:]]
    assert promoted == [
        (rows[0]["rubric_item"], "pass", case_of[rows[0]["case_id"]]["text"], messages[rows[0]["case_id"]]),
        (rows[3]["rubric_item"], "fail", case_of[rows[3]["case_id"]]["text"], messages[rows[3]["case_id"]]),
    ]
    assert all(i["id"].startswith(f"review-{run_id[:8]}-") for i in calibration[2:])

    # promoting again adds nothing and publishes nothing
    done = run_cli("review", "promote", run_id, "--suite", "demo-academy.review", env=registry.env)
    assert done.code == 0 and done.out.startswith("nothing to promote: the 2 labelled items")
    assert len(registry.http.get("/v1/eval-suites/demo-academy.review/versions").json()["data"]) == 2
    # the promoted version runs: its calibration items are valid ones
    code, _, said = run("demo-academy.review", tmp_path)
    assert code == 0, said


def test_export_and_promote_refuse_a_run_of_another_kind(registry, home, tmp_path) -> None:
    document = {
        "id": "demo-academy.plain",
        "tenantId": TENANT,
        "version": "1.0.0",
        "kind": "conversation",
        "description": "",
        "spec": {"cases": golden_spec()["cases"][:2]},
    }
    assert registry.http.post("/v1/eval-suites", json=document).status_code == 201
    _, summary, _ = run("demo-academy.plain", tmp_path)
    for args in (("export", summary["run_id"]), ("promote", summary["run_id"], "--suite", "demo-academy.plain")):
        done = run_cli("review", *args, env=registry.env)
        assert done.code == 2
        assert (
            done.err
            == f"error: RUN_ID: run {summary['run_id']} evaluated a conversation suite; only a human-review suite's run has a review queue.\n"
        )
