"""The gateway a run's model calls go to is the deployment's: `deployment_settings` gives settings the gateway of the
process's environment and refuses another; `gateway_of` binds the key to the URL it is configured beside."""

from __future__ import annotations

import pytest

from kindgi_eval.agents.factory import deployment_settings, gateway_of
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.rules.errors import InputError

OURS = "http://kindgi-gateway:4000"
OTHER = "http://127.0.0.1:8999"
KEY = "sk-master-0123456789"


@pytest.mark.parametrize(
    ("named", "environ", "expected"),
    [
        (OURS, {"KINDGI_GATEWAY_URL": OURS}, OURS),
        (None, {"KINDGI_GATEWAY_URL": OURS}, OURS),  # none named: the deployment's
        (None, {}, None),  # litellm in the run's own processes, where the deployment names no gateway
        (None, {"KINDGI_GATEWAY_URL": ""}, None),  # an empty variable names nothing
        (OTHER, {"KINDGI_GATEWAY_URL": OURS}, "refused"),
        (OURS + "/", {"KINDGI_GATEWAY_URL": OURS}, "refused"),  # another string is another URL: never guessed equal
        (OTHER, {"KINDGI_GATEWAY_KEY": KEY}, "refused"),  # a key alone belongs to no URL
    ],
)
def test_the_deployment_decides_the_gateway(named, environ, expected) -> None:
    settings = RunSettings(agent_model="openai:gpt-4o", gateway_url=named)
    if expected == "refused":
        with pytest.raises(InputError, match="nothing was sent") as refused:
            deployment_settings(settings, {**environ, "KINDGI_GATEWAY_KEY": KEY})
        assert KEY not in str(refused.value) and named in str(refused.value)
    else:
        assert deployment_settings(settings, environ).gateway_url == expected


def test_the_key_goes_only_to_the_url_configured_beside_it() -> None:
    environ = {"KINDGI_GATEWAY_URL": OURS, "KINDGI_GATEWAY_KEY": KEY}
    gateway = gateway_of(RunSettings(gateway_url=OURS), environ)
    assert (gateway.url, gateway.key) == (OURS, KEY)
    assert gateway_of(RunSettings(gateway_url=None), environ) is None
    for environ in (environ, {"KINDGI_GATEWAY_KEY": KEY}):
        with pytest.raises(InputError, match=f"names the gateway {OTHER}"):
            gateway_of(RunSettings(gateway_url=OTHER), environ)
    assert (
        gateway_of(RunSettings(gateway_url=OURS), {"KINDGI_GATEWAY_URL": OURS}).key is None
    )  # a gateway that asks none
