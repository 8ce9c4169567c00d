"""`kindgi-eval suites publish|list|show|pull`, `catalogue list|publish|pull`, `serve` and `tokens issue|list|revoke`:
the suite registry's client, its server, and its bearer tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kindgi_eval.cli.common import input_errors, kind_models, registry_client, registry_errors, write_bytes_atomically
from kindgi_eval.inputs import CALIBRATION_FILE, CASES_FILE, FOLDER_KIND, load_suite
from kindgi_eval.rules import InputError, Problem

if TYPE_CHECKING:
    from kindgi_eval.registry import RegistryStore

# The registry (its models, SQLAlchemy, FastAPI) and the store are imported inside the commands: start-up time that
# `--help` and `validate` would otherwise pay.


@click.group(short_help="Publish and read suites in the registry.")
def suites() -> None:
    """Publish, list, show and pull suites of the registry at KINDGI_REGISTRY_URL, as the tenant whose token
    KINDGI_REGISTRY_TOKEN holds.

    \b
    Example:
      kindgi-eval suites publish evals/pricing --id acme.pricing --version 1.4.0
    """


@suites.command("publish", short_help="Publish a suite document, or a suite folder, as a new version.")
@click.argument("path", type=click.Path(exists=True))
@click.option("--id", "suite_id", help="The suite's id, e.g. acme.pricing; a document's own id by default.")
@click.option("--version", help="Its semver version, greater than the latest published; a document's own by default.")
@click.option(
    "--tenant",
    help="The tenant the suite belongs to (your token's); default the document's, else the id's part "
    "before its first dot.",
)
@click.option("--description", help="What the suite is for, for a person.")
@click.option("--kind", help="A folder's kind: conversation, or custom with --handler.", show_default="conversation")
@click.option(
    "--handler",
    metavar="FILE:FUNCTION",
    help="A custom suite's handler: the module FILE (its source is read "
    "into spec.handler) and the FUNCTION in it that grades, e.g. graders/tone.py:grade.",
)
@click.option(
    "--config-dir",
    type=click.Path(file_okay=False),
    help="The tenant's configuration folder: the suite is "
    "checked against it too, as a run of it would be (its tenant, and the funnel stages and courses its cases "
    "name), before anything is sent. The registry holds no tenant configuration, so it cannot.",
)
@input_errors
@registry_errors
def suites_publish(
    path: str,
    suite_id: str | None,
    version: str | None,
    tenant: str | None,
    description: str | None,
    kind: str | None,
    handler: str | None,
    config_dir: str | None,
) -> None:
    """Publish PATH as a new version: a suite document of any kind (a JSON file, as `suites pull` writes it), or a
    folder's cases.jsonl and calibration.jsonl. Everything is checked here as the server checks it before anything is
    sent. A folder's files are kept beside the version, so `suites pull` writes them back byte for byte; a folder that
    differs from the published one only in layout (whitespace, blank lines, key order) is the same content, and the
    version keeps the files it was first published with.

    \b
    Examples:
      kindgi-eval suites publish accuracy.json --version 1.1.0
      kindgi-eval suites publish evals/pricing --id acme.pricing --version 1.4.0
      kindgi-eval suites publish evals/tone --id acme.tone --version 1.0.0 --kind custom --handler evals/tone/grade.py:grade
    """
    from kindgi_eval.kinds import consumers
    from kindgi_eval.registry import checked_suite, handler_of_file, read_document, spec_of_files, suite_document

    source = Path(path)
    table = consumers()
    texts: dict[str, str] | None = None
    if source.is_dir():
        texts = _folder_texts(source)
        document = {"kind": kind or FOLDER_KIND, "spec": spec_of_files(texts)}
        missing = [name for name, value in (("--id", suite_id), ("--version", version)) if not value]
        if missing:
            raise InputError(
                [
                    Problem(name, None, None, "is required to publish a folder: it says which suite and version it is.")
                    for name in missing
                ]
            )
    else:
        if kind:
            raise InputError([Problem("--kind", None, None, f"is a folder's; the document {path} names its own kind.")])
        document = read_document(source)
    given = {"id": suite_id, "version": version, "description": description, "tenantId": tenant}
    document.update({key: value for key, value in given.items() if value is not None})
    document.setdefault("tenantId", str(document.get("id", "")).split(".", 1)[0])
    if handler:
        spec = document.get("spec")
        if not isinstance(spec, dict):
            raise InputError([Problem(path, None, "spec", "must be an object for --handler to fill its handler.")])
        spec["handler"] = handler_of_file(handler, source if source.is_dir() else source.parent)
    client = registry_client()
    suite = checked_suite(document, path, table, client)
    if config_dir is not None:
        _against_tenant(suite, source if source.is_dir() else None, config_dir)
    status, stored = client.publish(suite_document(suite))
    said = "published" if status == 201 else "already published, with the same content"
    click.echo(f"{said}: {stored['suite']['id']} {stored['suite']['version']} ({suite.kind}) sha256 {stored['hash']}")
    if texts is not None and table[suite.kind].read_files is not None:
        _, kept = client.keep_files(suite.id, suite.version, texts)
        if kept != texts:
            click.echo(
                f"note: {suite.id} {suite.version} keeps the files it was first published with, which lay out the same "
                "content otherwise; `suites pull` writes those.",
                err=True,
            )


def _against_tenant(suite, folder: Path | None, config_dir: str) -> None:
    """The suite checked against the tenant configuration in `config_dir`, as a run of it would check it: its tenant,
    then the funnel stages and courses its cases name (a folder's by file and line, a document's conversation cases
    by `id@version` and `spec.cases[i]`); InputError listing every problem, before anything is sent."""
    from kindgi_eval.inputs import check_suite_items, load_checked_suite, load_tenant, tenant_names
    from kindgi_eval.kinds import kind_named
    from kindgi_eval.rules import Case

    loaded = load_tenant(config_dir)
    if suite.tenantId != loaded.tenant.tenant:
        raise InputError(
            [
                Problem(
                    "--config-dir",
                    None,
                    None,
                    f"{loaded.config_dir} is tenant {loaded.tenant.tenant!r}'s "
                    f"configuration, and the suite is tenant {suite.tenantId!r}'s. Pass that tenant's "
                    "configuration folder, or publish the suite for this one (tenantId, --tenant).",
                )
            ]
        )
    if folder is not None:
        load_checked_suite(folder, loaded, models_of=kind_models)
    elif kind_named(suite.kind).reading.case_model is Case and isinstance(suite.spec.get("cases"), list):
        # conversation cases
        spec = suite.spec
        checked = check_suite_items(
            spec["cases"], spec.get("calibration") or [], f"{suite.id}@{suite.version}: spec", tenant_names(loaded)
        )
        if checked.problems:
            raise InputError(list(checked.problems))


def _folder_texts(folder: Path) -> dict[str, str]:
    """The texts of a suite folder's files, every problem in them located by file and line first (each line reads as
    JSON, so `spec_of_files` reads them all); a folder without calibration.jsonl is published without `calibration`:
    absent and empty read differently."""
    load_suite(folder, models_of=kind_models)
    paths = [folder / name for name in (CASES_FILE, CALIBRATION_FILE) if (folder / name).exists()]
    return {p.name: p.read_bytes().decode("utf-8") for p in paths}


@suites.command("list", short_help="Your suites, the latest version of each.")
@input_errors
@registry_errors
def suites_list() -> None:
    """Every suite of your tenant with its latest version."""
    from kindgi_eval.reports import format_rows

    rows = [(s.get("id"), s.get("version"), s.get("kind"), s.get("published_at")) for s in registry_client().suites()]
    click.echo(format_rows(["id", "version", "kind", "published_at"], rows, "table"), nl=False)


@suites.command("show", short_help="One suite version, as JSON.")
@click.argument("suite_id")
@click.option("--version", help="The version; default the latest.")
@input_errors
@registry_errors
def suites_show(suite_id: str, version: str | None) -> None:
    """Print SUITE_ID's latest version (or --version) as the registry stores it."""
    click.echo(json.dumps(registry_client().suite(suite_id, version), indent=2, ensure_ascii=False))


@suites.command("pull", short_help="Write a suite version back as files.")
@click.argument("suite_id")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--version", help="The version; default the latest.")
@input_errors
@registry_errors
def suites_pull(suite_id: str, folder: str, version: str | None) -> None:
    """Write SUITE_ID's version into FOLDER (created if needed): its document as suite.json, which `suites publish`
    takes back as it is, and the files it is edited as: a conversation suite's cases.jsonl and calibration.jsonl (byte
    for byte the files it was published from, where it was published from a folder), a custom suite's as well and its
    handler's module.

    \b
    Example:
      kindgi-eval suites pull acme.pricing pulled/ --version 1.4.0
    """
    from kindgi_eval.kinds import consumers
    from kindgi_eval.registry import pulled_files

    client = registry_client()
    suite = client.suite(suite_id, version)["suite"]
    files = pulled_files(suite, client.files(suite_id, suite["version"]), consumers())
    target = Path(folder)
    for name, data in files.items():
        path = target.joinpath(*name.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomically(path, data)
    click.echo(f"wrote {', '.join(f'{target}/{n}' for n in files)} of {suite_id} {suite['version']} ({suite['kind']})")


@click.group(short_help="The catalogue of standard suites every tenant's benchmark suites name.")
def catalogue() -> None:
    """The registry's catalogue of standard suites: every tenant reads it, a benchmark suite names one of its entries
    (`{"benchmark": {"name": "kindgi/golden", "version": "1.0.0"}}`), and only an operator's token publishes to it. An
    entry is a conversation suite's files under a name and a version, immutable like a suite's version. The registry
    is KINDGI_REGISTRY_URL, with the token KINDGI_REGISTRY_TOKEN.
    """


@catalogue.command("list", short_help="Every entry of the catalogue.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@input_errors
@registry_errors
def catalogue_list(fmt: str) -> None:
    """Every entry of the catalogue by name, the newest version of each first.

    \b
    Example:
      kindgi-eval catalogue list
    """
    from kindgi_eval.reports import format_rows

    rows = [(e.name, e.version, e.hash, e.published_at, e.description) for e in registry_client().catalogue_entries()]
    click.echo(format_rows(["name", "version", "sha256", "published_at", "description"], rows, fmt), nl=False)


@catalogue.command("publish", short_help="Publish a suite folder as a catalogue entry (an operator's token).")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--name", required=True, metavar="OWNER/SUITE", help="The entry's name, e.g. kindgi/golden.")
@click.option("--version", required=True, help="Its semver version, greater than the newest of that name.")
@click.option("--description", default="", help="What the suite measures, for a person.")
@input_errors
@registry_errors
def catalogue_publish(folder: str, name: str, version: str, description: str) -> None:
    """Publish FOLDER's cases.jsonl and calibration.jsonl as the entry NAME VERSION of the catalogue, byte for byte;
    every problem in them is reported by file and line here, before anything is sent.

    \b
    Example:
      export KINDGI_REGISTRY_TOKEN="$(kindgi-eval tokens issue --scope operator --name catalogue)"
      kindgi-eval catalogue publish standards/objections --name kindgi/objections --version 1.0.0
    """
    texts = _folder_texts(Path(folder))
    status, entry = registry_client().publish_entry(name, version, description, texts)
    said = "published" if status == 201 else "already published, with the same content"
    click.echo(f"{said}: catalogue entry {entry.name} {entry.version} sha256 {entry.hash}")


@catalogue.command("pull", short_help="Write a catalogue entry's files into a folder.")
@click.argument("name", metavar="OWNER/SUITE")
@click.argument("version")
@click.argument("folder", type=click.Path(file_okay=False))
@input_errors
@registry_errors
def catalogue_pull(name: str, version: str, folder: str) -> None:
    """Write the entry NAME VERSION's files into FOLDER (created if needed), byte for byte as it was published.

    \b
    Example:
      kindgi-eval catalogue pull kindgi/golden 1.0.0 golden/
    """
    entry = registry_client().catalogue_entry(name, version)
    if entry is None:
        raise InputError(
            [
                Problem(
                    f"{name} {version}",
                    None,
                    None,
                    "the catalogue holds no such entry. List it with: kindgi-eval catalogue list",
                )
            ]
        )
    for file in sorted(entry.files):
        if file not in (CASES_FILE, CALIBRATION_FILE):
            raise InputError(
                [
                    Problem(
                        f"{name} {version}",
                        None,
                        None,
                        f"the registry answered a file {file[:80]!r}, which no "
                        "suite folder holds; nothing was written.",
                    )
                ]
            )
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    for file, text in entry.files.items():
        write_bytes_atomically(target / file, text.encode("utf-8"))
    click.echo(f"wrote {', '.join(f'{target}/{n}' for n in sorted(entry.files))} of catalogue entry {name} {version}")


def _registry_store() -> RegistryStore:
    """The registry's storage, named once here at the edge: KINDGI_REGISTRY_DB, else registry.sqlite in the runtime folder."""
    from kindgi_eval.registry import database_url, open_store
    from kindgi_eval.store import runtime_home

    return open_store(database_url(runtime_home()))


@click.command(short_help="Serve the suite registry (/v1/eval-suites) over HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port to listen on.")
@input_errors
def serve(host: str, port: int) -> None:
    """Serve the suite registry until interrupted: tenants publish, list and read their suites with bearer tokens.

    Storage is KINDGI_REGISTRY_DB, a SQLAlchemy URL (postgresql://user:password@host/dbname in production), else
    the SQLite file registry.sqlite in the runtime folder (KINDGI_HOME, default ./.kindgi); it is created and
    migrated on first use. The OpenAPI description is at /openapi.json; /healthz needs no token. Each tenant's suites
    are held to the limits the tenants file (KINDGI_TENANTS) raises for it, else the defaults.

    \b
    Example:
      kindgi-eval tokens issue --tenant acme --name ci
      kindgi-eval serve --port 8765
    """
    from kindgi_eval.inputs import tenants_limits
    from kindgi_eval.kinds import consumers
    from kindgi_eval.registry import accepted_kinds
    from kindgi_eval.registry import serve as serve_registry

    limits = (
        tenants_limits()
    )  # a tenant the tenants file (KINDGI_TENANTS) raises limits for; the others have the defaults
    store = _registry_store()
    table = consumers()
    click.echo(
        f"suite registry on http://{host}:{port} (database {store.url}; kinds: {', '.join(accepted_kinds(table))})",
        err=True,
    )
    serve_registry(store, table, host, port, limits)


@click.group(short_help="Issue, list and revoke the suite registry's bearer tokens.")
def tokens() -> None:
    """The suite registry's bearer tokens: each acts for one tenant; its secret is printed once and stored only hashed.

    Tokens live in the registry's database (KINDGI_REGISTRY_DB, else registry.sqlite in the runtime folder).
    """


@tokens.command("issue", short_help="Make a token for a tenant and print its secret once.")
@click.option(
    "--tenant",
    metavar="TENANT",
    help="The tenant every request with the token acts for (not given to an operator token).",
)
@click.option("--name", default="", metavar="NAME", help="What the token is for, e.g. ci or alice-laptop.")
@click.option(
    "--scope",
    type=click.Choice(["read", "publish", "operator", "nightly"]),
    default="publish",
    show_default=True,
    help="read: list, show and pull suites (what one tenant's nightly runner needs); publish: those and publishing; "
    "operator: publish to the catalogue every tenant reads, acting for no tenant; nightly: read every tenant's "
    "suites to run them, acting for no tenant and publishing nothing.",
)
@click.option(
    "--expires-in", metavar="LIFETIME", help="How long it is accepted, e.g. 30m, 12h, 90d or 2w; default until revoked."
)
@input_errors
def tokens_issue(tenant: str | None, name: str, scope: str, expires_in: str | None) -> None:
    """Make a token for TENANT and print its secret on stdout, once: the registry keeps only its SHA-256. A read token
    cannot publish (403); an expired one is refused (401). Every token reads the catalogue; only an operator token,
    which acts for no tenant, publishes to it.

    \b
    Examples:
      export KINDGI_REGISTRY_TOKEN="$(kindgi-eval tokens issue --tenant acme --name ci)"
      kindgi-eval tokens issue --tenant acme --name nightly --scope read --expires-in 90d
      kindgi-eval tokens issue --scope operator --name catalogue
      kindgi-eval tokens issue --scope nightly --name night
    """
    from kindgi_eval.registry import lifetime

    try:
        lives = lifetime(expires_in) if expires_in is not None else None
    except ValueError as e:
        raise InputError([Problem("--expires-in", None, None, str(e))]) from None
    token = _registry_store().issue_token(tenant, name, scope, lives)  # type: ignore[arg-type]
    click.echo(token.secret)
    named = f" ({token.name})" if token.name else ""
    until = f", until {token.expires_at}" if token.expires_at else ""
    whom = (
        f"tenant {token.tenant}"
        if token.tenant
        else "every tenant's suites"
        if token.scope == "nightly"
        else "the catalogue"
    )
    click.echo(
        f"issued {token.id} for {whom}{named}, scope {token.scope}{until}; the secret above is shown only now. Keep it.",
        err=True,
    )


@tokens.command("list", short_help="Show every token: id, tenant, name, scope, created, expires, last used, revoked.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@input_errors
def tokens_list(fmt: str) -> None:
    """Show every token ever issued, oldest first, never a secret. `last_used` is kept to the minute.

    \b
    Example:
      kindgi-eval tokens list --format csv
    """
    from kindgi_eval.reports import format_rows

    rows = [
        (t.id, t.tenant, t.name, t.scope, t.created_at, t.expires_at, t.last_used_at, t.revoked_at)
        for t in _registry_store().list_tokens()
    ]
    click.echo(
        format_rows(["id", "tenant", "name", "scope", "created", "expires", "last_used", "revoked"], rows, fmt),
        nl=False,
    )


@tokens.command("revoke", short_help="Revoke a token: from now on it is refused (401).")
@click.argument("token_id", metavar="ID")
@input_errors
def tokens_revoke(token_id: str) -> None:
    """Revoke the token ID (as `tokens list` shows it): every request that carries it is refused from now on.

    \b
    Example:
      kindgi-eval tokens revoke tok_3f9c2a1e5b7d
    """
    token = _registry_store().revoke_token(token_id)
    whom = f"tenant {token.tenant}" if token.tenant else "an operator's"
    click.echo(f"revoked {token.id} ({whom}) at {token.revoked_at}")
