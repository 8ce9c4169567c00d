"""A setting is one row of `SETTINGS`: a row added there, and nowhere else, is an option of `run`, a variable, a
tenants-file key, a field of the launchpad's resource and a field of the run's settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kindgi_eval.inputs.settings import SETTINGS, Setting, setting_fields

NEW_ROW = 'Setting("retry_budget", "EVAL_RETRY_BUDGET", "int", 3, "Retries a case may spend.", low=0, high=9, per_tenant=True, tenant_env=True)'
"""The row the test adds: a tenant's tuning, read from its variable where the tenants file leaves it unset."""

# Run in a process of its own: the settings module is executed from its own source with the row appended to the
# table, before anything else of the package imports it, so every face is built from the longer table.
PROBE = """
import json, sys
from pathlib import Path
import importlib.util

import kindgi_eval

source = Path(kindgi_eval.__file__).parent / "inputs" / "settings.py"
text = source.read_text()
anchor = "\\nSETTING = {s.field: s for s in SETTINGS}"
assert anchor in text, "the table's index moved: update the anchor"
text = text.replace(anchor, "\\nSETTINGS = (*SETTINGS, " + sys.argv[1] + ")" + anchor)
spec = importlib.util.spec_from_file_location("kindgi_eval.inputs.settings", source)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
exec(compile(text, str(source), "exec"), module.__dict__)

from click.testing import CliRunner

from kindgi_eval.cli.main import main
from kindgi_eval.defs.resources import LAUNCHPAD_FIELDS, EvalSettings, pinned_settings, pinned_tags
from kindgi_eval.inputs import RunSettings, resolve_settings
from kindgi_eval.inputs.tenants_file import TenantEntry, parse_tenants
from kindgi_eval.rules import InputError

folder = Path(sys.argv[2])
(folder / "home" / "evals" / "golden").mkdir(parents=True)
(folder / "home" / "evals" / "golden" / "cases.jsonl").write_text("")
entry = '[[tenant]]\\nname = "demo-academy"\\nhome = "home"\\nsuites = ["evals/golden"]\\nagent_model = "mock:agent"\\n'
out = {}
runner = CliRunner()
out["help"] = runner.invoke(main, ["run", "--help"]).output
refused = runner.invoke(main, ["run", "--mock", "--retry-budget", "12"])
out["flag_refused"] = [refused.exit_code, refused.output]
out["default"] = RunSettings().retry_budget
out["from_env"] = resolve_settings({}, {"EVAL_RETRY_BUDGET": "5"}).retry_budget
out["flag_over_env"] = resolve_settings({"retry_budget": 2}, {"EVAL_RETRY_BUDGET": "5"}).retry_budget
try:
    resolve_settings({}, {"EVAL_RETRY_BUDGET": "many"})
except InputError as e:
    out["env_refused"] = [str(p) for p in e.problems]
tenants = parse_tenants((entry + "retry_budget = 7\\n").encode(), folder / "tenants.toml")
out["tenant_key"] = tenants.suites[0].settings(environ={"EVAL_RETRY_BUDGET": "5"}).retry_budget
tenants = parse_tenants(entry.encode(), folder / "tenants.toml")
out["tenant_env"] = tenants.suites[0].settings(environ={"EVAL_RETRY_BUDGET": "5"}).retry_budget
try:
    parse_tenants((entry + "retry_budget = 70\\n").encode(), folder / "tenants.toml")
except InputError as e:
    out["tenant_refused"] = [str(p) for p in e.problems]
out["launchpad"] = ["retry_budget" in EvalSettings.model_fields, "retry_budget" in LAUNCHPAD_FIELDS]
out["launchpad_override"] = EvalSettings(retry_budget=4).retry_budget
out["pinned"] = pinned_settings(pinned_tags(resolve_settings({"retry_budget": 6}, {}))).retry_budget
out["entry_field"] = "retry_budget" in TenantEntry.model_fields
print(json.dumps(out))
"""


def test_a_row_added_to_the_table_is_a_setting_on_every_face(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, NEW_ROW, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    help_text = " ".join(out["help"].split())  # click wraps the help to its width
    assert (
        "--retry-budget" in help_text and "Retries a case may spend. [env: EVAL_RETRY_BUDGET; default: 3]" in help_text
    )
    assert out["flag_refused"][0] == 2 and "--retry-budget" in out["flag_refused"][1]  # the row's range, on the flag
    assert (out["default"], out["from_env"], out["flag_over_env"]) == (3, 5, 2)
    assert out["env_refused"] == ["EVAL_RETRY_BUDGET: 'many' is not a whole number"]
    assert (out["tenant_key"], out["tenant_env"]) == (7, 5)  # the entry's key over the variable, else the variable
    (problem,) = out["tenant_refused"]
    assert problem.endswith(
        "tenants.toml:6: field tenant[0].retry_budget: tenant demo-academy: 70 must be a whole number from 0 to 9"
    )
    assert out["launchpad"] == [True, True] and out["launchpad_override"] == 4
    assert out["pinned"] == 6 and out["entry_field"] is True


def test_an_overriding_face_leaves_every_setting_unset_and_the_run_takes_the_default() -> None:
    # (row, optional) -> (type accepts None, default)
    rows = {s.field: s for s in SETTINGS}
    cases = [
        (rows["concurrency"], False, (False, 8)),  # the run's settings: the table's default
        (rows["concurrency"], True, (True, None)),  # the tenants file and the launchpad: unset, so not an override
        (rows["config_dir"], False, (True, None)),  # no default: None is the value
        (rows["judge_batch"], False, (False, False)),  # a default of false is still a default
    ]
    for row, optional, (accepts_none, default) in cases:
        ((annotation, field),) = setting_fields([row], optional=optional).values()
        assert (type(None) in getattr(annotation, "__args__", ()), field.default) == (accepts_none, default), row.field
        assert field.description == row.help


def test_the_new_row_is_a_well_formed_row() -> None:
    # Guards the test above against a row the table's own type would refuse.
    row = eval(NEW_ROW, {"Setting": Setting})  # noqa: S307 - the test's own literal
    assert row.flag == "--retry-budget" and row.field not in {s.field for s in SETTINGS}
