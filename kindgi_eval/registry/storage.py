"""The registry's storage, one small interface over either backend: tokens, and immutable suite versions.

Touches the database (SQLite or PostgreSQL, through SQLAlchemy Core; the token check and GET latest through the
driver's cursor, see reads.py). Every publish is one transaction that locks its suite's row, so two publishes of one
suite are decided one after the other, on both backends. A token check and the latest version it asks for are one
statement. Published versions are kept in memory once read: a version never changes, so a kept one is never
stale; whether a token is valid, and which version is the latest, are read from the database on every request.
The texts of the files a version was published from are written once, beside it, and read only when asked for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from kindgi_eval.inputs import registry_key
from kindgi_eval.registry.catalogue import CatalogueEntry, EntryInfo, in_catalogue_order
from kindgi_eval.registry.database import (
    CATALOGUE,
    IDEMPOTENCY,
    LISTED_DESCRIPTION,
    SUITES,
    TOKENS,
    VERSIONS,
    WRITE,
    open_engine,
    shown,
)
from kindgi_eval.registry.errors import RegistryError
from kindgi_eval.registry.model import (
    EvalSuite,
    SuiteSummary,
    SuiteVersion,
    VersionInfo,
    canonical_json,
    differing_fields,
    etag,
    suite_document,
    version_body,
)
from kindgi_eval.registry.publishing import NewEntry
from kindgi_eval.registry.reads import AwaitedReads, DriverQuery, KeptVersions, driver_reading
from kindgi_eval.registry.semver import semver_key
from kindgi_eval.registry.tokens import (
    MAX_NAME,
    NO_TENANT,
    SCOPES,
    TENANTLESS,
    IssuedToken,
    Scope,
    TokenInfo,
    new_secret,
    new_token_id,
    secret_sha256,
    tenant_problem,
)
from kindgi_eval.rules import InputError, Problem

LAST_USED_EVERY = timedelta(minutes=1)
"""A token's `last_used_at` is written at most this often: reading a suite should not be a write each time."""
_ATTEMPTS = 3
"""A publish that lost a race for a new suite's row (PostgreSQL) is tried again, seeing the winner's row."""
KEPT_VERSIONS_BYTES = 64 * 1024 * 1024
"""At most this many bytes of published documents are kept in memory, the least recently read dropped first."""
NAMED_FIELDS = 10
"""A conflict names at most this many of the fields in which the content sent differs; the count of the rest follows."""


def utc_now() -> str:
    """Now, UTC, as every stored time is written: `2026-11-30T02:00:00.000000Z` (sorts as it reads)."""
    return _stamp(datetime.now(UTC))


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class StoredVersion(NamedTuple):
    """One stored version of a suite, as it is answered."""

    suite_id: str
    version: str
    kind: str
    sha256: str
    """SHA-256 of `document`."""
    document: str
    """The canonical JSON of the suite, exactly the bytes its hash was taken over (UTF-8)."""
    published_at: str
    published_by: str
    """The id of the token that published it."""

    @property
    def etag(self) -> str:
        """The ETag header value: the hash, quoted."""
        return etag(self.sha256)

    def body(self) -> bytes:
        """The JSON answer: a `SuiteVersion`."""
        return version_body(self.document, self.sha256, self.published_at, self.published_by)

    def suite(self) -> EvalSuite:
        """The document as the model."""
        return EvalSuite.model_validate(json.loads(self.document))

    def answer(self) -> SuiteVersion:
        """The answer as the model."""
        return SuiteVersion(
            suite=self.suite(), hash=self.sha256, published_at=self.published_at, published_by=self.published_by
        )


class Answer(NamedTuple):
    """What a publish answers: kept whole for an `Idempotency-Key`, so a replay answers the same."""

    status: int
    """201 a new version, 200 that content was already stored under that version."""
    body: bytes
    """A `SuiteVersion`, as JSON."""
    etag: str
    """The version's ETag."""
    replayed: bool = False
    """True when this is the stored first answer to an earlier request with the same key."""


class KeptFiles(NamedTuple):
    """What giving a version the files it was published from answers."""

    status: int
    """201 they are kept now; 200 the version kept files already, and keeps those (a version never changes)."""
    files: dict[str, str]
    """The files the version keeps, each text by its name."""


class Idempotency(NamedTuple):
    """A publish's `Idempotency-Key` and the SHA-256 of its body."""

    key: str
    request_sha256: str


def _refuse_partition_clash(connection: sa.Connection, tenant: str, suite_id: str) -> None:
    """A new id whose runs would be stored under another id's partition (they differ only in case) is a conflict.

    The id itself is left out: on PostgreSQL a publish of the same id may commit between this transaction's first read
    and this one, and that race is settled by the insert's unique key and a new attempt, which answers 200 or 409."""
    other = connection.execute(
        sa.select(SUITES.c.suite_id).where(
            SUITES.c.tenant == tenant,
            SUITES.c.suite_id != suite_id,
            sa.func.lower(SUITES.c.suite_id) == suite_id.lower(),
        )
    ).scalar()
    if other is not None:
        raise RegistryError(
            "conflict",
            f"suite {suite_id!r}: its runs would share the partition {registry_key(tenant, suite_id)!r} "
            f"with suite {other!r} of the same tenant (ids that differ only in case do). "
            f"Publish it as a version of {other!r}, or choose another id.",
        )


def _if_match_holds(header: str, latest_sha256: str | None) -> bool:
    """RFC 9110 If-Match, strong comparison: `*` holds when there is a latest version; otherwise one listed
    entity-tag must be the latest's (a weak `W/"..."` tag never matches)."""
    tags = [t.strip() for t in header.split(",") if t.strip()]
    if latest_sha256 is None:
        return False
    return "*" in tags or etag(latest_sha256) in tags


class RegistryStore:
    """Tokens and suites in one database; every method is one transaction. Safe to share between threads."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._kept: KeptVersions[StoredVersion] = KeptVersions(KEPT_VERSIONS_BYTES)
        self._token_and_latest = DriverQuery(_TOKEN_AND_LATEST, engine.dialect)
        self._version = DriverQuery(_VERSION, engine.dialect)
        self._awaited = AwaitedReads(engine.url) if engine.dialect.name == "postgresql" else None
        if self._awaited is not None:
            self._token_and_latest_awaited = self._awaited.query(_TOKEN_AND_LATEST)
            self._version_awaited = self._awaited.query(_VERSION)

    @property
    def url(self) -> str:
        """The database URL, without its password."""
        return shown(self.engine.url)

    def close(self) -> None:
        """Close every pooled connection (`aclose` first, on the event loop that served, when there was one)."""
        self.engine.dispose()

    async def aclose(self) -> None:
        """Close the connections this event loop's awaited reads opened."""
        if self._awaited is not None:
            await self._awaited.close()

    @contextmanager
    def _reading(self) -> Iterator[sa.Connection]:
        with self.engine.connect() as connection, connection.begin():
            yield connection

    @contextmanager
    def _writing(self) -> Iterator[sa.Connection]:
        with self.engine.connect() as connection:
            connection.execution_options(**{WRITE: True})
            with connection.begin():
                yield connection

    # tokens

    def issue_token(
        self, tenant: str | None, name: str = "", scope: Scope = "publish", expires_in: timedelta | None = None
    ) -> IssuedToken:
        """A new token for `tenant` (None for an operator or nightly token, which acts for none), of `scope`, accepted for
        `expires_in` from now (None: until revoked): its secret is returned once and only its SHA-256 is kept."""
        if scope in TENANTLESS and tenant is not None:
            does = (
                "publishes to the catalogue every tenant reads"
                if scope == "operator"
                else "reads every tenant's suites for the nightly runs"
            )
            raise InputError(
                [
                    Problem(
                        "tenant",
                        None,
                        None,
                        f"is not given to {'an' if scope == 'operator' else 'a'} {scope} token: it acts for no tenant, and "
                        f"{does}. Leave it out.",
                    )
                ]
            )
        problem = (
            tenant_problem(tenant)
            if tenant is not None
            else (
                "is required: a token of scope read or publish acts for one tenant."
                if scope not in TENANTLESS
                else None
            )
        )
        if problem:
            raise InputError([Problem("tenant", None, None, problem)])
        tenant = NO_TENANT if tenant is None else tenant
        if len(name) > MAX_NAME:
            raise InputError(
                [Problem("name", None, None, f"is {len(name)} characters long; a token's name has at most {MAX_NAME}.")]
            )
        if scope not in SCOPES:
            raise InputError(
                [Problem("scope", None, None, f"{scope!r} is not a scope; a token's scope is {' or '.join(SCOPES)}.")]
            )
        now = datetime.now(UTC)
        expires_at = _stamp(now + expires_in) if expires_in is not None else None
        secret = new_secret()
        token = IssuedToken(new_token_id(), tenant, name, secret, scope, expires_at)
        with self._writing() as connection:
            connection.execute(
                TOKENS.insert().values(
                    id=token.id,
                    tenant=tenant,
                    name=name,
                    secret_sha256=secret_sha256(secret),
                    created_at=_stamp(now),
                    scope=scope,
                    expires_at=expires_at,
                )
            )
        return token

    def list_tokens(self) -> list[TokenInfo]:
        """Every token ever issued, oldest first, without secrets."""
        with self._reading() as connection:
            rows = connection.execute(sa.select(*_TOKEN_COLUMNS).order_by(TOKENS.c.created_at, TOKENS.c.id)).all()
        return [TokenInfo(*row) for row in rows]

    def revoke_token(self, token_id: str) -> TokenInfo:
        """Revoke a token from now on (a revoked one stays revoked, and listed); InputError when there is no such id."""
        with self._writing() as connection:
            connection.execute(
                TOKENS.update()
                .where(TOKENS.c.id == token_id, TOKENS.c.revoked_at.is_(None))
                .values(revoked_at=utc_now())
            )
            row = connection.execute(sa.select(*_TOKEN_COLUMNS).where(TOKENS.c.id == token_id)).first()
        if row is None:
            raise InputError(
                [Problem(token_id, None, None, "no token has this id. List them with: kindgi-eval tokens list")]
            )
        return TokenInfo(*row)

    def authenticate(self, secret: str) -> TokenInfo:
        """The valid token whose secret this is; RegistryError `unauthorized` when it is unknown or revoked."""
        return self.latest_for(secret, None)[0]

    async def authenticate_awaited(self, secret: str) -> TokenInfo:
        """`authenticate`, awaited as `latest_for_awaited` is."""
        return (await self.latest_for_awaited(secret, None))[0]

    def latest_for(self, secret: str, suite_id: str | None) -> tuple[TokenInfo, StoredVersion | None]:
        """`authenticate(secret)` and the latest version of `suite_id` among that token's tenant's suites (None when it
        has none, or `suite_id` is None), in one statement: every route's token check, and all of GET latest.

        The token and which version is the latest are read from the database every time, so a revoke (from any
        process) refuses the very next request and a publish is answered at once; only the document may be kept."""
        with driver_reading(self.engine) as cursor:
            token, latest = _token_and_latest(
                self._token_and_latest.first(cursor, {"sha256": secret_sha256(secret), "suite_id": suite_id})
            )
            stored = None
            if latest is not None:
                key = (token.tenant, suite_id, latest)
                stored = self._kept.get(key)
                if stored is None:
                    stored = self._keep(key, self._version.first(cursor, _version_of(key)))
        self._touch(token)
        return token, stored

    async def latest_for_awaited(self, secret: str, suite_id: str | None) -> tuple[TokenInfo, StoredVersion | None]:
        """`latest_for`, awaited: on PostgreSQL its statements run on asyncpg, so the event loop serves other requests
        while the database answers; on SQLite (a local file, answering in microseconds) it is `latest_for`."""
        if self._awaited is None:
            return self.latest_for(secret, suite_id)
        row = await self._awaited.first(
            self._token_and_latest_awaited, {"sha256": secret_sha256(secret), "suite_id": suite_id}
        )
        token, latest = _token_and_latest(row)
        stored = None
        if latest is not None:
            key = (token.tenant, suite_id, latest)
            stored = self._kept.get(key)
            if stored is None:
                stored = self._keep(key, await self._awaited.first(self._version_awaited, _version_of(key)))
        self._touch(token)
        return token, stored

    def _keep(self, key: tuple, found: tuple | None) -> StoredVersion | None:
        """A version row read by its key, kept: it is committed with (or before) the pointer to it, and never changes."""
        stored = StoredVersion(*found) if found is not None else None
        if stored is not None:
            self._kept.put(key, stored, len(stored.document))
        return stored

    def _touch(self, token: TokenInfo) -> None:
        """Record that the token was used, at most once a minute; a busy database skips the record, not the request."""
        now = datetime.now(UTC)
        if token.last_used_at is not None and token.last_used_at > _stamp(now - LAST_USED_EVERY):
            return
        try:
            with self._writing() as connection:
                connection.execute(_TOUCH, {"token_id": token.id, "now": _stamp(now)})
        except OperationalError:
            pass

    # suites

    def idempotent_answer(self, tenant: str, idempotency: Idempotency) -> Answer | None:
        """The stored first answer to this key, or None for a new key; RegistryError `invalid` when the key was
        first used with another body."""
        with self._reading() as connection:
            return _stored_answer(connection, tenant, idempotency)

    def publish(
        self,
        tenant: str,
        token_id: str,
        suite: EvalSuite,
        *,
        if_match: str | None = None,
        idempotency: Idempotency | None = None,
    ) -> Answer:
        """Store a new version of one of `tenant`'s suites; `suite` is already valid and its tenantId is `tenant`.

        201 a new version; 200 the same content is already stored under that version (with or without If-Match);
        RegistryError `conflict` for other content under that version or a version not greater than the latest,
        `precondition_failed` when `if_match` does not hold for the latest version."""
        for attempt in range(_ATTEMPTS):
            try:
                with self._writing() as connection:
                    return self._publish(connection, tenant, token_id, suite, if_match, idempotency)
            except IntegrityError:
                if attempt == _ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _publish(
        self,
        connection: sa.Connection,
        tenant: str,
        token_id: str,
        suite: EvalSuite,
        if_match: str | None,
        idempotency: Idempotency | None,
    ) -> Answer:
        if idempotency is not None:
            stored = _stored_answer(connection, tenant, idempotency)
            if stored is not None:
                return stored
        sent = suite_document(suite)
        canonical = canonical_json(sent)
        document, sha256 = canonical.decode("utf-8"), hashlib.sha256(canonical).hexdigest()
        where = f"suite {suite.id!r} version {suite.version}"
        latest_version = connection.execute(
            sa.select(SUITES.c.latest_version)
            .where(SUITES.c.tenant == tenant, SUITES.c.suite_id == suite.id)
            .with_for_update()
        ).scalar()
        same = _version(connection, tenant, suite.id, suite.version)
        if same is not None:
            if same.sha256 != sha256:
                differ = _listed(differing_fields(json.loads(same.document), sent))
                raise RegistryError(
                    "conflict",
                    f"{where}: already published with other content (sha256 {same.sha256}; "
                    f"the content sent differs in: {differ}); a version never changes. Publish this content "
                    f"as a version greater than {latest_version}.",
                )
            answer = Answer(200, same.body(), same.etag)
        else:
            latest = _version(connection, tenant, suite.id, latest_version) if latest_version is not None else None
            if latest is None:
                _refuse_partition_clash(connection, tenant, suite.id)
            elif latest.kind != suite.kind:
                raise RegistryError(
                    "conflict",
                    f"{where}: suite {suite.id!r} is a {latest.kind!r} suite, and a suite id "
                    f"keeps its kind. Publish this {suite.kind!r} suite under a new id.",
                )
            if if_match is not None and not _if_match_holds(if_match, latest.sha256 if latest else None):
                now_is = (
                    f"the latest is {latest.version} with ETag {latest.etag}" if latest else "it has no version yet"
                )
                raise RegistryError(
                    "precondition_failed",
                    f"If-Match: {if_match[:200]} does not hold for suite {suite.id!r}: {now_is}. "
                    "Fetch the latest version and decide again.",
                )
            if latest is not None and semver_key(suite.version) <= semver_key(latest.version):
                raise RegistryError(
                    "conflict",
                    f"{where}: not greater than the latest version, {latest.version}. "
                    "Publish a greater version (semver precedence).",
                )
            now = utc_now()
            if latest is None:
                connection.execute(
                    SUITES.insert().values(
                        tenant=tenant, suite_id=suite.id, latest_version=suite.version, created_at=now
                    )
                )
            else:
                connection.execute(
                    SUITES.update()
                    .where(SUITES.c.tenant == tenant, SUITES.c.suite_id == suite.id)
                    .values(latest_version=suite.version)
                )
            stored = StoredVersion(suite.id, suite.version, suite.kind, sha256, document, now, token_id)
            connection.execute(
                VERSIONS.insert().values(
                    tenant=tenant,
                    suite_id=suite.id,
                    version=suite.version,
                    kind=suite.kind,
                    sha256=sha256,
                    document=document,
                    published_by=token_id,
                    published_at=now,
                    summary=json.dumps(suite.description[:LISTED_DESCRIPTION]),
                )
            )
            answer = Answer(201, stored.body(), stored.etag)
        if idempotency is not None:
            connection.execute(
                IDEMPOTENCY.insert().values(
                    tenant=tenant,
                    key=idempotency.key,
                    request_sha256=idempotency.request_sha256,
                    status=answer.status,
                    etag=answer.etag,
                    body=answer.body.decode("utf-8"),
                    created_at=utc_now(),
                )
            )
        return answer

    def keep_files(self, tenant: str, suite_id: str, version: str, files: dict[str, str]) -> KeptFiles:
        """Keep `files`, already checked to hold the content of one of `tenant`'s published versions, as the files it was
        published from, unless it keeps some already: the first files given are kept, in one statement, whoever races."""
        key = _version_is(tenant, suite_id, version)
        with self._writing() as connection:
            given = connection.execute(
                VERSIONS.update()
                .where(key, VERSIONS.c.files.is_(None))
                .values(files=json.dumps(files, ensure_ascii=False))
            )
            if given.rowcount == 1:
                return KeptFiles(201, files)
            kept = connection.execute(sa.select(VERSIONS.c.files).where(key)).scalar_one()
        return KeptFiles(200, json.loads(kept))

    def files(self, tenant: str, suite_id: str, version: str) -> dict[str, str] | None:
        """The files one of `tenant`'s versions was published from, each text as sent; None when it keeps none."""
        with self._reading() as connection:
            kept = connection.execute(
                sa.select(VERSIONS.c.files).where(_version_is(tenant, suite_id, version))
            ).scalar()
        return json.loads(kept) if kept is not None else None

    def latest(self, tenant: str, suite_id: str) -> StoredVersion | None:
        """The latest version of one of `tenant`'s suites, or None (also when the suite is another tenant's)."""
        with self._reading() as connection:
            version = connection.execute(_LATEST_VERSION, {"tenant": tenant, "suite_id": suite_id}).scalar()
            return self._kept_version(connection, tenant, suite_id, version) if version is not None else None

    def version(self, tenant: str, suite_id: str, version: str) -> StoredVersion | None:
        """One version of one of `tenant`'s suites, or None."""
        kept = self._kept.get((tenant, suite_id, version))
        if kept is not None:
            return kept
        with self._reading() as connection:
            return self._kept_version(connection, tenant, suite_id, version)

    def _kept_version(
        self, connection: sa.Connection, tenant: str, suite_id: str, version: str
    ) -> StoredVersion | None:
        key = (tenant, suite_id, version)
        kept = self._kept.get(key)
        if kept is None:
            kept = _version(connection, tenant, suite_id, version)
            if kept is not None:  # committed, so published: it never changes
                self._kept.put(key, kept, len(kept.document))
        return kept

    def versions(self, tenant: str, suite_id: str) -> list[VersionInfo] | None:
        """Every version of one of `tenant`'s suites, newest first; None when it has no such suite."""
        query = sa.select(VERSIONS.c.version, VERSIONS.c.sha256, VERSIONS.c.published_at).where(
            VERSIONS.c.tenant == tenant, VERSIONS.c.suite_id == suite_id
        )
        with self._reading() as connection:
            rows = connection.execute(query).all()
        if not rows:
            return None
        rows = sorted(rows, key=lambda r: semver_key(r.version), reverse=True)
        return [VersionInfo(version=r.version, hash=r.sha256, published_at=r.published_at) for r in rows]

    def list_suites(self, tenant: str, after: str | None, limit: int) -> tuple[list[SuiteSummary], bool]:
        """`tenant`'s suites with ids after `after`, by id, the latest version of each, its description clipped to
        `LISTED_DESCRIPTION` characters; and whether more follow. Read from columns: no document is read or parsed."""
        condition = [SUITES.c.tenant == tenant] + ([SUITES.c.suite_id > after] if after is not None else [])
        query = (
            sa.select(
                VERSIONS.c.suite_id,
                VERSIONS.c.version,
                VERSIONS.c.kind,
                VERSIONS.c.summary,
                VERSIONS.c.sha256,
                VERSIONS.c.published_at,
            )
            .select_from(
                SUITES.join(
                    VERSIONS,
                    sa.and_(
                        VERSIONS.c.tenant == SUITES.c.tenant,
                        VERSIONS.c.suite_id == SUITES.c.suite_id,
                        VERSIONS.c.version == SUITES.c.latest_version,
                    ),
                )
            )
            .where(*condition)
            .order_by(SUITES.c.suite_id)
            .limit(limit + 1)
        )
        with self._reading() as connection:
            rows = connection.execute(query).all()
        summaries = [
            SuiteSummary(
                id=suite_id, version=version, kind=kind, description=json.loads(summary), hash=sha256, published_at=at
            )
            for suite_id, version, kind, summary, sha256, at in rows[:limit]
        ]
        return summaries, len(rows) > limit

    # the catalogue

    def catalogue_entries(self) -> list[EntryInfo]:
        """Every catalogue entry, by name, the newest version of each name first; no files are read."""
        with self._reading() as connection:
            rows = connection.execute(sa.select(*_ENTRY_COLUMNS)).all()
        return in_catalogue_order([_entry_info(row) for row in rows])

    def catalogue_entry(self, name: str, version: str) -> CatalogueEntry | None:
        """One catalogue entry with its files, or None."""
        with self._reading() as connection:
            row = connection.execute(
                sa.select(*_ENTRY_COLUMNS, CATALOGUE.c.files).where(
                    CATALOGUE.c.name == name, CATALOGUE.c.version == version
                )
            ).first()
        return (
            CatalogueEntry(**_entry_info(row[:-1]).model_dump(), files=json.loads(row[-1])) if row is not None else None
        )

    def publish_entry(self, token_id: str, entry: NewEntry, sha256: str) -> tuple[int, CatalogueEntry]:
        """Add an entry, already checked, whose files hash to `sha256`: 201 new; 200 that content is already the entry
        of that name and version. RegistryError `conflict` for other content under that version, or a version not
        greater than the name's newest (an entry never changes, as a suite's version never does)."""
        where = f"catalogue entry {entry.name} {entry.version}"
        for attempt in range(_ATTEMPTS):
            same = self.catalogue_entry(entry.name, entry.version)
            if same is not None:
                if same.hash != sha256:
                    raise RegistryError(
                        "conflict",
                        f"{where}: already published with other content (sha256 {same.hash}); an "
                        "entry never changes. Publish this content as a greater version.",
                    )
                return 200, same
            with self._reading() as connection:
                versions = (
                    connection.execute(sa.select(CATALOGUE.c.version).where(CATALOGUE.c.name == entry.name))
                    .scalars()
                    .all()
                )
            newest = max(versions, key=semver_key, default=None)
            if newest is not None and semver_key(entry.version) <= semver_key(newest):
                raise RegistryError(
                    "conflict",
                    f"{where}: not greater than the newest version of {entry.name}, {newest}. "
                    "Publish a greater version (semver precedence).",
                )
            added = CatalogueEntry(
                name=entry.name,
                version=entry.version,
                hash=sha256,
                description=entry.description,
                published_at=utc_now(),
                published_by=token_id,
                files=entry.files,
            )
            try:
                with self._writing() as connection:
                    connection.execute(
                        CATALOGUE.insert().values(
                            name=added.name,
                            version=added.version,
                            sha256=added.hash,
                            description=added.description,
                            files=json.dumps(added.files, sort_keys=True, ensure_ascii=False),
                            published_at=added.published_at,
                            published_by=token_id,
                        )
                    )
                return 201, added
            except IntegrityError:  # the same name and version committed meanwhile: answered as a repeat
                if attempt == _ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")


_ENTRY_COLUMNS = (
    CATALOGUE.c.name,
    CATALOGUE.c.version,
    CATALOGUE.c.sha256,
    CATALOGUE.c.description,
    CATALOGUE.c.published_at,
    CATALOGUE.c.published_by,
)


def _entry_info(row: tuple) -> EntryInfo:
    name, version, sha256, description, published_at, published_by = row
    return EntryInfo(
        name=name,
        version=version,
        hash=sha256,
        description=description,
        published_at=published_at,
        published_by=published_by,
    )


_VERSION_COLUMNS = (
    VERSIONS.c.suite_id,
    VERSIONS.c.version,
    VERSIONS.c.kind,
    VERSIONS.c.sha256,
    VERSIONS.c.document,
    VERSIONS.c.published_at,
    VERSIONS.c.published_by,
)
_TOKEN_COLUMNS = (
    TOKENS.c.id,
    TOKENS.c.tenant,
    TOKENS.c.name,
    TOKENS.c.created_at,
    TOKENS.c.last_used_at,
    TOKENS.c.revoked_at,
    TOKENS.c.scope,
    TOKENS.c.expires_at,
)
"""A token as `TokenInfo` holds it, in its order."""

# Statements built once with bound parameters: SQLAlchemy takes longer to build a select and its cache key than to
# run a built one (figures in benchmarks/README.md).
_TOKEN_AND_LATEST = (
    sa.select(*_TOKEN_COLUMNS, SUITES.c.latest_version)
    .select_from(
        TOKENS.outerjoin(
            SUITES, sa.and_(SUITES.c.tenant == TOKENS.c.tenant, SUITES.c.suite_id == sa.bindparam("suite_id"))
        )
    )
    .where(TOKENS.c.secret_sha256 == sa.bindparam("sha256"))
)
"""A token by its secret's hash, and the latest version of its own tenant's suite `suite_id` (NULL: no such suite)."""
_TOUCH = TOKENS.update().where(TOKENS.c.id == sa.bindparam("token_id")).values(last_used_at=sa.bindparam("now"))
_LATEST_VERSION = sa.select(SUITES.c.latest_version).where(
    SUITES.c.tenant == sa.bindparam("tenant"), SUITES.c.suite_id == sa.bindparam("suite_id")
)
_VERSION = sa.select(*_VERSION_COLUMNS).where(
    VERSIONS.c.tenant == sa.bindparam("tenant"),
    VERSIONS.c.suite_id == sa.bindparam("suite_id"),
    VERSIONS.c.version == sa.bindparam("version"),
)


def _token_and_latest(row: tuple | None) -> tuple[TokenInfo, str | None]:
    """A `_TOKEN_AND_LATEST` row as the valid token and its suite's latest version; RegistryError when not valid."""
    return _valid(TokenInfo(*row[:-1]) if row is not None else None), row[-1] if row is not None else None


def _version_is(tenant: str, suite_id: str, version: str) -> sa.ColumnElement[bool]:
    """The condition that picks one version's row."""
    return sa.and_(VERSIONS.c.tenant == tenant, VERSIONS.c.suite_id == suite_id, VERSIONS.c.version == version)


def _listed(names: list[str]) -> str:
    """Field names as a message lists them: the first `NAMED_FIELDS`, each clipped to 80 characters, then how many more."""
    more = f", and {len(names) - NAMED_FIELDS} more" if len(names) > NAMED_FIELDS else ""
    return ", ".join(name[:80] for name in names[:NAMED_FIELDS]) + more


def _version_of(key: tuple) -> dict[str, str]:
    tenant, suite_id, version = key
    return {"tenant": tenant, "suite_id": suite_id, "version": version}


def _valid(token: TokenInfo | None) -> TokenInfo:
    """The token as stored now, if it is valid; RegistryError `unauthorized` when it is unknown, revoked or expired."""
    if token is None:
        raise RegistryError(
            "unauthorized", "Authorization: this registry issued no such token. Ask for one (kindgi-eval tokens issue)."
        )
    if token.revoked_at is not None:
        raise RegistryError(
            "unauthorized", f"Authorization: token {token.id} was revoked at {token.revoked_at}. Ask for a new one."
        )
    if token.expires_at is not None and token.expires_at <= utc_now():
        raise RegistryError(
            "unauthorized", f"Authorization: token {token.id} expired at {token.expires_at}. Ask for a new one."
        )
    return token


def _version(connection: sa.Connection, tenant: str, suite_id: str, version: str) -> StoredVersion | None:
    row = connection.execute(_VERSION, {"tenant": tenant, "suite_id": suite_id, "version": version}).first()
    return StoredVersion(*row) if row else None


def _stored_answer(connection: sa.Connection, tenant: str, idempotency: Idempotency) -> Answer | None:
    row = connection.execute(
        sa.select(IDEMPOTENCY.c.request_sha256, IDEMPOTENCY.c.status, IDEMPOTENCY.c.body, IDEMPOTENCY.c.etag).where(
            IDEMPOTENCY.c.tenant == tenant, IDEMPOTENCY.c.key == idempotency.key
        )
    ).first()
    if row is None:
        return None
    if row.request_sha256 != idempotency.request_sha256:
        raise RegistryError(
            "invalid",
            f"Idempotency-Key: {idempotency.key!r} was first used with another body. "
            "Send a new key with a new request.",
        )
    return Answer(row.status, row.body.encode("utf-8"), row.etag, replayed=True)


def open_store(url: str) -> RegistryStore:
    """The registry at database `url` (see `database_url`), created and migrated on first use."""
    return RegistryStore(open_engine(url))
