"""What a person reads of stored runs: the run report, the JSON summary, JUnit XML, run diffs, query rows as text. Imports rules, store."""

from typing import TYPE_CHECKING

from kindgi_eval.rules import lazy_names

if TYPE_CHECKING:
    from kindgi_eval.reports.diff import StoredRun, diff_runs, got_worse, latest_pair, matching_run_ids, render_diff
    from kindgi_eval.reports.html_report import RunPage, render_html
    from kindgi_eval.reports.judged import (
        group_rates,
        judge_error_text,
        labels_advice,
        pass_rate_corrected,
        summary_rate_lines,
    )
    from kindgi_eval.reports.junit import junit_xml
    from kindgi_eval.reports.night import (
        Night,
        SuiteBlock,
        TenantNight,
        night_of,
        render_night,
        slack_message,
        tenant_lines,
        webhook_json,
    )
    from kindgi_eval.reports.reading import pass_rate, run_result
    from kindgi_eval.reports.review_export import review_csv, review_jsonl
    from kindgi_eval.reports.rows_text import format_rows
    from kindgi_eval.reports.run_report import case_marks, first_error_lines, kind_lines, render, summary_json
    from kindgi_eval.reports.verdict_markdown import escape_md, verdicts_markdown

__getattr__ = lazy_names(__name__, __file__)

__all__ = [
    "format_rows",
    "group_rates",
    "judge_error_text",
    "labels_advice",
    "pass_rate_corrected",
    "summary_rate_lines",
    "case_marks",
    "escape_md",
    "kind_lines",
    "pass_rate",
    "run_result",
    "review_csv",
    "review_jsonl",
    "RunPage",
    "StoredRun",
    "diff_runs",
    "got_worse",
    "junit_xml",
    "latest_pair",
    "matching_run_ids",
    "render",
    "render_diff",
    "render_html",
    "summary_json",
    "verdicts_markdown",
    "first_error_lines",
    "Night",
    "SuiteBlock",
    "TenantNight",
    "night_of",
    "render_night",
    "slack_message",
    "tenant_lines",
    "webhook_json",
]
