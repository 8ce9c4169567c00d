"""A suite version as files on a person's disk: the document `suites publish FILE` sends and `suites pull` writes back,
a custom handler's module read into its spec, and the files a pulled version is edited as. Checked here by the same
code the server checks a publish with, so a suite that cannot be stored is refused before anything is sent."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from kindgi_eval.inputs import CATALOGUE_SEED, FileTooLarge, read_limited
from kindgi_eval.registry.catalogue import Catalogue, CatalogueEntry, EntryInfo
from kindgi_eval.registry.consumers import Consumers
from kindgi_eval.registry.errors import RegistryError
from kindgi_eval.registry.model import EvalSuite
from kindgi_eval.registry.publishing import MAX_BODY, read_suite
from kindgi_eval.rules import InputError, Problem

SUITE_DOCUMENT = "suite.json"
"""The file `suites pull` writes a version's document to, beside the files it is edited as."""


def read_document(path: Path) -> dict[str, Any]:
    """The JSON object a suite document file holds; InputError naming the file and line of what is wrong."""
    data = _read(path, "a suite document")
    try:
        document = json.loads(data)
    except UnicodeDecodeError as e:
        raise InputError(
            [Problem(str(path), None, None, f"is not UTF-8 text ({e.reason} at byte {e.start}).")]
        ) from None
    except json.JSONDecodeError as e:
        raise InputError(
            [Problem(str(path), e.lineno, None, f"not valid JSON: {e.msg} at column {e.colno}.")]
        ) from None
    except RecursionError:
        raise InputError([Problem(str(path), None, None, "is nested too deeply to read.")]) from None
    if not isinstance(document, dict):
        raise InputError(
            [
                Problem(
                    str(path),
                    None,
                    None,
                    'must hold one JSON object, a suite: {"id", "tenantId", "version", "kind", "spec"}.',
                )
            ]
        )
    return document


def handler_of_file(given: str, base: Path) -> dict[str, str]:
    """A custom suite's `handler` from `--handler FILE:FUNCTION`: the module's source read from FILE, its `modulePath`
    the file's path below `base` (the folder of what is published) where it lies there, else its name."""
    file, colon, function = given.rpartition(":")
    if not colon or not file or not function:
        raise InputError(
            [
                Problem(
                    "--handler",
                    None,
                    None,
                    f"{given!r} names no function. Write FILE:FUNCTION, e.g. graders/tone.py:grade.",
                )
            ]
        )
    path = Path(file)
    source = _read(path, "a handler's module")
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            [Problem(str(path), None, None, f"is not UTF-8 text ({e.reason} at byte {e.start}).")]
        ) from None
    try:
        module = path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        module = path.name
    return {"modulePath": module, "entrypointPath": function, "source": text}


def checked_suite(document: Mapping[str, Any], where: str, consumers: Consumers, catalogue: Catalogue) -> EvalSuite:
    """The suite `document` holds, checked as the server checks a publish of it (its shape, its kind, that kind's
    check of `spec` against the server's `catalogue`); InputError naming `where` with the server's words otherwise. The
    tenant, and the tenant's suite limits (which the operator may raise), are checked by the server."""
    try:
        body = json.dumps(document, ensure_ascii=False, allow_nan=False).encode("utf-8")
        return read_suite(body, str(document.get("tenantId")), consumers, catalogue, None)
    except ValueError as e:
        raise InputError([Problem(where, None, None, f"cannot be sent as JSON ({e}).")]) from None
    except RegistryError as e:
        raise InputError([Problem(where, None, None, e.message)]) from None


class ShippedCatalogue:
    """The catalogue as this package ships it, its seed entry only: what a suite document is checked against where
    no registry is asked (`validate`); a registry's catalogue may hold more."""

    def catalogue_entries(self) -> list[EntryInfo]:
        """The seed entry, as a registry lists it once seeded."""
        entry = self.catalogue_entry(CATALOGUE_SEED.name, CATALOGUE_SEED.version)
        return [EntryInfo(**entry.model_dump(exclude={"files"}))] if entry else []

    def catalogue_entry(self, name: str, version: str) -> CatalogueEntry | None:
        """The seed entry with its files, if that is the one named."""
        seed = CATALOGUE_SEED
        if (name, version) != (seed.name, seed.version):
            return None
        return CatalogueEntry(
            name=seed.name,
            version=seed.version,
            hash=seed.sha256,
            description=seed.description,
            published_at="",
            published_by="package",
            files=seed.files(),
        )


def pulled_files(document: Mapping[str, Any], kept: Mapping[str, str] | None, consumers: Consumers) -> dict[str, bytes]:
    """What `suites pull` writes of one version: its document as `suite.json`, and the files it is edited as (the
    texts it was published from where the registry kept them, else what its kind writes its spec as, if anything).
    InputError for a file name that would land outside the folder."""
    consumer = consumers.get(str(document.get("kind")))
    if kept is not None:
        files = {name: text.encode("utf-8") for name, text in kept.items()}
    elif consumer is not None and consumer.edit_files is not None:
        files = consumer.edit_files(document["spec"])
    else:
        files = {}
    for name in files:
        parts = PurePosixPath(name).parts
        if not parts or name.startswith("/") or ".." in parts or "\\" in name or name == SUITE_DOCUMENT:
            raise InputError(
                [
                    Problem(
                        f"suite {document.get('id')} {document.get('version')}",
                        None,
                        None,
                        f"names a file {name[:80]!r} that is not a path inside the folder; nothing was written.",
                    )
                ]
            )
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return {SUITE_DOCUMENT: text.encode("utf-8"), **files}


def _read(path: Path, what: str) -> bytes:
    try:
        return read_limited(path, MAX_BODY, what)
    except FileNotFoundError:
        raise InputError([Problem(str(path), None, None, "file not found.")]) from None
    except FileTooLarge as e:
        raise InputError(
            [Problem(str(path), None, None, f"{e}: the registry takes a suite of at most 1 MiB.")]
        ) from None
    except OSError as e:
        raise InputError([Problem(str(path), None, None, f"cannot be read ({e.strerror}).")]) from None
