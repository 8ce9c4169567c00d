"""The cluster's files under deploy/, read for the tests beside this module: the Helm values, the user-code image's
Dockerfile, the gateway's manifests, and the list of Secrets that docs/dagster.md documents; and the installed
`dagster code-server start`, to parse a command line with. Reads files, starts nothing."""

from __future__ import annotations

import copy
import re
import tomllib
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, NamedTuple

import click
import yaml

from kindgi_eval_tests.conftest import REPO

VALUES = REPO / "deploy" / "helm" / "values.yaml"
DOCKERFILE = REPO / "deploy" / "Dockerfile"
GATEWAY = REPO / "deploy" / "k8s" / "gateway.yaml"
DOCS = REPO / "docs" / "dagster.md"
CODE_LOCATION_MODULE = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["dagster"]["module_name"]
"""The module of the code location, as pyproject.toml's [tool.dagster] names it for `dagster dev`."""
SECRETS_HEADING = "### Secrets"
"""The heading, in docs/dagster.md, of the table of every Secret the cluster's files name."""
TABLE_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|([^|]*)\|")


@cache
def _parsed(path: Path) -> list[Any]:
    """Every YAML document of a file, parsed once per test process."""
    return [doc for doc in yaml.load_all(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if doc]


def values() -> dict[str, Any]:
    """deploy/helm/values.yaml as the chart receives it (a copy of its own, for a test to edit)."""
    (document,) = _parsed(VALUES)
    return copy.deepcopy(document)


def user_deployment(values: dict[str, Any]) -> dict[str, Any]:
    """The one code location the values deploy."""
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    return deployment


def gateway_objects() -> dict[str, dict[str, Any]]:
    """Each object of deploy/k8s/gateway.yaml by its kind (one of each)."""
    objects = copy.deepcopy(_parsed(GATEWAY))
    by_kind = {doc["kind"]: doc for doc in objects}
    assert len(by_kind) == len(objects), f"{GATEWAY}: one object of each kind, not {[o['kind'] for o in objects]}"
    return by_kind


def documented_secrets(text: str) -> dict[str, set[str]]:
    """Each Secret of the table under SECRETS_HEADING, with the keys its second column names."""
    _, found, after = text.partition(f"\n{SECRETS_HEADING}\n")
    assert found, f"{DOCS}: no heading {SECRETS_HEADING!r}"
    secrets: dict[str, set[str]] = {}
    for line in after.split("\n#", 1)[0].splitlines():
        match = TABLE_ROW.match(line)
        if match:
            secrets[match.group(1)] = set(re.findall(r"`([^`]+)`", match.group(2)))
    return secrets


class Instruction(NamedTuple):
    """One Dockerfile instruction, its continuation lines joined."""

    line: int
    """The line it starts on, from 1."""
    keyword: str
    """FROM, RUN, COPY, USER, CMD, ... in upper case."""
    argument: str
    """The rest of the instruction, continuation backslashes and line breaks replaced by spaces."""


def dockerfile_instructions(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile in order, comments and blank lines left out."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if not pending:
            start = number
        pending.append(line[:-1] if line.endswith("\\") else line)
        if not line.endswith("\\"):
            keyword, _, argument = " ".join(pending).partition(" ")
            instructions.append(Instruction(start, keyword.upper(), " ".join(argument.split())))
            pending = []
    return instructions


def parse_code_server_start(args: list[str]) -> dict[str, Any]:
    """The parameters the installed `dagster code-server start` reads from args; click.UsageError when it refuses them.

    The command is the one the `dagster` script runs (its entry point's module holds the click group that main()
    calls), parsed in this process rather than started: the flags and their types are checked, nothing is served."""
    (script,) = entry_points(group="console_scripts", name="dagster")
    group = import_module(script.module).cli
    context = click.Context(group)
    start = group.get_command(context, "code-server").get_command(context, "start")
    return start.make_context("start", list(args)).params
