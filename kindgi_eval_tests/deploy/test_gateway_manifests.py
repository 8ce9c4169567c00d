"""deploy/k8s/gateway.yaml's wiring, read as data (no cluster here): the Service reaches the Deployment's pods on the
proxy's port, the runs' KINDGI_GATEWAY_URL names that Service, the proxy reads the ConfigMap's config and finds every
key it names in its environment, and every Secret the cluster's files name is one docs/dagster.md lists, with the
keys they read."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import yaml

from kindgi_eval_tests.conftest import REPO
from kindgi_eval_tests.deploy.cluster_files import (
    DOCS,
    documented_secrets,
    gateway_objects,
    user_deployment,
    values,
)

DEPLOY = REPO / "deploy"
PINNED_TAG = re.compile(r":main-v\d+\.\d+\.\d+$")
"""LiteLLM's image of one release; never `main-latest` or `main-stable`."""


def container() -> dict[str, Any]:
    """The gateway's one container."""
    (proxy,) = gateway_objects()["Deployment"]["spec"]["template"]["spec"]["containers"]
    return proxy


def flag(args: list[str], name: str) -> str:
    """The value given to a flag of the proxy's command line."""
    return args[args.index(name) + 1]


def proxy_config() -> dict[str, Any]:
    """The proxy's config file, as the ConfigMap holds it."""
    return yaml.safe_load(gateway_objects()["ConfigMap"]["data"]["config.yaml"])


def secrets_named(node: Any) -> dict[str, set[str]]:
    """Each Secret a manifest or values node names (an envFrom secretRef, a secretKeyRef, the chart's envSecrets),
    with the keys it reads by name (none for a Secret read whole)."""
    named: dict[str, set[str]] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "secretKeyRef":
                named.setdefault(value["name"], set()).add(value["key"])
            elif key == "secretRef":
                named.setdefault(value["name"], set())
            elif key == "envSecrets":
                for secret in value:
                    named.setdefault(secret["name"], set())
            else:
                for name, keys in secrets_named(value).items():
                    named.setdefault(name, set()).update(keys)
    elif isinstance(node, list):
        for item in node:
            for name, keys in secrets_named(item).items():
                named.setdefault(name, set()).update(keys)
    return named


def cluster_secrets() -> dict[str, set[str]]:
    """Every Secret the values and the gateway's manifests name, with the keys they read by name."""
    chart = values()
    named = secrets_named(chart)
    # the chart reads the instance's password from this Secret under a fixed key
    named.setdefault(chart["global"]["postgresqlSecretName"], set()).add("postgresql-password")
    for name, keys in secrets_named(list(gateway_objects().values())).items():
        named.setdefault(name, set()).update(keys)
    return named


def test_the_service_selects_the_deployments_pods() -> None:
    objects = gateway_objects()
    pod_labels = objects["Deployment"]["spec"]["template"]["metadata"]["labels"]
    selector = objects["Service"]["spec"]["selector"]
    assert selector and selector.items() <= pod_labels.items()
    assert objects["Deployment"]["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_the_service_port_reaches_the_port_the_proxy_listens_on() -> None:
    (port,) = gateway_objects()["Service"]["spec"]["ports"]
    ports = {p["name"]: p["containerPort"] for p in container()["ports"]}
    target = port["targetPort"]
    assert (ports[target] if isinstance(target, str) else target) == int(flag(container()["args"], "--port"))


def test_the_runs_gateway_url_names_the_service_and_its_port() -> None:
    url = urlsplit(user_deployment(values())["env"]["KINDGI_GATEWAY_URL"])
    service = gateway_objects()["Service"]
    (port,) = service["spec"]["ports"]
    assert (url.scheme, url.hostname, url.port) == ("http", service["metadata"]["name"], port["port"])


def test_the_proxy_reads_the_configmaps_config() -> None:
    objects = gateway_objects()
    config = flag(container()["args"], "--config")
    mounts = {m["name"]: m["mountPath"] for m in container()["volumeMounts"]}
    volumes = {v["name"]: v for v in objects["Deployment"]["spec"]["template"]["spec"]["volumes"]}
    (name,) = [name for name, path in mounts.items() if config.startswith(f"{path}/")]
    assert volumes[name]["configMap"]["name"] == objects["ConfigMap"]["metadata"]["name"]
    assert config.rsplit("/", 1)[1] in objects["ConfigMap"]["data"]


def test_the_image_is_one_litellm_release() -> None:
    assert PINNED_TAG.search(container()["image"]), container()["image"]


def test_each_provider_has_one_wildcard_with_its_limits() -> None:
    entries = proxy_config()["model_list"]
    providers = [entry["model_name"].split("/", 1)[0] for entry in entries]
    assert len(set(providers)) == len(providers) >= 1  # a second entry for a provider would be a second budget
    for entry in entries:
        params = entry["litellm_params"]
        assert entry["model_name"].endswith("/*") and params["model"] == entry["model_name"]
        assert params["api_key"].startswith("os.environ/")
        assert all(isinstance(params[k], int) and params[k] > 0 for k in ("rpm", "tpm", "max_parallel_requests"))


def test_every_key_the_config_reads_is_in_the_proxys_environment() -> None:
    documented = documented_secrets(DOCS.read_text())
    proxy = container()
    environment = {variable["name"] for variable in proxy.get("env", [])}
    for source in proxy.get("envFrom", []):
        environment |= documented[source["secretRef"]["name"]]
    read = set(re.findall(r"os\.environ/(\w+)", gateway_objects()["ConfigMap"]["data"]["config.yaml"]))
    assert "LITELLM_MASTER_KEY" in read and proxy_config()["general_settings"]["master_key"]
    assert read <= environment, read - environment


def test_every_secret_the_files_name_is_documented_with_its_keys() -> None:
    documented = documented_secrets(DOCS.read_text())
    named = cluster_secrets()
    assert set(named) == set(documented), set(named) ^ set(documented)
    for name, keys in named.items():
        assert keys <= documented[name], f"{name}: {keys - documented[name]} not documented"


def test_the_provider_keys_reach_the_gateway_alone() -> None:
    run_secrets = secrets_named(values())
    for name in secrets_named(gateway_objects()["Deployment"]):
        assert name not in run_secrets, name


def test_secrets_named_finds_each_form() -> None:
    manifest = {
        "env": [{"valueFrom": {"secretKeyRef": {"name": "a", "key": "K"}}}],
        "envFrom": [{"secretRef": {"name": "b"}}],
        "deep": [{"envSecrets": [{"name": "c"}]}],
    }
    assert secrets_named(manifest) == {"a": {"K"}, "b": set(), "c": set()}


def test_documented_secrets_reads_the_table_and_stops_at_the_next_heading() -> None:
    text = "x\n### Secrets\n\n| Secret | keys |\n|---|---|\n| `s` | `A`, `B` | who |\n\n### Next\n| `t` | `C` |\n"
    assert documented_secrets(text) == {"s": {"A", "B"}}


def test_the_configmap_holds_the_config_the_profile_starts_the_proxy_with() -> None:
    assert proxy_config() == yaml.safe_load((DEPLOY / "litellm.yaml").read_text())
