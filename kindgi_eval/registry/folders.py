"""A registered suite version written out as a suite folder, so a run evaluates it like any other.

The folder is `<home>/registry-suites/<tenant>/<suite id>/<version>/<name>/`: one per version, written (to a
temporary folder renamed into place) the first time, and again whenever it no longer holds what the immutable
version says. Its kind's consumer says what the folder holds: `cases.jsonl` (and `calibration.jsonl` when the version has one), and in
`registry.json` the suite id, version, content hash and kind, with what the kind names (a regression's baseline, a
benchmark's catalogue entry), which the run records. `<name>` is the id without its `<tenant>.` prefix; the
partition comes from the id (`acme.pricing` of tenant acme is `acme@acme.pricing`), never from the folder's name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from kindgi_eval.inputs import REGISTRY_FILE, RegisteredAs, registered_name
from kindgi_eval.registry.catalogue import Catalogue
from kindgi_eval.registry.client import TOKEN_ENV, URL_ENV, RegistryClient, RegistryUnreachable
from kindgi_eval.registry.consumers import Consumers, accepted_kinds
from kindgi_eval.registry.database import REGISTRY_DB_ENV, database_exists, database_url, shown
from kindgi_eval.registry.model import EvalSuite, canonical_json
from kindgi_eval.registry.storage import RegistryStore, StoredVersion, open_store
from kindgi_eval.rules import InputError, Problem

FOLDER = "registry-suites"
"""The runtime folder's subfolder holding every registered suite version a run has read."""


def resolve_version(
    store: RegistryStore, tenant: str, suite_id: str, version: str | None, where: str, consumers: Consumers
) -> StoredVersion:
    """The version in force: the one named, else the latest now; InputError naming what is missing, or a kind none of
    `consumers` runs."""
    found = store.version(tenant, suite_id, version) if version else store.latest(tenant, suite_id)
    if found is None:
        what = f"version {version} of suite {suite_id!r}" if version else f"suite {suite_id!r}"
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"the registry at {store.url} has no {what} of tenant {tenant!r}. "
                    + (_config_dir_fix(suite_id.split(".", 1)[0], tenant) if "." in suite_id else "")
                    + "List them with: kindgi-eval suites list",
                )
            ]
        )
    _runs_its_kind(found.kind, f"{suite_id} {found.version}", where, consumers)
    return found


def registered_suite_folder(
    home: Path,
    tenant: str,
    suite_id: str,
    version: str | None,
    where: str,
    consumers: Consumers,
    client: RegistryClient | None,
) -> Path:
    """The suite folder of `tenant`'s suite `suite_id`: `version`, else the latest now, written out if new. It is read
    over HTTP through `client` where one is given (the registry KINDGI_REGISTRY_URL names), else from the database of
    `home` (`database_url`). InputError naming `where` when that registry has no such suite; nothing is written then."""
    with _registry(home, client, where) as catalogue:
        return materialize(
            _in_force(catalogue, tenant, suite_id, version, where, consumers), tenant, home, consumers, catalogue
        )


def version_in_force(
    home: Path,
    tenant: str,
    suite_id: str,
    version: str | None,
    where: str,
    consumers: Consumers,
    client: RegistryClient | None,
) -> StoredVersion:
    """Which version of `tenant`'s suite `suite_id` is in force (`version`, else the latest now), read as
    `registered_suite_folder` reads it, without checking its spec or writing it out: what a tick may afford for every
    tenant. InputError naming `where` when that registry has no such suite, or none of `consumers` runs its kind."""
    with _registry(home, client, where) as catalogue:
        return _in_force(catalogue, tenant, suite_id, version, where, consumers)


def version_folder(home: Path, tenant: str, suite_id: str, version: str) -> Path:
    """Where a stored version is written out as a suite folder (`materialize`), whether it is yet or not."""
    return home / FOLDER / tenant / suite_id / version / registered_name(tenant, suite_id)


@contextlib.contextmanager
def _registry(home: Path, client: RegistryClient | None, where: str) -> Iterator[RegistryClient | RegistryStore]:
    """The registry a run reads: `client`'s over HTTP where given, else the database of `home`, closed after;
    InputError naming `where` when there is neither."""
    if client is not None:
        yield client
        return
    url = database_url(home)
    if not database_exists(url):
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"no registry is here: {shown(url)} does not exist. Set {URL_ENV} and "
                    f"{TOKEN_ENV} to read the registry a server holds, or {REGISTRY_DB_ENV} to its database.",
                )
            ]
        )
    store = open_store(url)
    try:
        yield store
    finally:
        store.close()


def _in_force(
    registry: RegistryClient | RegistryStore,
    tenant: str,
    suite_id: str,
    version: str | None,
    where: str,
    consumers: Consumers,
) -> StoredVersion:
    if isinstance(registry, RegistryClient):
        return remote_version(registry, tenant, suite_id, version, where, consumers)
    return resolve_version(registry, tenant, suite_id, version, where, consumers)


def remote_version(
    client: RegistryClient, tenant: str, suite_id: str, version: str | None, where: str, consumers: Consumers
) -> StoredVersion:
    """The version in force as the registry at `client.url` answers it: the one named, else the latest now. The answer
    is checked before it is used: its content must hash to the hash it is answered with, belong to `tenant` and be of a
    kind one of `consumers` runs."""
    found = client.find_suite(suite_id, version, tenant=tenant)
    if found is None:
        what = f"version {version} of suite {suite_id!r}" if version else f"suite {suite_id!r}"
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"the registry at {client.url} has no {what} your token may read. "
                    + (_config_dir_fix(suite_id.split(".", 1)[0], tenant, token=True) if "." in suite_id else "")
                    + "List them with: kindgi-eval suites list",
                )
            ]
        )
    try:
        suite = EvalSuite.model_validate(found["suite"])
        text = canonical_json(found["suite"]).decode("utf-8")
        sha256, published_at, published_by = str(found["hash"]), str(found["published_at"]), str(found["published_by"])
    except (KeyError, TypeError, ValueError, ValidationError) as e:
        raise RegistryUnreachable(
            f"{client.url}: the registry answered {suite_id} with something other than a suite "
            f"version ({type(e).__name__}); nothing was run."
        ) from None
    if hashlib.sha256(text.encode("utf-8")).hexdigest() != sha256:
        raise RegistryUnreachable(
            f"{client.url}: the registry answered {suite_id} {suite.version} with content that does "
            f"not hash to its sha256 {sha256[:12]}…; nothing was run."
        )
    if suite.tenantId != tenant:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"{suite_id} is tenant {suite.tenantId}'s suite, and this run is for "
                    f"tenant {tenant!r} (its tenant configuration's). "
                    + _config_dir_fix(suite.tenantId, tenant).rstrip(),
                )
            ]
        )
    _runs_its_kind(suite.kind, f"{suite_id} {suite.version}", where, consumers)
    return StoredVersion(suite.id, suite.version, suite.kind, sha256, text, published_at, published_by)


def _config_dir_fix(suite_tenant: str, tenant: str, *, token: bool = False) -> str:
    """What to do when a run for `tenant` names a suite of `suite_tenant`: run it as that tenant, whose configuration
    folder `--config-dir` names (the packaged demo tenant's is the default), and over HTTP with that tenant's token.
    Empty when they are the same tenant."""
    if suite_tenant == tenant:
        return ""
    with_token = f", with a token of tenant {suite_tenant} in KINDGI_REGISTRY_TOKEN" if token else ""
    return (
        f"To run it as tenant {suite_tenant}, pass --config-dir with that tenant's configuration folder (its "
        f'tenant.toml says tenant = "{suite_tenant}"){with_token}. '
    )


def _runs_its_kind(kind: str, version: str, where: str, consumers: Consumers) -> None:
    """InputError naming `where` when none of `consumers` runs `kind`, the kind of `version` (`acme.pricing 1.4.0`)."""
    if kind not in consumers:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"{version} is a {kind!r} suite, and this kindgi-eval runs "
                    f"{', '.join(accepted_kinds(consumers))} suites.",
                )
            ]
        )


def materialize(stored: StoredVersion, tenant: str, home: Path, consumers: Consumers, catalogue: Catalogue) -> Path:
    """The suite folder of one stored version, what it names of `catalogue` included (the registry it was read from).
    Its spec is checked again by its kind's consumer, as at publish (a
    problem is an InputError naming the suite, the version and the path); the folder is written the first time, and
    written again, saying so on standard error, whenever what it holds is not what the version says (a copy edited by hand
    would run while the run records the version's hash)."""
    where = f"suite {stored.suite_id} {stored.version}"
    consumer = consumers.get(stored.kind)
    if consumer is None:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"is a {stored.kind!r} suite, and this kindgi-eval runs "
                    f"{', '.join(accepted_kinds(consumers))} suites.",
                )
            ]
        )
    spec = json.loads(stored.document)["spec"]
    problems = consumer.check(spec, catalogue)
    if problems:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"{line} The stored version no longer passes the {stored.kind} kind's "
                    "check; publish a corrected version.",
                )
                for line in problems
            ]
        )
    content = consumer.folder(spec, catalogue)
    record = RegisteredAs(
        suite_id=stored.suite_id,
        suite_version=stored.version,
        registry_hash=stored.sha256,
        kind=stored.kind,
        params=content.params,
    )
    files = {**content.files, REGISTRY_FILE: (record.model_dump_json() + "\n").encode("utf-8")}
    folder = version_folder(home, tenant, stored.suite_id, stored.version)
    if folder.is_dir():
        if _holds(folder, files):
            return folder
        print(
            f"warning: {folder} is not what {where} holds (sha256 {stored.sha256[:12]}); written again from the registry.",
            file=sys.stderr,
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder.parent))
    try:
        for name, data in files.items():
            (staging / name).write_bytes(data)
        if folder.is_dir():  # set the edited copy aside first: a rename never replaces a folder that holds files
            os.rename(folder, Path(tempfile.mkdtemp(prefix=".edited-", dir=folder.parent)) / folder.name)
        try:
            os.rename(staging, folder)
        except OSError:
            if not _holds(folder, files):  # another run wrote it first: theirs is the same content
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        for edited in folder.parent.glob(".edited-*"):
            shutil.rmtree(edited, ignore_errors=True)
    return folder


def _holds(folder: Path, files: dict[str, bytes]) -> bool:
    """Whether `folder` holds exactly `files` and nothing else: byte for byte, but for `registry.json`, which may say
    the same in the shape of an earlier release (the kind's parameters as fields of their own)."""
    try:
        found = {p.name for p in folder.iterdir()}
        return found == set(files) and all(
            _same(name, (folder / name).read_bytes(), data) for name, data in files.items()
        )
    except (OSError, ValidationError):
        return False


def _same(name: str, found: bytes, data: bytes) -> bool:
    if name == REGISTRY_FILE and found != data:
        return RegisteredAs.model_validate_json(found) == RegisteredAs.model_validate_json(data)
    return found == data
