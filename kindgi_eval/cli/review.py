"""`kindgi-eval review export|import|promote`: a human-review run's queue written for people, their labels read back
into the store, and the labels promoted into a new version of a suite's calibration set in the registry."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import click

from kindgi_eval.cli.common import (
    check_output_path,
    input_errors,
    registry_client,
    registry_errors,
    runs_named,
    write_text_atomically,
)
from kindgi_eval.inputs import QueueKeys, check_labels, read_label_file
from kindgi_eval.rules import InputError, Problem

# The store, the reports, the registry and the kinds are imported inside the commands: start-up time that `--help`
# and `validate` would otherwise pay.


@click.group(short_help="Export a human-review run's queue, import its labels, promote them.")
def review() -> None:
    """A human-review suite's run queues one row per reply and rubric item. Export the queue, have the reviewer
    fill in `label` (pass or fail) and `note`, import the file, and promote the labels into a suite's calibration set.

    \b
    Example:
      kindgi-eval review export 3f9c2a1e --out review.csv
      kindgi-eval review import review.csv
      kindgi-eval review promote 3f9c2a1e --suite demo-academy.pricing
    """


def _human_review_run(root, run_id: str):
    """(its `store.RunKey`, its summary, its queue) of the human-review run RUN_ID names; InputError otherwise."""
    from kindgi_eval.kinds import kind_named, table_named
    from kindgi_eval.store import SHARED, read_rows

    (ref,) = runs_named(root, {"RUN_ID": run_id})
    (run,) = read_rows(root, SHARED.run_summary, ref.partition, ref.run_id)
    if not kind_named(run.suite_kind).checking.reviewed_by_people:
        raise InputError(
            [
                Problem(
                    "RUN_ID",
                    None,
                    None,
                    f"run {ref.run_id} evaluated a {run.suite_kind} suite; only a human-review "
                    "suite's run has a review queue.",
                )
            ]
        )
    return ref, run, read_rows(root, table_named("review_queue"), ref.partition, ref.run_id)


@review.command("export", short_help="Write a run's review queue as CSV or JSONL to fill in.")
@click.argument("run_id")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "jsonl"]),
    help="The file's format; default by --out's extension, else csv.",
)
@click.option("--out", "out", type=click.Path(dir_okay=False), help="Write the file here; default standard output.")
@input_errors
def review_export(run_id: str, fmt: str | None, out: str | None) -> None:
    """Write RUN_ID's review queue, one row per reply and rubric item, with empty reviewer, label and note columns.

    RUN_ID may be any unique prefix of a run id.

    \b
    Example:
      kindgi-eval review export 3f9c2a1e --format jsonl --out review.jsonl
    """
    from kindgi_eval.reports import review_csv, review_jsonl
    from kindgi_eval.store import store_root

    if out:
        check_output_path(out, "--out")
    ref, _, queue = _human_review_run(store_root(), run_id)
    if not queue:
        raise InputError(
            [
                Problem(
                    "RUN_ID",
                    None,
                    None,
                    f"run {ref.run_id}'s review queue is empty: the agent gave no reply to review.",
                )
            ]
        )
    chosen = fmt or ("jsonl" if out and Path(out).suffix.lower() in (".jsonl", ".json", ".ndjson") else "csv")
    text = (review_jsonl if chosen == "jsonl" else review_csv)(ref.run_id, queue)
    if out is None:
        click.echo(text, nl=False)
        return
    write_text_atomically(Path(out), text)
    click.echo(f"wrote {out}: {len(queue)} rows of run {ref.run_id} to label", err=True)


@review.command("import", short_help="Read a filled-in review file's labels into the store.")
@click.argument("file", type=click.Path(dir_okay=False))
@input_errors
def review_import(file: str) -> None:
    """Store FILE's labels as one import, beside every earlier import (none is overwritten; of one reply and rubric
    item the latest import's label counts). A file with any wrong row is refused whole: nothing is stored, exit 2.

    Rows whose label and note are both empty are not labelled yet, and are skipped.

    \b
    Example:
      kindgi-eval review import review.csv
    """
    from kindgi_eval.kinds import store_views, table_named
    from kindgi_eval.store import (
        ReviewRow,
        export_database,
        labels_in_force,
        read_reviews,
        read_rows,
        run_keys,
        store_root,
        write_reviews,
    )

    labels = read_label_file(file)
    root = store_root()
    stored = {k.run_id: k for k in run_keys(root)}
    queues, roles = {}, {}
    for run_id in sorted({line.run_id for line in labels.lines}):
        key = stored.get(run_id)
        if key is None:
            queues[run_id] = None
            continue
        try:
            queue = read_rows(root, table_named("review_queue"), key.partition, run_id)
        except FileNotFoundError:  # a run stored before review queues existed
            queue = []
        queues[run_id] = QueueKeys(
            frozenset(q.case_id for q in queue), frozenset((q.case_id, q.rubric_item) for q in queue)
        )
        roles.update({(run_id, q.case_id, q.rubric_item): q.reviewer_role for q in queue})
    problems = [*labels.problems, *check_labels(file, labels.lines, queues)]
    if problems:  # every problem of the file at once, in line order; nothing of it is stored
        raise InputError(sorted(problems, key=lambda p: p.line or 0))
    in_force = labels_in_force(read_reviews(root))
    imported = [in_force.get((line.run_id, line.case_id, line.rubric_item)) for line in labels.lines]
    if labels.lines and all(
        row is not None and (row.label, row.note) == (line.label, line.note)
        for row, line in zip(imported, labels.lines)
    ):
        imports = ", ".join(sorted({row.import_id for row in imported if row is not None}))
        click.echo(
            f"already imported: the {len(labels.lines)} labels of {file} are those in force (import {imports}); nothing stored"
        )
        return
    import_id = uuid.uuid4().hex[:12]
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    rows = [
        ReviewRow(
            import_id=import_id,
            imported_at=now,
            source=file,
            line=line.line,
            run_id=line.run_id,
            suite=stored[line.run_id].partition,
            case_id=line.case_id,
            rubric_item=line.rubric_item,
            reviewer_role=roles[(line.run_id, line.case_id, line.rubric_item)],
            reviewer=line.reviewer,
            label=line.label,
            note=line.note,
        )
        for line in labels.lines
    ]
    write_reviews(root, import_id, rows)
    export_database(root, store_views())
    passed = sum(r.label == "pass" for r in rows)
    skipped = f"; {labels.unlabelled} unlabelled rows skipped" if labels.unlabelled else ""
    click.echo(
        f"imported {len(rows)} labels ({passed} pass, {len(rows) - passed} fail) of run{'s' if len(queues) > 1 else ''} "
        f"{', '.join(sorted(queues))} as import {import_id}{skipped}"
    )


@review.command(
    "promote", short_help="Publish a run's labelled replies as calibration items of a suite's next version."
)
@click.argument("run_id")
@click.option(
    "--suite", "suite_id", required=True, metavar="ID", help="The registry suite whose calibration set grows."
)
@input_errors
@registry_errors
def review_promote(run_id: str, suite_id: str) -> None:
    """Turn RUN_ID's labelled replies into calibration items (docs/design.md#calibration: id, history, text, reply,
    criterion = the rubric item, label) and publish them as the next minor version of suite ID: the latest version's
    spec with the items added to its calibration set, ids it holds already skipped. The publish names the latest
    version's ETag (If-Match), so a version published meanwhile is never overwritten: the promotion is refused and may
    be run again.

    \b
    Example:
      kindgi-eval review promote 3f9c2a1e --suite demo-academy.pricing
    """
    from kindgi_eval.kinds import cases_of, promoted_items, promotion
    from kindgi_eval.store import SHARED, labels_in_force, read_reviews, read_rows, store_root

    root = store_root()
    ref, run, _ = _human_review_run(root, run_id)
    labels = labels_in_force(read_reviews(root, ref.run_id))
    if not labels:
        raise InputError(
            [
                Problem(
                    "RUN_ID",
                    None,
                    None,
                    f"run {ref.run_id} has no labels yet. Export its queue, label it, and "
                    "import it with: kindgi-eval review import FILE",
                )
            ]
        )
    cases = cases_of(read_rows(root, SHARED.suite, ref.partition, ref.run_id))
    replies = read_rows(root, SHARED.agent_replies, ref.partition, run.replies_from)
    items = [
        i.model_dump(mode="json", exclude_defaults=True) for i in promoted_items(ref.run_id, cases, replies, labels)
    ]
    client = registry_client()
    try:
        plan = promotion(client.suite(suite_id), items)
    except ValueError as e:
        raise InputError([Problem("--suite", None, None, str(e))]) from None
    if not plan.added:
        click.echo(
            f"nothing to promote: the {len(plan.present)} labelled items of run {ref.run_id} are in {suite_id}'s calibration set already"
        )
        return
    try:
        _, stored = client.publish(plan.document, if_match=plan.if_match)
    except InputError as e:
        if "precondition_failed" in str(e):
            raise InputError(
                [
                    *e.problems,
                    Problem(
                        "--suite",
                        None,
                        None,
                        f"a version of {suite_id} was published since it was read; "
                        "nothing was changed. Run kindgi-eval review promote again.",
                    ),
                ]
            ) from None
        raise
    already = f" ({len(plan.present)} already there)" if plan.present else ""
    click.echo(
        f"published {suite_id} {plan.document['version']} with {len(plan.added)} new calibration items{already}: sha256 {stored['hash']}"
    )
