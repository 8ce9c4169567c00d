"""deploy/Dockerfile, read as text: no container engine builds it here. What a reading can check is checked: the bases
are pinned, the image runs as a user that is not root, it installs the package from the wheel its first stage builds
(and not from the source tree), its Dagster is the one these tests ran with, and its command is one the installed
`dagster code-server start` accepts, serving the code location on the port the Helm values name."""

from __future__ import annotations

import json
import re
import shlex
from importlib.metadata import version

import click
import pytest

from kindgi_eval_tests.deploy.cluster_files import (
    CODE_LOCATION_MODULE,
    DOCKERFILE,
    Instruction,
    dockerfile_instructions,
    parse_code_server_start,
    user_deployment,
    values,
)

PINNED_BASE = re.compile(r"^[\w./-]+(:\d+\.\d+\.\d+[\w.-]*|@sha256:[0-9a-f]{64})$")
"""An image named with an exact version (python:3.11.14-slim-bookworm) or a digest; never python:3.11-slim."""


def stages(instructions: list[Instruction]) -> list[list[Instruction]]:
    """The instructions cut at each FROM, each stage starting with its FROM."""
    cut: list[list[Instruction]] = []
    for instruction in instructions:
        if instruction.keyword == "FROM":
            cut.append([])
        cut[-1].append(instruction)
    return cut


def final_stage() -> list[Instruction]:
    """The stage the image is made of."""
    return stages(dockerfile_instructions(DOCKERFILE.read_text()))[-1]


def command() -> list[str]:
    """The final stage's CMD, which must be in exec form (a JSON list)."""
    (cmd,) = [i for i in final_stage() if i.keyword == "CMD"]
    return json.loads(cmd.argument)


def test_every_base_image_is_pinned() -> None:
    instructions = dockerfile_instructions(DOCKERFILE.read_text())
    froms = [i.argument.split() for i in instructions if i.keyword == "FROM"]
    named = {words[-1] for words in froms if len(words) == 3 and words[1].upper() == "AS"}
    bases = [words[0] for words in froms]
    assert len(bases) == 2  # one stage builds the wheel, the other installs it
    for base in bases:
        assert base in named or PINNED_BASE.match(base), f"{DOCKERFILE}: FROM {base} is not pinned to a version"


@pytest.mark.parametrize(
    "base, pinned",
    [
        ("python:3.11.14-slim-bookworm", True),
        (f"python@sha256:{'a' * 64}", True),
        ("python:3.11-slim", False),  # moves with every patch release
        ("python", False),
        ("python:latest", False),
    ],
)
def test_pinned_base_tells_a_pin_from_a_moving_tag(base: str, pinned: bool) -> None:
    assert bool(PINNED_BASE.match(base)) is pinned


def test_the_base_python_is_one_the_package_supports() -> None:
    base = final_stage()[0].argument.split()[0]
    assert re.match(r"python:3\.11\.", base)  # requires-python >= 3.11, and the Python these tests run on


def test_the_image_runs_as_a_numeric_user_that_is_not_root() -> None:
    stage = final_stage()
    users = [i for i in stage if i.keyword == "USER"]
    assert users, f"{DOCKERFILE}: the final stage sets no USER, so it runs as root"
    user = users[-1].argument
    assert user.isdigit() and int(user) != 0  # Kubernetes' runAsNonRoot checks a numeric user only
    assert stage.index(users[-1]) < stage.index(next(i for i in stage if i.keyword == "CMD"))
    created = " ".join(i.argument for i in stage if i.keyword == "RUN")
    assert f"--uid {user}" in created  # the user exists in the image, with a home
    chart = values()
    runs = chart["runLauncher"]["config"]["k8sRunLauncher"]["runK8sConfig"]["podSpecConfig"]["security_context"]
    assert user_deployment(chart)["podSecurityContext"]["runAsUser"] == runs["run_as_user"] == int(user)
    assert user_deployment(chart)["podSecurityContext"]["runAsNonRoot"] is runs["run_as_non_root"] is True


def test_the_image_has_no_entrypoint_the_charts_args_are_the_whole_command() -> None:
    # the chart starts the code server with `args: [dagster, code-server, start, ...]`, appended to any ENTRYPOINT
    assert [i for i in final_stage() if i.keyword == "ENTRYPOINT"] == []


def test_the_package_is_installed_from_the_wheel_the_first_stage_builds() -> None:
    build, image = stages(dockerfile_instructions(DOCKERFILE.read_text()))
    build_name = build[0].argument.split()[-1]
    assert any(i.keyword == "RUN" and "pip wheel" in i.argument for i in build)
    copies = [i.argument for i in image if i.keyword == "COPY"]
    assert copies and all(copy.startswith(f"--from={build_name} ") for copy in copies)  # no source in the image
    installs = [i.argument for i in image if i.keyword == "RUN" and "pip install" in i.argument]
    assert len(installs) == 1 and re.search(r"kindgi_eval-\*\.whl\)?\[s3\]", installs[0])
    assert "-e " not in installs[0] and " ." not in installs[0]


def test_the_image_installs_the_dagster_these_tests_run_with() -> None:
    (install,) = [i.argument for i in final_stage() if i.keyword == "RUN" and "pip install" in i.argument]
    pins = dict(re.findall(r"\b(dagster[\w-]*)==([\w.]+)", install))
    # the integrations' releases go with the core's: dagster-postgres, a dependency of the package, gives theirs
    assert pins == {
        "dagster": version("dagster"),
        "dagster-k8s": version("dagster-postgres"),
        "dagster-aws": version("dagster-postgres"),
    }
    chart = values()
    assert chart["dagsterWebserver"]["image"]["tag"] == chart["dagsterDaemon"]["image"]["tag"] == version("dagster")


def test_the_command_serves_the_code_location_on_the_values_port() -> None:
    args = command()
    assert args[:3] == ["dagster", "code-server", "start"]
    params = parse_code_server_start(args[3:])
    port = user_deployment(values())["port"]
    assert (params["module_name"], params["host"], params["port"]) == (CODE_LOCATION_MODULE, "0.0.0.0", port)
    assert [i.argument for i in final_stage() if i.keyword == "EXPOSE"] == [str(port)]


def test_a_flag_code_server_start_does_not_know_is_refused() -> None:
    with pytest.raises(click.UsageError):
        parse_code_server_start(shlex.split("--module kindgi_eval.defs.definitions -h 0.0.0.0 -p 3030"))


def test_the_reader_joins_continued_lines_and_skips_comments() -> None:
    text = "# a comment\nFROM a:1.2.3 AS b\n\nRUN one \\\n    # inside\n    two\nUSER 1\n"
    assert dockerfile_instructions(text) == [
        Instruction(2, "FROM", "a:1.2.3 AS b"),
        Instruction(4, "RUN", "one two"),
        Instruction(7, "USER", "1"),
    ]
