"""A registered suite version written out as a suite folder, so a run evaluates it like any other.

The folder is `<home>/registry-suites/<tenant>/<suite id>/<version>/<name>/`: one per version, written once
(to a temporary folder renamed into place) and never changed, since a published version is immutable. Its kind's
consumer says what the folder holds: `cases.jsonl` (and `calibration.jsonl` when the version has one), and in
`registry.json` the suite id, version, content hash and kind, with what the kind names (a regression's baseline, a
benchmark's catalogue entry), which the run records. `<name>` is the id without its `<tenant>.` prefix, so
`acme.pricing` of tenant acme is the partition `acme.pricing`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from kindgi_eval.inputs import REGISTRY_FILE, RegisteredAs, registered_name
from kindgi_eval.registry.consumers import accepted_kinds, consumer_for
from kindgi_eval.registry.store import RegistryStore, StoredVersion
from kindgi_eval.spec import InputError, Problem

FOLDER = "registry-suites"
"""The runtime folder's subfolder holding every registered suite version a run has read."""


def resolve_version(store: RegistryStore, tenant: str, suite_id: str, version: str | None, where: str) -> StoredVersion:
    """The version in force: the one named, else the latest now; InputError naming what is missing."""
    found = store.version(tenant, suite_id, version) if version else store.latest(tenant, suite_id)
    if found is None:
        what = f"version {version} of suite {suite_id!r}" if version else f"suite {suite_id!r}"
        raise InputError([Problem(where, None, None, f"the registry at {store.url} has no {what} of tenant {tenant!r}. "
                                  "List them with: kindgi-eval suites list")])
    if consumer_for(found.kind) is None:
        raise InputError([Problem(where, None, None, f"{suite_id} {found.version} is a {found.kind!r} suite, and this "
                                  f"kindgi-eval runs {', '.join(accepted_kinds())} suites.")])
    return found


def materialize(stored: StoredVersion, tenant: str, home: Path) -> Path:
    """The suite folder of one stored version, written the first time it is asked for."""
    folder = home / FOLDER / tenant / stored.suite_id / stored.version / registered_name(tenant, stored.suite_id)
    if (folder / REGISTRY_FILE).is_file():
        return folder
    consumer = consumer_for(stored.kind)
    assert consumer is not None, "resolve_version refuses a kind no consumer runs"
    content = consumer.folder(json.loads(stored.document)["spec"])
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder.parent))
    try:
        for name, data in content.files.items():
            (staging / name).write_bytes(data)
        identity = RegisteredAs(suite_id=stored.suite_id, suite_version=stored.version, registry_hash=stored.sha256, **content.identity)
        (staging / REGISTRY_FILE).write_text(identity.model_dump_json() + "\n", encoding="utf-8")
        try:
            os.rename(staging, folder)
        except OSError:
            if not (folder / REGISTRY_FILE).is_file():  # another run wrote it first: theirs is the same content
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder
