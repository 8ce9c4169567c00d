"""The whole tenants file checked before a night: every entry, its folders, its tenant.toml (and that it names the
same tenant), and every suite folder against its tenant. Reads files only."""

from __future__ import annotations

from pathlib import Path

from kindgi_eval.inputs.suite_folder import ModelsOf, load_checked_suite
from kindgi_eval.inputs.tenant_file import TENANT_FILE, LoadedTenant, load_tenant
from kindgi_eval.inputs.tenants_file import load_tenants
from kindgi_eval.rules import InputError, Problem


def check_tenants(path: str | Path, models_of: ModelsOf) -> list[str]:
    """A line per suite that is well, as `validate` prints them; InputError with every problem of the file's entries,
    and then, when they parse, of every tenant.toml and suite folder they name. A suite read from the registry is
    checked when its run starts."""
    tenants = load_tenants(path)
    problems: list[Problem] = []
    ok: list[str] = []
    configs: dict[Path | None, LoadedTenant | None] = {}
    for s in tenants.suites:
        if s.config_dir not in configs:
            try:
                configs[s.config_dir] = load_tenant(s.config_dir)
            except InputError as e:
                configs[s.config_dir] = None
                problems += e.problems
                continue
            named = configs[s.config_dir].tenant.tenant
            if named != s.tenant:
                where = str(Path(s.config_dir or ".") / TENANT_FILE)
                problems.append(
                    Problem(
                        tenants.source,
                        None,
                        "name",
                        f"tenant {s.tenant}: its {where} names tenant {named!r}. "
                        "Make the entry's name and the tenant.toml's tenant the same.",
                    )
                )
        loaded = configs[s.config_dir]
        if loaded is None:
            continue
        if s.registry is not None:
            ok.append(f"ok: {s.key}: registered suite {s.registry}, checked when its run starts")
            continue
        try:
            suite = load_checked_suite(s.eval_dir, loaded, models_of=models_of)
        except InputError as e:
            problems += e.problems
            continue
        ok.append(f"ok: {s.key}: {len(suite.cases)} cases, {len(suite.calibration)} calibration items")
    if problems:
        raise InputError(problems)
    return ok
