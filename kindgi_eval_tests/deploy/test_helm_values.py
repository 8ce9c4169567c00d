"""deploy/helm/values.yaml against the Dagster chart's own values.schema.json, read where ../shared/ref/dagster-chart/
keeps it (skipped, naming the folder, where it is absent), and against the rules of this deployment.

The schema's `$ref`s to kubernetesjsonschema.dev are Kubernetes' own object schemas, which this machine cannot reach:
each resolves to any object, as the folder's README says. Helm up to 3.17 validates with draft-7 rules (a `$ref` hides
the keywords beside it) and from 3.18 on with 2020-12 rules (it does not): the values must pass both."""

from __future__ import annotations

import json
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import pytest
from jsonschema import Draft7Validator, Draft202012Validator
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.jsonschema import specification_with

from kindgi_eval_tests.conftest import REPO
from kindgi_eval_tests.deploy.cluster_files import (
    CODE_LOCATION_MODULE,
    parse_code_server_start,
    user_deployment,
    values,
)

CHART = REPO.parent / "shared" / "ref" / "dagster-chart"
"""The chart's schema, beside the repository (never copied into it)."""
KUBERNETES_SCHEMAS = "https://kubernetesjsonschema.dev/"
VALIDATORS = [Draft7Validator, Draft202012Validator]
Path = tuple[str | int, ...]


@cache
def chart_schema() -> dict[str, Any]:
    """The chart's values.schema.json."""
    schema = CHART / "values.schema.json"
    if not schema.is_file():
        pytest.skip(f"{CHART}: no values.schema.json here, so the Helm values are not checked against the chart")
    return json.loads(schema.read_text())


def kubernetes_refs(node: Any) -> set[str]:
    """Every `$ref` under node that points at Kubernetes' own schemas."""
    if isinstance(node, dict):
        found = {node["$ref"]} if str(node.get("$ref", "")).startswith(KUBERNETES_SCHEMAS) else set()
        return found.union(*(kubernetes_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(kubernetes_refs(item) for item in node))
    return set()


def any_object_registry(schema: dict[str, Any], validator: type[Validator]) -> Registry:
    """A registry answering each Kubernetes document with a stand-in in which every pointer the schema uses is `{}`."""
    stand_ins: dict[str, dict[str, Any]] = {}
    for ref in kubernetes_refs(schema):
        document, _, pointer = ref.partition("#")
        node = stand_ins.setdefault(document, {})
        for part in pointer.strip("/").split("/"):
            node = node.setdefault(part, {})
    specification = specification_with(validator.META_SCHEMA["$schema"])
    return Registry().with_resources(
        (document, Resource(contents, specification)) for document, contents in stand_ins.items()
    )


@cache
def checker(validator: type[Validator]) -> Validator:
    """The chart's schema under validator's rules, Kubernetes' objects standing in as any object."""
    schema = chart_schema()
    return validator(schema, registry=any_object_registry(schema, validator))


def schema_errors(candidate: dict[str, Any], validator: type[Validator]) -> list[str]:
    """`path: message` for each way candidate breaks the chart's schema under validator's rules."""
    return [
        f"{place(tuple(error.absolute_path))}: {error.message}" for error in checker(validator).iter_errors(candidate)
    ]


def resolved(node: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """node with its `$ref` into the schema's own definitions followed."""
    while str(node.get("$ref", "")).startswith("#/"):
        target: Any = schema
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = target
    return node


def unknown_keys(value: Any, node: dict[str, Any], schema: dict[str, Any], at: Path = ()) -> list[str]:
    """Where value holds a key that the schema's object at that place does not name.

    The schema refuses such a key only where `additionalProperties` is false; elsewhere the chart would ignore it
    silently (a misspelt key does nothing). An object the schema gives no properties (a Kubernetes object, a map of
    labels) holds any key."""
    node = resolved(node, schema)
    branches = [resolved(branch, schema) for branch in node.get("anyOf", [])] or [node]
    problems: list[str] = []
    if isinstance(value, dict):
        named = {key: sub for branch in branches for key, sub in branch.get("properties", {}).items()}
        for key, item in value.items():
            if key in named:
                problems += unknown_keys(item, named[key], schema, (*at, key))
            elif named:
                problems.append(".".join(map(str, (*at, key))))
    elif isinstance(value, list):
        items = next((branch["items"] for branch in [node, *branches] if isinstance(branch.get("items"), dict)), None)
        for index, item in enumerate(value):
            if items is not None:
                problems += unknown_keys(item, items, schema, (*at, index))
    return problems


def place(value: Any) -> str:
    """A test id: a path as dotted keys, anything else as pytest would name it."""
    if isinstance(value, tuple):
        return ".".join(map(str, value)) or "(top)"
    return getattr(value, "__name__", str(value))


def edited(path: Path, change: str) -> dict[str, Any]:
    """The values with one key added under path (`add`) or the key at path removed (`remove`)."""
    candidate = values()
    node: Any = candidate
    for part in path[:-1] if change == "remove" else path:
        node = node[part]
    if change == "remove":
        del node[path[-1]]
    else:
        node["notAKeyOfTheChart"] = True
    return candidate


@pytest.mark.parametrize("validator", VALIDATORS, ids=place)
def test_the_values_file_validates_on_its_own(validator: type[Validator]) -> None:
    assert schema_errors(values(), validator) == []


def test_the_stand_ins_answer_every_kubernetes_ref() -> None:
    # the README counts 20 such refs; 16 distinct targets
    assert len(kubernetes_refs(chart_schema())) == 16


def test_every_key_of_the_values_file_is_one_the_chart_names() -> None:
    schema = chart_schema()
    assert unknown_keys(values(), schema, schema) == []


# Where a key the chart does not know is refused by the schema itself (additionalProperties: false) and where only
# unknown_keys finds it: there the chart would take the file and ignore the key.
UNKNOWN_KEY_PLACES: list[tuple[Path, bool]] = [
    (("dagsterWebserver",), True),
    (("dagsterDaemon",), True),
    (("dagsterDaemon", "runCoordinator", "config", "queuedRunCoordinator"), True),
    (("dagsterDaemon", "runCoordinator", "config", "queuedRunCoordinator", "tagConcurrencyLimits", 0), True),
    (("runLauncher",), True),
    (("runLauncher", "config", "k8sRunLauncher"), True),
    (("computeLogManager",), True),
    (("computeLogManager", "config"), True),
    (("retention",), True),
    ((), False),  # the top level: a misspelt block is taken, and the chart's defaults stand in for it
    (("dagster-user-deployments",), False),
    (("dagster-user-deployments", "deployments", 0), False),  # e.g. `codeServerArg` would be ignored
    (("postgresql",), False),
    (("computeLogManager", "config", "s3ComputeLogManager"), False),
    (("global",), False),
    (("dagsterDaemon", "sensors"), False),
]


@pytest.mark.parametrize("path, schema_refuses", UNKNOWN_KEY_PLACES, ids=place)
def test_a_key_the_chart_does_not_know_fails(path: Path, schema_refuses: bool) -> None:
    candidate = edited(path, "add")
    schema = chart_schema()
    assert unknown_keys(candidate, schema, schema) == [".".join(map(str, (*path, "notAKeyOfTheChart")))]
    for validator in VALIDATORS:
        assert bool(schema_errors(candidate, validator)) is schema_refuses, validator.__name__


REQUIRED_KEYS: list[Path] = [
    ("dagsterDaemon",),
    ("runLauncher", "config", "k8sRunLauncher", "envSecrets"),
    # the chosen type makes its block required (the schema's if/then)
    ("runLauncher", "config", "k8sRunLauncher"),
    ("dagsterDaemon", "runCoordinator", "config", "queuedRunCoordinator"),
    ("computeLogManager", "config", "s3ComputeLogManager"),
    ("computeLogManager", "config", "s3ComputeLogManager", "bucket"),
    ("postgresql", "postgresqlHost"),
    ("dagster-user-deployments", "deployments", 0, "port"),
    ("dagster-user-deployments", "deployments", 0, "image", "pullPolicy"),
    ("global", "postgresqlSecretName"),
]


@pytest.mark.parametrize("path", REQUIRED_KEYS, ids=place)
@pytest.mark.parametrize("validator", VALIDATORS, ids=place)
def test_a_required_key_left_out_fails(path: Path, validator: type[Validator]) -> None:
    assert schema_errors(edited(path, "remove"), validator) != []


def test_the_schema_does_not_require_the_run_limit_so_the_file_sets_it() -> None:
    # without maxConcurrentRuns the chart's queue runs everything at once: the schema accepts that, this file must not
    path = ("dagsterDaemon", "runCoordinator", "config", "queuedRunCoordinator", "maxConcurrentRuns")
    assert schema_errors(edited(path, "remove"), Draft202012Validator) == []
    queue = values()["dagsterDaemon"]["runCoordinator"]
    assert queue["enabled"] and queue["type"] == "QueuedRunCoordinator"
    limit = queue["config"]["queuedRunCoordinator"]["maxConcurrentRuns"]
    assert isinstance(limit, int) and limit > 0


def test_no_limit_counts_runs_per_provider_the_gateway_paces_them() -> None:
    limits = values()["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]["tagConcurrencyLimits"]
    assert [(limit["key"], limit["limit"]) for limit in limits] == [("kindgi/tenant", 1)]
    assert limits[0]["value"] == {"applyLimitPerUniqueValue": True}


def test_each_run_is_a_kubernetes_job_with_its_code_locations_config() -> None:
    chart = values()
    assert chart["runLauncher"]["type"] == "K8sRunLauncher"
    assert user_deployment(chart)["includeConfigInLaunchedRuns"] == {"enabled": True}


def test_the_instance_is_an_external_postgresql_whose_password_is_a_secret() -> None:
    chart = values()
    assert chart["postgresql"]["enabled"] is False and chart["postgresql"]["postgresqlHost"]
    assert chart["generatePostgresqlPasswordSecret"] is False and chart["global"]["postgresqlSecretName"]
    assert chart["postgresql"]["postgresqlPassword"] == ""  # never a password in the file


def test_compute_logs_go_to_the_stores_object_storage() -> None:
    chart = values()
    env = user_deployment(chart)["env"]
    logs = chart["computeLogManager"]
    store = urlsplit(env["KINDGI_STORE"])
    assert logs["type"] == "S3ComputeLogManager" and store.scheme == "s3"
    assert logs["config"]["s3ComputeLogManager"]["bucket"] == store.netloc
    assert logs["config"]["s3ComputeLogManager"]["endpointUrl"] == env["AWS_ENDPOINT_URL"]


def test_the_code_server_serves_the_code_location_module() -> None:
    deployment = user_deployment(values())
    # the chart starts `dagster code-server start -h 0.0.0.0 -p PORT` followed by codeServerArgs
    params = parse_code_server_start(["-h", "0.0.0.0", "-p", str(deployment["port"]), *deployment["codeServerArgs"]])
    assert params["module_name"] == CODE_LOCATION_MODULE and params["port"] == deployment["port"]


def test_unknown_keys_reads_an_anyof_branch_and_a_map_of_strings() -> None:
    schema = chart_schema()
    chart = values()
    # a tag limit's value is a string or an object of one key (anyOf); labels are a map of any keys
    chart["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]["tagConcurrencyLimits"][0]["value"] = {
        "applyLimitPerUniqueValue": True,
        "perValue": True,
    }
    chart["dagsterDaemon"]["labels"] = {"any-label": "x"}
    assert unknown_keys(chart, schema, schema) == [
        "dagsterDaemon.runCoordinator.config.queuedRunCoordinator.tagConcurrencyLimits.0.value.perValue"
    ]
