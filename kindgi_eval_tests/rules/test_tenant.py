"""Tenant configuration: the packaged demo tenant loads, and every kind of bad tenant.toml is refused clearly."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from kindgi_eval.inputs.tenant_file import DEMO_CONFIG_DIR, TENANT_FILE, field_lines, load_tenant
from kindgi_eval.rules.errors import InputError, Problem
from kindgi_eval.rules.tenant import FormatRules, Tenant

DEMO_TEXT = (DEMO_CONFIG_DIR / TENANT_FILE).read_text()


def write_config(folder: Path, text: str) -> str:
    """A tenant folder holding `text` as its tenant.toml; returned as the string a user would type."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / TENANT_FILE).write_text(text)
    return str(folder)


def replaced(old: str, new: str, text: str = DEMO_TEXT) -> str:
    """The demo config with exactly one edit, so line numbers stay those of the shipped file."""
    assert text.count(old) == 1, f"edit target {old!r} must appear exactly once"
    return text.replace(old, new)


def line_of(snippet: str, text: str = DEMO_TEXT, occurrence: int = 0) -> int:
    """The 1-based line of the n-th line holding `snippet`."""
    return [n for n, line in enumerate(text.splitlines(), start=1) if snippet in line][occurrence]


def problems_of(config_dir: str) -> tuple[Problem, ...]:
    with pytest.raises(InputError) as raised:
        load_tenant(config_dir)
    return raised.value.problems


# The demo tenant


def test_demo_tenant_loads_by_default() -> None:
    loaded = load_tenant(None)
    assert loaded.tenant.tenant == "demo-academy"
    assert loaded.config_dir == str(DEMO_CONFIG_DIR)
    assert loaded.hash == hashlib.sha256((DEMO_CONFIG_DIR / TENANT_FILE).read_bytes()).hexdigest()


def test_demo_tenant_shape_holds_what_the_golden_set_relies_on_009() -> None:
    tenant = load_tenant(None).tenant
    assert tenant.stage_names() == ("opening", "discovery", "offer", "payment", "enrolment")
    foundation = tenant.course("foundation")
    assert foundation is not None
    assert foundation.prices["upfront"] == "$450"
    assert foundation.schedule.startswith("Tuesdays and Thursdays")
    assert foundation.enrol_url == "https://example.com/enrol/foundation"
    assert all(c.enrol_url.startswith("https://example.com/enrol/") for c in tenant.courses)
    assert len({c.id for c in tenant.courses}) == 3
    assert {"refund_request", "human_requested", "course_change_after_offer"} <= {e.reason for e in tenant.escalations}
    switch = next(e for e in tenant.escalations if e.reason == "course_change_after_offer")
    assert switch.after_stage == "offer"
    assert tenant.format == FormatRules(max_lines=4, closing_question=True)
    assert tenant.prohibitions


def test_unknown_course_is_none() -> None:
    assert load_tenant(None).tenant.course("no-such-course") is None


def test_catalogue_text_renders_every_course_and_price() -> None:
    tenant = load_tenant(None).tenant
    text = tenant.catalogue_text()
    for course in tenant.courses:
        assert course.name in text and course.schedule in text and course.enrol_url in text
        for path, figure in course.prices.items():
            assert f"{path}: {figure}" in text


def test_load_from_a_folder_as_written(tmp_path: Path) -> None:
    folder = write_config(tmp_path / "mine", DEMO_TEXT)
    loaded = load_tenant(folder)
    assert loaded.config_dir == folder
    assert loaded.tenant == load_tenant(None).tenant
    assert load_tenant(Path(folder)).hash == loaded.hash


def test_hash_changes_with_the_file(tmp_path: Path) -> None:
    first = load_tenant(write_config(tmp_path / "a", DEMO_TEXT)).hash
    second = load_tenant(write_config(tmp_path / "b", DEMO_TEXT + "\n# a comment\n")).hash
    assert first != second


# Files that cannot be read


def test_missing_folder(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere")
    (problem,) = problems_of(missing)
    assert problem.file == missing
    assert "no such tenant folder" in problem.message and "CONFIG_DIR" in problem.message


def test_missing_file(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (problem,) = problems_of(str(tmp_path / "empty"))
    assert problem.file == os.path.join(str(tmp_path / "empty"), "tenant.toml")
    assert "file not found" in problem.message


def test_unreadable_file(tmp_path: Path) -> None:
    # A folder where the file should be: unreadable for everyone, root included.
    (tmp_path / "odd" / TENANT_FILE).mkdir(parents=True)
    (problem,) = problems_of(str(tmp_path / "odd"))
    assert problem.file.endswith("tenant.toml")
    assert "cannot be read" in problem.message


def test_file_named_as_the_user_wrote_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path / "conf", "tenant = 'x'\n")
    problems = problems_of("conf/")
    assert {p.file for p in problems} == {"conf/tenant.toml"}


def test_not_utf8(tmp_path: Path) -> None:
    (tmp_path / TENANT_FILE).write_bytes(b'display_name = "caf\xe9"\n')
    (problem,) = problems_of(str(tmp_path))
    assert "not UTF-8" in problem.message


def test_toml_syntax_error_names_its_line(tmp_path: Path) -> None:
    text = replaced("max_lines = 4", "max_lines = ")
    (problem,) = problems_of(write_config(tmp_path, text))
    assert problem.line == line_of("max_lines = ")
    assert problem.message.startswith("not valid TOML:") and "column" in problem.message
    assert "(at line" not in problem.message  # the line lives in the Problem, not twice in the text


def test_toml_duplicate_key(tmp_path: Path) -> None:
    text = replaced('tenant = "demo-academy"', 'tenant = "demo-academy"\ntenant = "again"')
    (problem,) = problems_of(write_config(tmp_path, text))
    assert problem.line == line_of('tenant = "again"', text)


# Files that parse but say the wrong thing


def test_every_schema_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = replaced('tenant = "demo-academy"', 'tenant = "Demo Academy"')
    text = replaced('style = "Warm', 'colour = "teal"\nstyle = "Warm', text)
    text = replaced('schedule = "Saturdays, 10am to 4pm"\n', "", text)
    problems = {p.field: p for p in problems_of(write_config(tmp_path, text))}
    assert set(problems) == {"tenant", "persona.colour", "courses[2].schedule"}
    assert problems["tenant"].line == line_of('tenant = "Demo Academy"', text)
    assert problems["tenant"].message == (
        "'Demo Academy' is not lowercase letters, digits and hyphens. Write it like 'demo-academy'."
    )
    assert problems["persona.colour"].line == line_of("colour =", text)
    assert "unknown field" in problems["persona.colour"].message
    # A missing key has no line of its own: the error points at the table it belongs in.
    assert problems["courses[2].schedule"].line == line_of("[[courses]]", text, occurrence=2)
    assert problems["courses[2].schedule"].message == "required field is missing"
    assert all(p.file.endswith("tenant.toml") for p in problems.values())


def test_wrong_type_names_the_field(tmp_path: Path) -> None:
    text = replaced("max_lines = 4", 'max_lines = "four"')
    (problem,) = problems_of(write_config(tmp_path, text))
    assert (problem.field, problem.line) == ("format.max_lines", line_of("max_lines ="))


def test_inline_price_table_problem_points_at_its_line(tmp_path: Path) -> None:
    text = replaced('prices = { upfront = "$900"', 'prices = { "Up Front" = "$900"')
    (problem,) = problems_of(write_config(tmp_path, text))
    assert problem.field is not None and problem.field.startswith("courses[2].prices")
    assert problem.line == line_of('"Up Front"', text)


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        # after_stage must name a stage of the funnel
        ('after_stage = "offer"', 'after_stage = "quote"', "escalations[3].after_stage", "names no funnel stage"),
        # course ids are unique: the second `data` is the duplicate
        ('id = "frontend"', 'id = "data"', "courses[2].id", "used twice"),
        # stage names are unique
        ('name = "payment"', 'name = "offer"', "funnel[3].name", "named twice"),
        # the safe answer may not say what the prohibition forbids
        (
            "We don't promise jobs",
            "We guarantee you a job! We don't promise jobs",
            "prohibitions[0].safe_answer",
            "forbidden phrase",
        ),
    ],
    ids=["after-stage-unknown", "duplicate-course-id", "duplicate-stage", "safe-answer-forbidden"],
)
def test_cross_references(tmp_path: Path, old: str, new: str, field: str, words: str) -> None:
    text = replaced(old, new)
    problems = problems_of(write_config(tmp_path, text))
    matching = [p for p in problems if p.field == field and words in p.message]
    assert matching, problems
    problem = matching[0]
    assert problem.line == line_of(new.split("\n")[0][:20], text, occurrence=-1)


def test_configured_copy_must_keep_the_format_rule(tmp_path: Path) -> None:
    # The refund message is sent verbatim, so it must fit the tenant's own max_lines.
    text = replaced("max_lines = 4", "max_lines = 1")
    text = replaced("message = \"I'm sorry to hear that. ", "message = \"I'm sorry to hear that.\\n", text)
    (problem,) = problems_of(write_config(tmp_path, text))
    assert problem.field == "escalations[0].message"
    assert "more than format.max_lines (1)" in problem.message


def test_empty_funnel_is_refused(tmp_path: Path) -> None:
    start, end = DEMO_TEXT.index("[[funnel]]"), DEMO_TEXT.index("[[courses]]")
    # A top-level key must come before the first table, so the empty funnel opens the file.
    text = "funnel = []\n" + DEMO_TEXT[:start] + DEMO_TEXT[end:]
    problems = problems_of(write_config(tmp_path, text))
    assert [p.field for p in problems] == ["funnel"]
    assert problems[0].line == line_of("funnel = []", text)


def test_every_cross_reference_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = replaced('after_stage = "offer"', 'after_stage = "quote"')
    text = replaced('id = "frontend"', 'id = "data"', text)
    fields = {p.field for p in problems_of(write_config(tmp_path, text))}
    assert fields == {"escalations[3].after_stage", "courses[2].id"}


def test_tenant_model_refuses_cross_reference_errors_directly() -> None:
    data = load_tenant(None).tenant.model_dump()
    data["escalations"][0]["after_stage"] = "nowhere"
    with pytest.raises(ValidationError, match=r"escalations\[0\]\.after_stage"):
        Tenant.model_validate(data)


def test_tenant_is_frozen() -> None:
    tenant = load_tenant(None).tenant
    with pytest.raises(ValidationError):
        tenant.tenant = "other"  # type: ignore[misc]


def test_field_lines_follow_tables_and_arrays() -> None:
    text = '# c\ntop = 1\n[a]\nb = 2\n[[xs]]\nk = 1\n[xs.sub]\nv = 2\n[[xs]]\nk = 3\nlist = [\n  "q = 1",\n]\n'
    lines = field_lines(text)
    assert lines == {
        "top": 2, "a": 3, "a.b": 4, "xs[0]": 5, "xs[0].k": 6, "xs[0].sub": 7, "xs[0].sub.v": 8,
        "xs[1]": 9, "xs[1].k": 10, "xs[1].list": 11,
    }  # fmt: skip
