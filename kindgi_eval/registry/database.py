"""The registry's database: its tables (SQLAlchemy Core), the engine of either backend, and the migrations.

Touches files and sockets: the embedded default is a SQLite file in the runtime folder, created on first use;
`KINDGI_REGISTRY_DB`, a SQLAlchemy URL, names another (PostgreSQL in production). Every open brings the schema to
the newest Alembic revision shipped in `migrations/`, under a lock so that two processes never migrate at once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from kindgi_eval.rules import InputError, Problem

REGISTRY_DB_ENV = "KINDGI_REGISTRY_DB"
DB_FILE = "registry.sqlite"
MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "registry_alembic_version"
"""Alembic's bookkeeping table, named apart from Dagster's `alembic_version` so both can share one database."""
WRITE = "registry_write"
"""The execution option of a connection that will write: on SQLite its transaction begins IMMEDIATE (the write
lock is taken at once, so two writers queue instead of failing to upgrade a read lock)."""
_MIGRATION_LOCK = 0x6B676931  # "kgi1": the PostgreSQL advisory lock held while migrating


def _key(length: int) -> sa.types.TypeEngine:
    """A text key compared byte by byte on both backends (PostgreSQL's `C` collation), so pages come in one order."""
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


LISTED_DESCRIPTION = 200
"""Characters of a description a listing shows (the rest is in the version itself)."""

METADATA = sa.MetaData()

TOKENS = sa.Table(
    "registry_tokens",
    METADATA,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("tenant", sa.String(128), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("secret_sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("last_used_at", sa.String(32)),
    sa.Column("revoked_at", sa.String(32)),
    sa.Column("scope", sa.String(16), nullable=False, server_default="publish"),
    sa.Column("expires_at", sa.String(32)),
)
"""Bearer tokens: only the secret's SHA-256 is kept."""

SUITES = sa.Table(
    "registry_suites",
    METADATA,
    sa.Column("tenant", _key(128), primary_key=True),
    sa.Column("suite_id", _key(128), primary_key=True),
    sa.Column("latest_version", sa.String(64), nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False),
)
"""One row per suite of a tenant, pointing at its latest (greatest) version; locked while a version is published."""
sa.Index("registry_suites_partition", SUITES.c.tenant, sa.func.lower(SUITES.c.suite_id), unique=True)
"""Two ids of one tenant that differ only in case would share a partition: two racing publishes cannot both store one."""

VERSIONS = sa.Table(
    "registry_versions",
    METADATA,
    sa.Column("tenant", _key(128), primary_key=True),
    sa.Column("suite_id", _key(128), primary_key=True),
    sa.Column("version", sa.String(64), primary_key=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("document", sa.Text, nullable=False),
    sa.Column("published_by", sa.String(32), sa.ForeignKey("registry_tokens.id"), nullable=False),
    sa.Column("published_at", sa.String(32), nullable=False),
    sa.Column("summary", sa.Text, nullable=False, server_default='""'),
    sa.Column("files", sa.Text),
    sa.ForeignKeyConstraint(["tenant", "suite_id"], ["registry_suites.tenant", "registry_suites.suite_id"]),
)
"""Every published version, immutable: the canonical JSON document, its SHA-256, who published it and when, and
the start of its description as a JSON string (`summary`: JSON, as PostgreSQL text holds no NUL), which a listing
shows without reading any document. `files`: the texts of the suite files it was published from, as a JSON object
of name to text, written once; NULL when it was published as a document. No read of a version selects it."""

IDEMPOTENCY = sa.Table(
    "registry_idempotency_keys",
    METADATA,
    sa.Column("tenant", sa.String(128), primary_key=True),
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("request_sha256", sa.String(64), nullable=False),
    sa.Column("status", sa.Integer, nullable=False),
    sa.Column("etag", sa.String(66), nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False),
)
"""The first answer to each publish that carried an `Idempotency-Key`, per tenant; only publishes that were accepted."""

CATALOGUE = sa.Table(
    "registry_catalogue",
    METADATA,
    sa.Column("name", _key(129), primary_key=True),
    sa.Column("version", sa.String(64), primary_key=True),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("files", sa.Text, nullable=False),
    sa.Column("published_at", sa.String(32), nullable=False),
    sa.Column("published_by", sa.String(32), nullable=False),
)
"""The catalogue of standard suites, shared by every tenant: each entry's files as a JSON object of name to text,
and their content hash; immutable. `published_by` is an operator token's id, or `package` for the seeded entry."""

TABLES = (TOKENS, SUITES, VERSIONS, IDEMPOTENCY, CATALOGUE)


def database_url(home: Path, environ: Mapping[str, str] | None = None) -> str:
    """The registry's database: `$KINDGI_REGISTRY_DB`, else the SQLite file `<home>/registry.sqlite`."""
    env = os.environ if environ is None else environ
    return env.get(REGISTRY_DB_ENV) or f"sqlite:///{Path(home).absolute() / DB_FILE}"


def database_exists(url: str) -> bool:
    """Whether the registry's database may already hold something: False only for a SQLite file that is not there
    (opening it would create it). A server's database is asked when it is opened."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return True  # opening it says what is wrong with it
    if not parsed.drivername.startswith("sqlite"):
        return True
    return bool(parsed.database) and parsed.database != ":memory:" and Path(parsed.database).is_file()


def shown(url: str | URL) -> str:
    """A database URL as a message may show it: never its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(not a URL)"


def open_engine(url: str) -> Engine:
    """An engine on `url`, its schema migrated to the newest revision; InputError when it cannot be reached."""
    where = f"{REGISTRY_DB_ENV}={shown(url)}"
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise InputError(
            [
                Problem(
                    REGISTRY_DB_ENV,
                    None,
                    None,
                    "is not a SQLAlchemy URL. Write it like "
                    "postgresql://user:password@host/dbname or sqlite:////path/registry.sqlite.",
                )
            ]
        ) from None
    if parsed.drivername == "postgresql":
        # SQLAlchemy 2.1 reads a bare postgresql:// as psycopg 3; the driver this package ships with is psycopg2
        parsed = parsed.set(drivername="postgresql+psycopg2")
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = _sqlite_engine(parsed, where)
        else:
            engine = sa.create_engine(parsed, pool_pre_ping=True)
    except (NoSuchModuleError, ImportError) as e:
        raise InputError(
            [Problem(where, None, None, f"no database driver for it ({e}). Use postgresql:// or sqlite:///.")]
        ) from None
    try:
        migrate(engine)
    except SQLAlchemyError as e:
        engine.dispose()
        reason = str(e.orig if getattr(e, "orig", None) is not None else e).strip().splitlines()[0]
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"cannot open the registry database: {reason}. Check the URL and that the server is up.",
                )
            ]
        ) from None
    return engine


def _sqlite_engine(url: URL, where: str) -> Engine:
    """A SQLite file: its folder made, WAL journal, foreign keys on, and transactions SQLAlchemy begins itself."""
    if not url.database or url.database == ":memory:":
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    "names an in-memory database, which each connection would see "
                    "empty. Name a file: sqlite:////path/registry.sqlite.",
                )
            ]
        )
    Path(url.database).absolute().parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # pysqlite begins nothing itself; "begin" below does it
        cursor = dbapi_connection.cursor()
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON", "busy_timeout=30000"):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE" if connection.get_execution_options().get(WRITE) else "BEGIN")

    return engine


def _alembic_config(connection: sa.Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest migration shipped in this package."""
    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or None before the first migration."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE}).get_current_revision()


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision, in one transaction; a no-op when it is there already."""
    if current_revision(engine) == head_revision():
        return
    with engine.connect() as connection:
        connection.execution_options(**{WRITE: True})
        with connection.begin():
            if connection.dialect.name == "postgresql":
                connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
            command.upgrade(_alembic_config(connection), "head")
