"""The production profile on one machine: Dagster's own deployment over PostgreSQL, the store on an S3 API.

    python deploy/production.py start [--dir .kindgi-production] [--registry-servers 2] [--tick-once-after SECONDS]
                                      [--max-concurrent-runs N] [--gateway-config deploy/litellm.yaml]
    . .kindgi-production/env          # then kindgi-eval sql, diff, replay, report read the profile's store
    python deploy/production.py restart daemon [--dir .kindgi-production]   # a service whose process died
    python deploy/production.py restart postgres [--dir .kindgi-production] # the profile's own cluster, while it runs
    python deploy/production.py stop  [--dir .kindgi-production]

`start` brings up, each as a process of its own on 127.0.0.1:
- PostgreSQL holding the Dagster instance and the suite registry, as two databases. The server named by
  DAGSTER_PG_HOST/PORT/USERNAME/PASSWORD when they are set (what .ci/run starts, or a managed one), else a cluster
  of the profile's own made with Debian's PostgreSQL binaries;
- PgBouncer in front of the Dagster database, which the instance's storage connects to: Dagster opens a connection
  per query, and PgBouncer hands each one of the connections to PostgreSQL it keeps open (session pooling);
- an S3 API server (moto in server mode) holding the bucket `kindgi`, the store being KINDGI_STORE=s3://kindgi/store;
- `dagster-daemon` with deploy/dagster-postgres.yaml as the instance: the run queue and its limits (the machine's
  runs at once, `--max-concurrent-runs`; one run per tenant), each run in
  a process of its own (Dagster's default run launcher), the nightly schedule ticking at 02:00 (or once, within
  a minute or two, with `--tick-once-after`: a night on demand, still started by the schedule);
- `dagster-webserver`, the UI;
- the suite registry (`kindgi-eval serve`) as `--registry-servers` processes on the one registry database;
- the LiteLLM gateway (`litellm --config deploy/litellm.yaml`, or `--gateway-config`; installed by the `profile`
  extra), pacing each provider by its requests per minute and parallel requests, holding the provider keys its
  config names, with LITELLM_MASTER_KEY (which it refuses to start without) as its key. Every run
  of the profile sends its model calls there (KINDGI_GATEWAY_URL) with a call key the profile makes at each start
  (KINDGI_GATEWAY_KEY), which the gateway accepts for model calls alone (deploy/gateway_keys.py), and never imports
  litellm.

Each service is given only the secrets it uses (`service_env`): none of the caller's variables that may hold one
(`without_secrets`: keys, tokens, passwords, credentials in a URL, the webhooks the tenants file's `alerts` name)
reaches any service but as named here. The gateway
holds the provider keys its config names, its master key and the call key; the daemon (and so its code servers and
run workers) the instance's PostgreSQL connection, the store's, the gateway's URL and call key, and a registry token
of scope `nightly` the profile issues at start, which reads every tenant's suites to run them, and the webhooks
(its `night_findings` sensor posts each tenant's night to them); the webserver the
instance's connection and the URLs, no key; each registry server its database's URL; moto nothing secret. The
profile's variables, but for the master key, are written to `<dir>/env` (its owner's only) for a shell to source,
with the registry's database (for `kindgi-eval tokens`); the token and the call key are never printed.

A custom suite's handlers are bounded on the machine as a whole: `start` makes a control group over every run's
handlers (`KINDGI_HANDLER_CGROUP`, the daemon's) whose memory is the machine's less what the services and the run
workers need (`handlers_memory`), so the kernel kills a handler, never a service, when the runs' handlers together
would take more.

`stop` stops each process by the PID `start` recorded (its process group: the daemon's code server and run workers
go with it), removes the handlers' control group, then drops the profile's databases, or stops and removes its own
cluster.
Nothing here is needed for a run on one machine: `kindgi-eval run` needs none of it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple, NoReturn
from urllib.parse import SplitResult, urlsplit

DEPLOY = Path(__file__).resolve().parent
INSTANCE_YAML = DEPLOY / "dagster-postgres.yaml"
GATEWAY_CONFIG = DEPLOY / "litellm.yaml"
BUCKET = "kindgi"
STATE = "profile.json"
GATEWAY_KEYS = DEPLOY / "gateway_keys.py"
"""The gateway's check of each request's key (its master key, the profile's call key), beside its config."""
SERVICES_MIB = 4096
"""Memory kept for the services (PostgreSQL, the gateway, the registry servers, moto, the webserver, the daemon and its
code servers) and the kernel, out of the handlers' bound."""
RUN_WORKER_MIB = 512
"""Memory kept for each run worker the queue may start at once (some 200 MB each, twice over), out of the handlers'."""
HANDLERS_LEAST_MIB = 512
"""The least memory left for every run's handlers together with which the profile starts: a few sandboxed calls."""
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|^DAGSTER_PG_|^KINDGI_REGISTRY_DB$|^DATABASE_URL$|^AWS_", re.IGNORECASE
)
"""A variable of the caller's whose name says it may hold a secret: given to no service but where this file names it."""
SECRET_IN_URL = re.compile(r"://[^/@\s]*:[^/@\s]*@")
"""A value holding a URL with a password."""
READY_S = 120.0
"""How long each service may take to answer before `start` gives up and stops what it started."""
PAGE = os.sysconf("SC_PAGE_SIZE")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
STOP_S = 20.0
"""How long a process has to exit after SIGTERM before it is killed."""


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read: the profile's state, environment and services hold its passwords."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def without_secrets(environ: dict[str, str]) -> dict[str, str]:
    """The caller's environment without any variable that may hold a secret (by its name, a URL with a password in
    its value, or a webhook the tenants file names): what every service starts from."""
    webhooks = set(webhook_variables())
    return {
        k: v
        for k, v in environ.items()
        if not SECRET_NAME.search(k) and not SECRET_IN_URL.search(v) and k not in webhooks
    }


def webhook_variables() -> list[str]:
    """The variables the tenants file (KINDGI_TENANTS) names in `alerts`: webhook URLs, secrets that the daemon's
    `night_findings` sensor alone posts to. None when no tenants file is set or none of it can be read."""
    if not os.environ.get("KINDGI_TENANTS"):
        return []
    from kindgi_eval.inputs import load_tenants
    from kindgi_eval.rules import InputError

    try:
        tenants = load_tenants(partial=True)
    except InputError:  # `start` has warned of it; the tick will say it again
        return []
    return sorted({v for s in tenants.suites for v in s.entry.alerts or ()})


def config_variables(config: Path) -> list[str]:
    """The variables the gateway's config reads its keys from (`os.environ/NAME`)."""
    return sorted(set(re.findall(r"os\.environ/([A-Za-z_][A-Za-z0-9_]*)", config.read_text())))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what: str, ready, process: subprocess.Popen | None, log: Path | None) -> None:
    """Poll `ready()` until it is true; exit naming `what` and the tail of its log when it dies or takes too long."""
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            fail(f"{what} exited with status {process.returncode}", log)
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.25)
    fail(f"{what} did not answer within {READY_S:.0f} s", log)


def refuse(message: str) -> NoReturn:
    """What was asked cannot be done to this profile: the reason on standard error, exit status 2, nothing changed."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def fail(message: str, log: Path | None) -> NoReturn:
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:]) if log is not None and log.exists() else ""
    raise SystemExit(f"error: {message}" + (f"; the end of {log}:\n{tail}" if tail else ""))


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except urllib.error.HTTPError:
        return False


def accepts(address: SplitResult) -> bool:
    """Whether something listens at `address` (a URL's `hostname` and `port`): a connection is accepted."""
    socket.create_connection((address.hostname, address.port), timeout=2).close()
    return True


class Profile:
    """One profile's folder: its state (`profile.json`: the PIDs and ports), its logs and its environment file."""

    def __init__(self, folder: Path) -> None:
        self.dir = folder.resolve()
        self.logs = self.dir / "logs"
        self.state_file = self.dir / STATE
        self.state: dict = json.loads(self.state_file.read_text()) if self.state_file.exists() else {"pids": {}}

    def save(self) -> None:
        write_private(self.state_file, json.dumps(self.state, indent=2) + "\n")

    def spawn(self, name: str, argv: list[str], env: dict[str, str], ready: str) -> subprocess.Popen:
        """Start `argv` in a session of its own (so `stop` ends its children with it), logging to logs/<name>.log.
        `ready` is how to tell it serves: a URL that answers 200, `tcp://HOST:PORT` that accepts a connection, or
        `heartbeat` (the daemon's, in the instance).
        What it was started with is kept (services/<name>.json, its owner's only) for `restart`."""
        log = self.logs / f"{name}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(
                argv,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.dir,
                start_new_session=True,
            )
        services = self.dir / "services"
        services.mkdir(mode=0o700, exist_ok=True)
        write_private(services / f"{name}.json", json.dumps({"argv": argv, "env": env, "ready": ready}))
        self.state["pids"][name] = process.pid
        self.save()
        return process

    def wait(self, name: str, process: subprocess.Popen | None = None) -> None:
        """Until service `name` serves (see `spawn`)."""
        kept = json.loads((self.dir / "services" / f"{name}.json").read_text())
        ready, env = kept["ready"], kept["env"]
        check = (
            (lambda: daemon_alive(env))
            if ready == "heartbeat"
            else (lambda: accepts(urlsplit(ready)))
            if ready.startswith("tcp://")
            else (lambda: answers(ready))
        )
        wait_until(name, check, process, self.logs / f"{name}.log")


# PostgreSQL


def pg_bin(name: str) -> str:
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    if not versions:
        raise SystemExit("error: no PostgreSQL under /usr/lib/postgresql. Install Debian's: apt-get install postgresql")
    return str(versions[-1] / name)


def as_postgres(argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run its programs as the `postgres` user Debian's package makes."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def passable(folder: Path) -> Path:
    """`folder`, or the nearest folder above it, that every user may pass through down from the root: where the
    `postgres` user reaches a cluster made by root (a TMPDIR of root's alone, 0700, hides what is inside it)."""
    while folder != folder.parent and not all(f.stat().st_mode & 0o001 for f in (folder, *folder.parents)):
        folder = folder.parent
    return folder


def own_cluster(profile: Profile) -> dict[str, str]:
    """A PostgreSQL cluster of the profile's own on a free port of 127.0.0.1, password-protected; its connection."""
    if os.geteuid() == 0:  # the postgres user must reach the data folder, which a root-only parent would hide
        data = Path(tempfile.mkdtemp(prefix="kindgi-production-pg-", dir=passable(Path(tempfile.gettempdir()))))
        shutil.chown(data, "postgres", "postgres")
    else:
        data = profile.dir / "postgres"
        data.mkdir(mode=0o700)
    password = secrets.token_urlsafe(16)
    password_file = data / "password"
    password_file.write_text(password + "\n")
    if os.geteuid() == 0:
        shutil.chown(password_file, "postgres", "postgres")
    port = free_port()
    subprocess.run(
        as_postgres(
            [
                pg_bin("initdb"),
                "-D",
                str(data / "cluster"),
                "-U",
                "kindgi",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                f"--pwfile={password_file}",
                "-E",
                "UTF8",
            ]
        ),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    log = profile.logs / "postgres.log"
    if os.geteuid() == 0:  # written where the postgres user can reach it (the profile's folder may be root's alone)
        written, log = log, data / "postgres.log"
        log.touch()
        shutil.chown(log, "postgres", "postgres")
        written.symlink_to(log)
    options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={data}"
    control = [pg_bin("pg_ctl"), "-D", str(data / "cluster"), "-o", options, "-l", str(log)]
    subprocess.run(as_postgres([*control, "-w", "start"]), check=True, stdout=subprocess.DEVNULL)
    profile.state |= {"own_cluster": str(data), "own_cluster_control": control}
    profile.save()
    return {
        "DAGSTER_PG_HOST": "127.0.0.1",
        "DAGSTER_PG_PORT": str(port),
        "DAGSTER_PG_USERNAME": "kindgi",
        "DAGSTER_PG_PASSWORD": password,
    }


def postgres(profile: Profile) -> dict[str, str]:
    """The server (given, or the profile's own), with a fresh Dagster database and a fresh registry database."""
    if os.environ.get("DAGSTER_PG_HOST"):
        server = {
            k: os.environ.get(k, d)
            for k, d in (
                ("DAGSTER_PG_HOST", ""),
                ("DAGSTER_PG_PORT", "5432"),
                ("DAGSTER_PG_USERNAME", "postgres"),
                ("DAGSTER_PG_PASSWORD", ""),
            )
        }
    else:
        server = own_cluster(profile)
    prefix = f"kindgi_{profile.state['name']}"
    databases = {"dagster": f"{prefix}_dagster", "registry": f"{prefix}_registry"}
    each_database(url(server, "postgres"), 'CREATE DATABASE "{name}"', list(databases.values()))
    profile.state |= {"databases": list(databases.values()), "admin_url": url(server, "postgres")}
    profile.save()
    return {**server, "DAGSTER_PG_DB": databases["dagster"], "KINDGI_REGISTRY_DB": url(server, databases["registry"])}


def each_database(admin_url: str, statement: str, names: list[str]) -> None:
    """`statement` (naming `{name}`) on the server's `postgres` database for each name: outside a transaction, as
    CREATE and DROP DATABASE must be."""
    import sqlalchemy as sa

    engine = sa.create_engine(
        admin_url.replace("postgresql://", "postgresql+psycopg2://"), isolation_level="AUTOCOMMIT"
    )
    try:
        with engine.connect() as connection:
            for name in names:
                connection.exec_driver_sql(statement.format(name=name))
    finally:
        engine.dispose()


def url(server: dict[str, str], database: str) -> str:
    from urllib.parse import quote

    user, password = quote(server["DAGSTER_PG_USERNAME"], safe=""), quote(server["DAGSTER_PG_PASSWORD"], safe="")
    return f"postgresql://{user}:{password}@{server['DAGSTER_PG_HOST']}:{server['DAGSTER_PG_PORT']}/{database}"


# PgBouncer

POOLER_SERVER_CONNECTIONS = 20
"""Connections PgBouncer keeps open to PostgreSQL for the Dagster database; a query beyond them waits for one."""
POOLER_CLIENTS = 1000
"""Connections PgBouncer takes at once from the daemon, the webserver, their code servers and the run workers."""


def pooler_config(port: int, server: dict[str, str], database: str, auth_file: Path) -> str:
    """PgBouncer's configuration: 127.0.0.1:`port` serving the one database `database` of `server`, in session pooling.
    Dagster's storage opens a connection per query, so a session is a query or a few: PgBouncer hands each a server
    connection it keeps open (reset with DISCARD ALL between sessions, so a session's settings, the webserver's
    statement timeout, stay its own), instead of PostgreSQL starting a process and checking a password every time.
    The connection's user may read the pooler's figures (`SHOW POOLS`, `SHOW STATS` on its `pgbouncer` database)."""
    return "\n".join(
        [
            "[databases]",
            f"{database} = host={server['DAGSTER_PG_HOST']} port={server['DAGSTER_PG_PORT']} dbname={database}",
            "",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            f"listen_port = {port}",
            "unix_socket_dir =",
            "auth_type = scram-sha-256",
            f"auth_file = {auth_file}",
            f"stats_users = {server['DAGSTER_PG_USERNAME']}",
            "pool_mode = session",
            f"default_pool_size = {POOLER_SERVER_CONNECTIONS}",
            f"max_client_conn = {POOLER_CLIENTS}",
            "server_login_retry = 1",  # back at once after PostgreSQL restarts (its default waits 15 s)
            "log_connections = 0",
            "log_disconnections = 0",
            "",
        ]
    )


def pooler_users(user: str, password: str) -> str:
    """PgBouncer's auth file: the one user, with the password it checks clients against and logs into PostgreSQL
    with."""

    def quoted(value: str) -> str:
        return '"' + value.replace('"', '""') + '"'

    return f"{quoted(user)} {quoted(password)}\n"


def pooler(profile: Profile, env: dict[str, str]) -> dict[str, str]:
    """PgBouncer on a free port of 127.0.0.1 in front of the Dagster database of the server `env` names (see
    `pooler_config`); its configuration and auth file in the profile's folder, its owner's only. The variables that
    point Dagster's storage at it."""
    binary = shutil.which("pgbouncer", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"]))
    if binary is None:
        refuse("no PgBouncer, which the profile runs in front of PostgreSQL: install it (apt-get install pgbouncer)")
    folder = profile.dir / "pgbouncer"
    folder.mkdir(mode=0o700, exist_ok=True)
    port, database = free_port(), env["DAGSTER_PG_DB"]
    write_private(folder / "users.txt", pooler_users(env["DAGSTER_PG_USERNAME"], env["DAGSTER_PG_PASSWORD"]))
    write_private(folder / "pgbouncer.ini", pooler_config(port, env, database, folder / "users.txt"))
    as_user = ["-u", "postgres"] if os.geteuid() == 0 else []  # it refuses root: it reads its files, then drops to it
    argv = [binary, *as_user, str(folder / "pgbouncer.ini")]
    process = profile.spawn("pgbouncer", argv, {}, f"tcp://127.0.0.1:{port}")  # its environment: nothing it uses
    profile.wait("pgbouncer", process)
    pooled = {"DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": str(port)}
    try:
        each_database(url(env | pooled, database), "SELECT 1", [database])
    except Exception as e:  # sqlalchemy's OperationalError: PgBouncer could not log into PostgreSQL
        reason = str(e).splitlines()[0]
        fail(f"PgBouncer could not reach the Dagster database: {reason}", profile.logs / "pgbouncer.log")
    return pooled


# the services


def s3(profile: Profile, python: str) -> dict[str, str]:
    """moto's S3 API on a free port, with the store's bucket made."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    process = profile.spawn(
        "s3",
        [python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        without_secrets(dict(os.environ)),
        f"{endpoint}/moto-api/",
    )
    profile.wait("s3", process)
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{BUCKET}", method="PUT"), timeout=10).close()
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "kindgi",
        "AWS_SECRET_ACCESS_KEY": "kindgi-production",
        "AWS_DEFAULT_REGION": "us-east-1",
        "KINDGI_STORE": f"s3://{BUCKET}/store",
    }


def dagster_home(profile: Profile, max_concurrent_runs: int | None) -> Path:
    """DAGSTER_HOME holding the production instance (its `max_concurrent_runs` replaced where one is given) and the
    workspace the daemon and the webserver load."""
    home = profile.dir / "dagster"
    home.mkdir(exist_ok=True)  # a profile started again after `stop`: its files are written afresh
    instance = INSTANCE_YAML.read_text()
    if max_concurrent_runs is not None:
        instance, found = re.subn(
            r"^(\s*max_concurrent_runs:\s*)\d+", rf"\g<1>{max_concurrent_runs}", instance, flags=re.M
        )
        if found != 1:
            raise SystemExit(f"error: {INSTANCE_YAML} holds no max_concurrent_runs to replace")
    (home / "dagster.yaml").write_text(instance)
    (home / "workspace.yaml").write_text(
        "load_from:\n  - python_module:\n      module_name: kindgi_eval.defs.definitions\n"
        "      location_name: kindgi_eval\n"
    )
    return home


def gateway_config(config: Path, folder: Path) -> Path:
    """`config` as the profile's gateway runs it, in `folder`: each request's key checked by deploy/gateway_keys.py
    (copied beside it, where the proxy loads it from). A config with a key check of its own is refused."""
    import yaml

    read = yaml.safe_load(config.read_text())
    settings = read.get("general_settings") if isinstance(read, dict) else None
    if not isinstance(settings, dict) or "custom_auth" in settings:
        refuse(
            f"{config}: general_settings: the profile checks the gateway's keys itself (custom_auth: gateway_keys.authenticate); "
            "give a config with general_settings.master_key and no custom_auth"
        )
    settings["custom_auth"] = f"{GATEWAY_KEYS.stem}.authenticate"
    folder.mkdir(mode=0o700, exist_ok=True)
    shutil.copyfile(GATEWAY_KEYS, folder / GATEWAY_KEYS.name)
    written = folder / "litellm.yaml"
    written.write_text(f"# {config.resolve()}, with the profile's key check\n" + yaml.safe_dump(read, sort_keys=False))
    return written


def gateway(profile: Profile, bin_dir: Path, config: Path) -> tuple[dict[str, str], subprocess.Popen]:
    """The LiteLLM proxy on a free port, started from `config` (it takes some 17 s to serve, so `start` waits for it
    last), holding the provider keys its config names, its master key and a call key made now; the variables that point
    a run at it (with the call key), and its process."""
    proxy = bin_dir / "litellm"
    if not proxy.exists():
        refuse(f"no LiteLLM proxy at {proxy}; install the profile's extra: pip install -e '.[profile]'")
    port = free_port()
    call_key = "sk-kindgi-call-" + secrets.token_urlsafe(24)
    keys = {name: os.environ[name] for name in config_variables(config) if name in os.environ}
    env = {
        **without_secrets(dict(os.environ)),
        **keys,
        "LITELLM_MASTER_KEY": os.environ["LITELLM_MASTER_KEY"],
        "KINDGI_GATEWAY_CALL_KEY": call_key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_LOG": "ERROR",
    }
    argv = [
        str(proxy),
        "--config",
        str(gateway_config(config, profile.dir / "gateway")),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    process = profile.spawn("gateway", argv, env, f"http://127.0.0.1:{port}/health/liveliness")
    return {"KINDGI_GATEWAY_URL": f"http://127.0.0.1:{port}", "KINDGI_GATEWAY_KEY": call_key}, process


def nightly_token(registry_db: str) -> str:
    """A registry token of scope `nightly` (every tenant's suites, read to run them), issued in the profile's registry
    database: its secret, kept like the profile's other secrets and never printed."""
    from kindgi_eval.registry import open_store

    store = open_store(registry_db)
    try:
        return store.issue_token(None, "production-profile", "nightly").secret
    finally:
        store.close()


def handlers_memory(runs_at_once: int, total: int | None = None) -> int:
    """The bytes every run's handlers may hold together: the machine's memory (`total`, else /proc/meminfo's) less
    SERVICES_MIB and RUN_WORKER_MIB for each run at once; refused when that leaves less than HANDLERS_LEAST_MIB."""
    if total is None:
        total = next(
            int(line.split()[1]) * 1024
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal:")
        )
    left = total - (SERVICES_MIB + RUN_WORKER_MIB * runs_at_once) * 1024 * 1024
    if left < HANDLERS_LEAST_MIB * 1024 * 1024:
        refuse(
            f"this machine's {total >> 20} MiB leave {max(0, left) >> 20} MiB for custom suites' handlers once {SERVICES_MIB} MiB "
            f"are kept for the services and {RUN_WORKER_MIB} MiB for each of {runs_at_once} runs at once; lower "
            "--max-concurrent-runs, or start the profile on a machine with more memory"
        )
    return left


def handlers_bound(profile: Profile, runs_at_once: int) -> dict[str, str]:
    """The control group over every run's handlers, its memory `handlers_memory`; the variable naming it, for the
    daemon. None where no control group can be made here (a custom suite then refuses to run, saying so)."""
    from kindgi_eval.agents.cgroups import HANDLERS_ENV, find_hierarchy, make_bound

    hierarchy = find_hierarchy()
    if hierarchy is None:
        print(
            "warning: no control group can be made here (/sys/fs/cgroup): custom suites will not run in this profile",
            file=sys.stderr,
        )
        return {}
    name = f"profile-{profile.state['name']}"
    make_bound(hierarchy, name, handlers_memory(runs_at_once))
    profile.state["handlers_bound"] = name
    profile.save()
    return {HANDLERS_ENV: name}


def runs_at_once(home: Path) -> int:
    """The queue's bound on runs at once, as the instance's dagster.yaml in `home` says."""
    return int(re.search(r"^\s*max_concurrent_runs:\s*(\d+)", (home / "dagster.yaml").read_text(), flags=re.M).group(1))


def start(
    profile: Profile,
    registry_servers: int,
    tick_after: float | None,
    max_concurrent_runs: int | None,
    gateway_config: Path,
) -> None:
    if profile.state["pids"]:
        refuse(
            f"a profile is already started in {profile.dir}; stop it first: "
            f"python deploy/production.py stop --dir {shlex.quote(str(profile.dir))}"
        )
    if not os.environ.get("LITELLM_MASTER_KEY"):
        refuse(
            "LITELLM_MASTER_KEY is not set: the gateway refuses to start without its key. Set it (e.g. "
            "export LITELLM_MASTER_KEY=sk-$(openssl rand -hex 16)); the profile's runs give it to the gateway."
        )
    if os.environ.get(
        "KINDGI_TENANTS"
    ):  # the night would find its problems at the tick: say them now, and start all the same
        checked = subprocess.run(
            [str(Path(sys.executable).parent / "kindgi-eval"), "validate", "--tenants", os.environ["KINDGI_TENANTS"]],
            capture_output=True,
            text=True,
        )
        if checked.returncode != 0:
            print(
                f"warning: the tenants file does not validate; the nightly schedule will find:\n{checked.stderr}",
                file=sys.stderr,
                end="",
            )
    profile.dir.mkdir(parents=True, exist_ok=True)
    profile.logs.mkdir(exist_ok=True)
    profile.state = {"name": secrets.token_hex(4), "pids": {}}
    profile.save()
    bin_dir = Path(sys.executable).parent
    python = sys.executable
    try:
        home = dagster_home(profile, max_concurrent_runs)
        env = {"DAGSTER_HOME": str(home), "KINDGI_HOME": str(profile.dir / "home")}
        gateway_env, proxy = gateway(profile, bin_dir, gateway_config)  # its start-up runs beside the others'
        env |= gateway_env
        env |= postgres(profile)
        env |= pooler(profile, env)
        env |= s3(profile, python)
        env |= handlers_bound(profile, runs_at_once(home))
        base = {**without_secrets(dict(os.environ)), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        webhooks = {v: os.environ[v] for v in webhook_variables() if v in os.environ}
        workspace = str(profile.dir / "dagster" / "workspace.yaml")

        registry_ports = [free_port() for _ in range(registry_servers)]
        for n, port in enumerate(registry_ports):  # the first migrates the database; the others find it migrated
            name = f"registry-{n + 1}"
            process = profile.spawn(
                name,
                [str(bin_dir / "kindgi-eval"), "serve", "--port", str(port)],
                {**base, "KINDGI_REGISTRY_DB": env["KINDGI_REGISTRY_DB"]},
                f"http://127.0.0.1:{port}/healthz",
            )
            profile.wait(name, process)
        env["KINDGI_REGISTRY_URL"] = f"http://127.0.0.1:{registry_ports[0]}"
        env["KINDGI_REGISTRY_TOKEN"] = nightly_token(env["KINDGI_REGISTRY_DB"])

        profile.wait("gateway", proxy)
        tick = None
        if (
            tick_after is not None
        ):  # the schedule ticks once, at the first whole minute `tick_after` s after the daemon starts
            tick = datetime.fromtimestamp(math.ceil((time.time() + tick_after) / 60) * 60, UTC)
            env |= {
                "KINDGI_SCHEDULE_CRON": f"{tick.minute} {tick.hour} {tick.day} {tick.month} *",
                "KINDGI_SCHEDULE_TIMEZONE": "UTC",
            }
            profile.state["tick"] = tick.isoformat()
        daemon = profile.spawn(
            "daemon",
            [str(bin_dir / "dagster-daemon"), "run", "-w", workspace],
            service_env("daemon", base, env) | webhooks,
            "heartbeat",
        )
        ui_port = free_port()
        ui = profile.spawn(
            "webserver",
            [str(bin_dir / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(ui_port), "-w", workspace],
            service_env("webserver", base, env),
            f"http://127.0.0.1:{ui_port}/server_info",
        )
        profile.wait("webserver", ui)
        profile.wait("daemon", daemon)
        if tick is not None and time.time() >= tick.timestamp():  # a schedule never runs a tick from before it was seen
            fail(
                f"the daemon was up only after the tick it was given ({tick:%H:%M} UTC), so the night would never start; "
                f"start again with a larger --tick-once-after than {tick_after:g}",
                profile.logs / "daemon.log",
            )
    except BaseException:
        stop(profile)
        raise
    write_private(profile.dir / "env", "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items())))
    profile.state |= {
        "ui": f"http://127.0.0.1:{ui_port}",
        "registry": [f"http://127.0.0.1:{p}" for p in registry_ports],
        "s3": env["AWS_ENDPOINT_URL"],
        "gateway": env["KINDGI_GATEWAY_URL"],
    }
    profile.save()
    print(
        f"Dagster UI {profile.state['ui']}; registry {', '.join(profile.state['registry'])}; store "
        f"{env['KINDGI_STORE']} at {env['AWS_ENDPOINT_URL']}; gateway {env['KINDGI_GATEWAY_URL']}; PostgreSQL through PgBouncer {env['DAGSTER_PG_HOST']}:{env['DAGSTER_PG_PORT']}.\n"
        f"Its variables: . {shlex.quote(str(profile.dir / 'env'))}   Stop it: python deploy/production.py stop "
        f"--dir {shlex.quote(str(profile.dir))}"
    )


SERVICE_VARIABLES = {
    "daemon": re.compile(
        r"^(DAGSTER_|KINDGI_HOME$|KINDGI_STORE$|AWS_|KINDGI_GATEWAY_(URL|KEY)$|KINDGI_REGISTRY_(URL|TOKEN)$|"
        r"KINDGI_SCHEDULE_|KINDGI_HANDLER_CGROUP$)"
    ),
    "webserver": re.compile(
        r"^(DAGSTER_|KINDGI_HOME$|KINDGI_STORE$|AWS_ENDPOINT_URL$|AWS_DEFAULT_REGION$|KINDGI_GATEWAY_URL$|"
        r"KINDGI_REGISTRY_URL$|KINDGI_SCHEDULE_)"
    ),
}
"""Which of the profile's variables each Dagster service is given. The daemon's code servers and run workers inherit
its environment: they run the suites, so they hold the instance's and the store's connections, the gateway's call
key and the nightly registry token. The webserver only shows and queues runs: the instance's connection and the
URLs, no key or token. Neither is given the registry's database or the gateway's master key."""


def service_env(service: str, base: dict[str, str], env: dict[str, str]) -> dict[str, str]:
    """The environment of Dagster service `service`: `base` (the caller's, without secrets) and those of the profile's
    variables `env` that SERVICE_VARIABLES gives it."""
    return {**base, **{k: v for k, v in env.items() if SERVICE_VARIABLES[service].match(k)}}


def daemon_alive(env: dict[str, str]) -> bool:
    """The daemon has written its heartbeats to the instance (`dagster-daemon liveness-check` exits 0)."""
    check = subprocess.run(
        [str(Path(sys.executable).parent / "dagster-daemon"), "liveness-check"],
        env=env,
        capture_output=True,
        check=False,
    )
    return check.returncode == 0


def restart(profile: Profile, name: str) -> None:
    """Start service `name` again as it was started, after its process died (a daemon killed in the night, say).
    Its old process group is left alone (the children it launched may still be finishing runs) and stopped by `stop`.
    `postgres` is the one service restarted while it runs (see `restart_postgres`)."""
    if name == "postgres":
        restart_postgres(profile)
        return
    pid = profile.state["pids"].get(name)
    if pid is None:
        refuse(f"no service {name!r} in {profile.dir}; its services: {', '.join(profile.state['pids']) or 'none'}")
    if pid in running_processes():
        refuse(f"{name} (pid {pid}) is still running; restart starts a service whose process has died")
    profile.state.setdefault("retired", []).append(pid)
    kept = json.loads((profile.dir / "services" / f"{name}.json").read_text())
    profile.wait(name, profile.spawn(name, kept["argv"], kept["env"], kept["ready"]))
    print(f"{name} restarted: pid {profile.state['pids'][name]}")


def restart_postgres(profile: Profile) -> None:
    """Stop the profile's own cluster and start it again on its port, as an operator's restart or a failover does:
    `pg_ctl restart -m fast` ends every session, an open transaction rolled back, and a client connects again only
    once the server is back. A server the profile was given (DAGSTER_PG_HOST) is shared with others and never
    restarted from here."""
    control = profile.state.get("own_cluster_control")
    if control is None:
        server = urlsplit(profile.state.get("admin_url", "")).netloc.rsplit("@", 1)[-1]
        refuse(
            f"the profile's PostgreSQL at {server} was given by DAGSTER_PG_HOST and may serve others: restart it where it "
            "is run, or start the profile without DAGSTER_PG_* for a cluster of its own"
        )
    began = time.monotonic()
    subprocess.run(as_postgres([*control, "-m", "fast", "-w", "restart"]), check=True, stdout=subprocess.DEVNULL)
    print(f"postgres restarted in {time.monotonic() - began:.1f} s")


def stop(profile: Profile) -> None:
    """Every process `start` recorded, newest first, by its process group; then the handlers' control group, and the
    profile's databases or cluster."""
    terminate(profile.state.get("pids", {}) | {f"group {pid}": pid for pid in profile.state.get("retired", [])})
    if profile.state.get("handlers_bound"):
        from kindgi_eval.agents.cgroups import find_hierarchy, remove_bound

        hierarchy = find_hierarchy()
        if hierarchy is not None:
            remove_bound(hierarchy, profile.state["handlers_bound"])
    if profile.state.get("own_cluster"):
        data = Path(profile.state["own_cluster"])
        subprocess.run(
            as_postgres([pg_bin("pg_ctl"), "-D", str(data / "cluster"), "-m", "fast", "-w", "stop"]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        shutil.rmtree(data, ignore_errors=True)
    elif profile.state.get("databases"):
        each_database(
            profile.state["admin_url"], 'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', profile.state["databases"]
        )
    profile.state = {"pids": {}}
    profile.save()


class Process(NamedTuple):
    pid: int
    parent: int
    group: int
    rss: int
    """Resident memory, bytes."""
    command: bytes
    """The command line, its arguments separated by NUL."""
    cpu_s: float
    """User and system CPU it has spent, seconds."""
    reaped_cpu_s: float
    """User and system CPU of the children it has waited for, seconds."""


def running_processes() -> dict[int, Process]:
    """Every live process on the machine, by PID (a zombie, dead but not yet reaped, is not live)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_bytes()
            except (OSError, IndexError):
                continue
            if fields[0] not in ("Z", "X"):
                pid = int(entry.name)
                utime, stime, cutime, cstime = (int(f) / CLOCK_TICKS for f in fields[11:15])
                found[pid] = Process(
                    pid, int(fields[1]), int(fields[2]), int(fields[21]) * PAGE, command, utime + stime, cutime + cstime
                )
    return found


def code_servers(group: int) -> list[Process]:
    """The code servers (`dagster api grpc`) in process group `group`: those the daemon started there, one for the
    workspace's code location and a new one at each reload of its workspace, the old one serving until its runs end.
    A daemon's group outlives it, so this finds a dead daemon's code servers too; another profile's are not in it."""
    return [p for p in running_processes().values() if p.group == group and is_code_server(p)]


def is_code_server(process: Process) -> bool:
    """Whether `process` is a code server (`dagster api grpc`)."""
    return b"\0api\0grpc\0" in process.command


def workers_of(servers: list[Process]) -> list[Process]:
    """The run workers these code servers spawned to execute a run (`multiprocessing`'s `spawn_main`)."""
    pids = {server.pid for server in servers}
    return [p for p in running_processes().values() if p.parent in pids and is_run_worker(p)]


def is_run_worker(process: Process) -> bool:
    """Whether `process` is one a code server spawned to execute a run."""
    return b"spawn_main" in process.command


def run_workers(daemon: int) -> list[Process]:
    """The run workers the daemon with PID `daemon` launched: the processes its code server (`dagster api grpc`)
    spawned to execute a run. Another profile's on the same machine are not among them."""
    processes = running_processes()
    return [
        p
        for p in processes.values()
        if is_run_worker(p)
        and p.parent in processes
        and b"grpc" in processes[p.parent].command
        and descends_from(p, daemon, processes)
    ]


def descends_from(process: Process, ancestor: int, processes: dict[int, Process]) -> bool:
    """Whether `process` is a descendant of process `ancestor`, through the live `processes`."""
    while process.parent in processes:
        if process.parent == ancestor:
            return True
        process = processes[process.parent]
    return process.parent == ancestor


def read_env(folder: Path) -> dict[str, str]:
    """The variables `start` wrote to `<folder>/env`, as `. env` sets them."""
    pairs = (line.removeprefix("export ").split("=", 1) for line in (folder / "env").read_text().splitlines())
    return {key: shlex.split(value)[0] if value else "" for key, value in pairs}


def terminate(pids: dict[str, int]) -> None:
    """SIGTERM to each process group (each service was started as one), SIGKILL to those with a live process left
    after STOP_S."""
    for pid in pids.values():
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + STOP_S
    left = dict(pids)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        for pid in left.values():
            reap(pid)
        groups = {p.group for p in running_processes().values()}
        left = {name: pid for name, pid in left.items() if pid in groups}
    for name, pid in left.items():
        print(f"{name} (process group {pid}) did not stop within {STOP_S:.0f} s; killing it", file=sys.stderr)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def reap(pid: int) -> None:
    """Collect `pid`'s exit status when it is our child (a `start` that failed stops what it spawned)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "stop", "restart"])
    parser.add_argument(
        "service",
        nargs="?",
        help="restart: the service to start again (daemon, webserver, registry-1, s3, "
        "gateway, pgbouncer), or postgres, the profile's own cluster, stopped and started again",
    )
    parser.add_argument(
        "--dir", type=Path, default=Path(".kindgi-production"), help="the profile's folder (default: %(default)s)"
    )
    parser.add_argument(
        "--registry-servers", type=int, default=2, help="registry server processes (default: %(default)s)"
    )
    parser.add_argument(
        "--tick-once-after",
        type=float,
        metavar="SECONDS",
        help="make the nightly schedule tick once, at the first whole minute this many seconds after the "
        "daemon starts, instead of at 02:00 (a night on demand, started by the schedule itself)",
    )
    parser.add_argument(
        "--max-concurrent-runs",
        type=int,
        metavar="N",
        help="runs at once on this machine (default: what deploy/dagster-postgres.yaml says)",
    )
    parser.add_argument(
        "--gateway-config",
        type=Path,
        default=GATEWAY_CONFIG,
        metavar="PATH",
        help="the LiteLLM gateway's config: its models, keys and each provider's limits (default: %(default)s)",
    )
    args = parser.parse_args()
    if args.max_concurrent_runs is not None and args.max_concurrent_runs < 1:
        parser.error("--max-concurrent-runs must be at least 1")
    if args.command == "start" and not args.gateway_config.is_file():
        refuse(f"no gateway config at {args.gateway_config}")
    profile = Profile(args.dir)
    if args.command != "start" and not profile.state_file.exists():
        if args.command == "stop":
            print(f"no profile in {profile.dir}: nothing to stop")
            return
        refuse(f"no profile in {profile.dir}; start one: python deploy/production.py start --dir {args.dir}")
    if args.command == "start":
        start(
            profile, max(1, args.registry_servers), args.tick_once_after, args.max_concurrent_runs, args.gateway_config
        )
    elif args.command == "restart":
        if not args.service:
            parser.error("restart needs the service to start again, e.g. daemon")
        restart(profile, args.service)
    else:
        stop(profile)


if __name__ == "__main__":
    main()
