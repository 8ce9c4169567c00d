"""The HTTP API of the registry (`/v1/eval-suites`, docs/design.md#the-suite-registry, docs/registry.md#the-http-api), on FastAPI.

Thin: each route authenticates, reads its input and makes one call into the store; every refusal is the JSON
`{"error": {"code", "message"}}` with the status its code calls for. Sockets only through the ASGI server.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match

from kindgi_eval.registry.catalogue import ENTRY_NAME_PATTERN, CatalogueEntry, CataloguePage
from kindgi_eval.registry.checking import PublishChecks
from kindgi_eval.registry.consumers import Consumers, accepted_kinds, checked_consumers
from kindgi_eval.registry.errors import STATUS_OF, ErrorCode, RegistryError
from kindgi_eval.registry.model import (
    SUITE_ID_PATTERN,
    ErrorBody,
    Health,
    SuiteFiles,
    SuitePage,
    SuiteVersion,
    VersionFiles,
    VersionList,
    with_kinds,
)
from kindgi_eval.registry.publishing import MAX_BODY, NewEntry, read_entry, read_files
from kindgi_eval.registry.semver import is_semver
from kindgi_eval.registry.storage import Answer, Idempotency, RegistryStore, StoredVersion
from kindgi_eval.registry.tokens import TokenInfo, is_token_shaped
from kindgi_eval.rules import SuiteLimits, unicode_text

API_VERSION = "1.0.0"
DEFAULT_LIMIT, MAX_LIMIT = 50, 100
DRAIN_AT_MOST = 16 * MAX_BODY
"""An oversized body declared by Content-Length is read and dropped up to this size before the 413, so the client
can read the answer instead of meeting a reset connection; beyond it the connection is closed unread."""
_SUITE_ID = re.compile(SUITE_ID_PATTERN)
_ENTRY_NAME = re.compile(ENTRY_NAME_PATTERN)
_CODE_OF_STATUS: dict[int, ErrorCode] = {status: code for code, status in STATUS_OF.items()}


class _RegistryBearer(HTTPBearer):
    """The OpenAPI `HTTPBearer` scheme, answering the secret a request carries, shaped as this registry's are; 401
    before any lookup when it is missing or malformed. Whether it is valid is for the store to say.

    One dependency rather than a function over `HTTPBearer`: FastAPI solves each level of dependencies anew on every
    request, at some tens of microseconds a level."""

    async def __call__(self, request: Request) -> str:  # type: ignore[override]
        header = request.headers.get("authorization")
        if header is None:
            raise RegistryError(
                "unauthorized",
                "Authorization: missing. Send `Authorization: Bearer <token>`; "
                "`kindgi-eval tokens issue --tenant T` makes a token.",
            )
        scheme, _, secret = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not is_token_shaped(secret.strip()):
            raise RegistryError(
                "unauthorized",
                "Authorization: not `Bearer <token>` with a token of this registry "
                "(kgi_ and 43 characters). Send the token `kindgi-eval tokens issue` printed.",
            )
        return secret.strip()


_BEARER = _RegistryBearer(
    scheme_name="HTTPBearer",
    auto_error=False,
    description="A registry token (`kindgi-eval tokens issue --tenant T`); it names the tenant.",
)
Secret = Annotated[str, Security(_BEARER)]
"""The calling token's secret, not yet checked: a route that takes it checks it in its own read, before anything else."""


async def caller(request: Request, secret: Secret) -> TokenInfo:
    """The token a request carries, valid and not revoked; it alone says which tenant the request acts for.

    It runs on the event loop: one indexed read by the hash, which costs less than a hop to the thread pool."""
    return await request.app.state.store.authenticate_awaited(secret)


Caller = Annotated[TokenInfo, Depends(caller)]
"""The calling token: a route that takes it answers 401 before anything else."""


_CAN = {
    "read": "it lists, shows and pulls suites",
    "publish": "it publishes its tenant's suites",
    "operator": "it publishes to the catalogue, and acts for no tenant",
    "nightly": "it reads every tenant's suites to run them, and acts for no tenant",
}
"""What each scope lets a token do, as a 403 says it."""


def _allowed(token: TokenInfo, scope: str, refused: str, fix: str) -> TokenInfo:
    """The token, if it has `scope`; 403 naming its scope, what it may do and what it was refused, otherwise."""
    if token.scope != scope:
        raise RegistryError(
            "forbidden",
            f"Authorization: token {token.id} has scope {token.scope!r}: {_CAN[token.scope]}, and "
            f"cannot {refused}. {fix}",
        )
    return token


async def publisher(token: Caller) -> TokenInfo:
    """The calling token, if its scope lets it publish; 403 naming its scope otherwise (after 401, before anything else)."""
    return _allowed(
        token,
        "publish",
        "publish a suite",
        "Publish with a token of scope 'publish' (kindgi-eval tokens issue --tenant T --scope publish).",
    )


Publisher = Annotated[TokenInfo, Depends(publisher)]
"""The calling token, allowed to publish."""


async def operator(token: Caller) -> TokenInfo:
    """The calling token, if it is an operator's; 403 naming its scope otherwise: no tenant writes the shared catalogue."""
    return _allowed(
        token,
        "operator",
        "publish to the catalogue, which every tenant reads",
        "An operator publishes there, with a token of scope 'operator' (kindgi-eval tokens issue --scope operator).",
    )


Operator = Annotated[TokenInfo, Depends(operator)]
"""The calling token, an operator's."""

Tenant = Annotated[
    str | None,
    Query(
        pattern=r"^[a-z0-9][a-z0-9-]{0,127}$",
        description="The tenant whose suites a nightly "
        "token reads, one tenant a request; a tenant's own token reads its own suites alone.",
    ),
]
"""The tenant a read names, if it names one."""


def _reads_for(token: TokenInfo, tenant: str | None) -> str:
    """The tenant whose suites a read by `token` reads: the one a nightly token names (422 when it names none); any
    other token's own, whatever the request names (a suite of another tenant is then one it does not have)."""
    if token.scope != "nightly":
        return token.tenant
    if tenant is None:
        raise RegistryError(
            "invalid",
            "tenant: required with a nightly token, which reads every tenant's suites, one "
            "tenant a request. Name it: ?tenant=acme.",
        )
    return tenant


_READS_OF_THE_VERSION = {
    "latest": {
        "operationId": "latest",
        "parameters": {"suite_id": "$response.body#/suite/id"},
        "description": "The suite this version belongs to, at its latest version.",
    },
    "versions": {
        "operationId": "versions",
        "parameters": {"suite_id": "$response.body#/suite/id"},
        "description": "Every version of the suite, this one among them.",
    },
    "one_version": {
        "operationId": "one_version",
        "parameters": {"suite_id": "$response.body#/suite/id", "version": "$response.body#/suite/version"},
        "description": "This version, read back.",
    },
}
"""OpenAPI links from a publish's answer to the reads of the version it names, so a client (or a stateful fuzzer)
that publishes knows where what it made is read; the keys are the routes' operation ids (their function names)."""


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI answers of the refusals a route can give, all of the one error shape."""
    words = {
        401: "missing, malformed, unknown, revoked or expired token",
        403: "tenantId is not the caller's tenant, or the token's scope may not do this",
        404: "no such suite or version of the caller's",
        409: "other content under that version, or a version not greater than the latest",
        412: "If-Match does not hold for the latest version",
        413: "body over 1 MiB",
        422: "invalid request",
        503: "the publish could not be checked in time (other publishes were being checked): retry it",
    }
    return {status: {"model": ErrorBody, "description": words[status]} for status in statuses}


@asynccontextmanager
async def _serving(app: FastAPI) -> AsyncIterator[None]:
    """The app's life on one event loop: the worker that checks publishes starts and stops with it, and what the
    store opened on that loop is closed on it at shutdown."""
    store: RegistryStore = app.state.store
    app.state.checks = PublishChecks(
        store.engine.url.render_as_string(hide_password=False), app.state.consumers, app.state.limits
    )
    app.state.checks.start()
    try:
        yield
    finally:
        app.state.checks.close()
        await store.aclose()


def _described(app: FastAPI, kinds: tuple[str, ...]) -> dict[str, Any]:
    """The app's OpenAPI description, built on first use: a suite's `kind` is one of `kinds`, the ones it accepts."""
    if app.openapi_schema is None:
        schemas = FastAPI.openapi(app)["components"]["schemas"]
        for name in ("EvalSuite", "SuiteSummary"):
            schemas[name] = with_kinds(schemas[name], kinds)
    return app.openapi_schema


def create_app(
    store: RegistryStore, consumers: Consumers, limits: Mapping[str, SuiteLimits] | None = None
) -> FastAPI:  # reads run on the event loop, writes in the thread pool
    """The registry's ASGI application over `store`, accepting the kinds `consumers` run, each tenant's suites held to
    its `limits` (the defaults for a tenant not named)."""
    consumers = checked_consumers(consumers)
    app = FastAPI(
        title="kindgi-eval suite registry",
        version=API_VERSION,
        summary="Tenant-scoped, semver-versioned, content-addressed evaluation suites.",
        openapi_url="/openapi.json",
        docs_url=None,
        redoc_url=None,
        separate_input_output_schemas=False,
        generate_unique_id_function=lambda route: route.name,  # operation ids are the routes' function names
        lifespan=_serving,
    )
    kinds = accepted_kinds(consumers)
    app.openapi = lambda: _described(app, kinds)  # type: ignore[method-assign]
    app.state.store = store
    app.state.consumers = consumers
    app.state.limits = dict(limits or {})
    app.state.aborted_uploads = 0
    """Publishes whose client disconnected before sending the whole body: ended quietly, counted here."""
    _handle_errors(app)

    @app.post(
        "/v1/eval-suites",
        status_code=201,
        response_model=SuiteVersion,
        summary="Publish a suite version",
        responses={
            201: {"description": "a new version, stored", "links": _READS_OF_THE_VERSION},
            200: {
                "model": SuiteVersion,
                "description": "that content is already stored under that version",
                "links": _READS_OF_THE_VERSION,
            },
            **_errors(401, 403, 409, 412, 413, 422, 503),
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/EvalSuite"}}},
            }
        },
    )
    async def publish(
        request: Request,
        token: Publisher,
        if_match: Annotated[
            str | None, Header(description="Publish only if the suite's latest ETag is one of these.")
        ] = None,
        idempotency_key: Annotated[
            str | None,
            Header(
                min_length=1,
                max_length=255,
                description="Retry-safe: the same key and body answer the first answer again.",
            ),
        ] = None,
    ) -> Response:
        """Publish a new, immutable version; 201 new, 200 that exact content is already stored under that version."""
        body = await _read_body(request)
        idempotency = Idempotency(idempotency_key, hashlib.sha256(body).hexdigest()) if idempotency_key else None
        if idempotency is not None:
            replayed = await run_in_threadpool(store.idempotent_answer, token.tenant, idempotency)
            if replayed is not None:
                return _answer(replayed)
        suite = await request.app.state.checks.suite(body, token.tenant)  # in a worker process: RE2 holds the GIL
        answer = await run_in_threadpool(
            lambda: store.publish(token.tenant, token.id, suite, if_match=if_match, idempotency=idempotency)
        )
        return _answer(answer)

    @app.get(
        "/v1/eval-suites",
        response_model=SuitePage,
        summary="List the caller's suites",
        responses=_errors(401, 403, 422),
    )
    async def list_suites(
        token: Caller,
        tenant: Tenant = None,
        after: Annotated[
            str | None,
            Query(
                pattern=SUITE_ID_PATTERN,
                description="A suite id: the page holds the suites "
                "after it, by id. The `next` of the page before is the id it ended with.",
            ),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Suites per page.")] = DEFAULT_LIMIT,
    ) -> SuitePage:
        """The caller's suites by id, the latest version of each, a page at a time."""
        reads = _reads_for(token, tenant)
        if tenant not in (None, reads):
            raise RegistryError(
                "forbidden",
                f"tenant: token {token.id} reads tenant {token.tenant!r}'s suites alone. List "
                f"tenant {tenant!r}'s with a token of that tenant.",
            )
        summaries, more = await run_in_threadpool(store.list_suites, reads, after, limit)
        return SuitePage(data=summaries, next=summaries[-1].id if more else None)

    @app.get(
        "/v1/eval-suites/{suite_id}",
        response_model=SuiteVersion,
        summary="The latest version",
        responses=_errors(401, 404, 422),
    )
    async def latest(secret: Secret, suite_id: str, tenant: Tenant = None) -> Response:
        """The latest (greatest) version of one of the caller's suites."""
        # the busiest route: the token's check and the read are one statement (401 still comes first)
        valid = suite_id if _SUITE_ID.fullmatch(suite_id) else None
        token, stored = await store.latest_for_awaited(secret, valid)
        reads = _reads_for(token, tenant)
        if reads != token.tenant:  # a tenant's suite, read by a nightly token
            stored = await run_in_threadpool(store.latest, reads, valid) if valid is not None else None
        return _version(_found(stored, suite_id))

    @app.get(
        "/v1/eval-suites/{suite_id}/versions",
        response_model=VersionList,
        summary="Every version",
        responses=_errors(401, 404, 422),
    )
    async def versions(token: Caller, suite_id: str, tenant: Tenant = None) -> VersionList:
        """Every version of one of the caller's suites, newest first."""
        reads = _reads_for(token, tenant)
        found = store.versions(reads, suite_id) if _SUITE_ID.fullmatch(suite_id) else None
        return VersionList(data=_found(found, suite_id))

    @app.get(
        "/v1/eval-suites/{suite_id}/versions/{version}",
        response_model=SuiteVersion,
        summary="One version",
        responses=_errors(401, 404, 422),
    )
    async def one_version(token: Caller, suite_id: str, version: str, tenant: Tenant = None) -> Response:
        """One version of one of the caller's suites."""
        return _version(_one_version(store, _reads_for(token, tenant), suite_id, version))

    @app.put(
        "/v1/eval-suites/{suite_id}/versions/{version}/files",
        status_code=201,
        response_model=SuiteFiles,
        summary="Keep the files a version was published from",
        responses={
            200: {"model": SuiteFiles, "description": "the version keeps files already: those first given"},
            **_errors(401, 403, 404, 413, 422),
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SuiteFiles"}}},
            }
        },
    )
    async def keep_files(request: Request, token: Publisher, suite_id: str, version: str) -> Response:
        """Keep the texts of the suite files a published version was read from, so a pull writes them byte for byte;
        they must hold exactly its content. 201 kept; 200 it keeps the files first given (a version never changes)."""
        body = await _read_body(request)
        stored = _one_version(store, token.tenant, suite_id, version)
        where = f"suite {suite_id!r} version {version}"
        files = await run_in_threadpool(
            lambda: read_files(body, stored.kind, json.loads(stored.document)["spec"], where, consumers)
        )
        kept = await run_in_threadpool(store.keep_files, token.tenant, suite_id, version, files)
        return Response(
            SuiteFiles(files=kept.files).model_dump_json(), status_code=kept.status, media_type="application/json"
        )

    @app.get(
        "/v1/eval-suites/{suite_id}/versions/{version}/files",
        response_model=VersionFiles,
        summary="The files a version was published from",
        responses=_errors(401, 404, 422),
    )
    async def version_files(token: Caller, suite_id: str, version: str, tenant: Tenant = None) -> VersionFiles:
        """The texts of the suite files one of the caller's versions was published from, or null when it was published
        as a JSON document."""
        reads = _reads_for(token, tenant)
        _one_version(store, reads, suite_id, version)
        return VersionFiles(files=await run_in_threadpool(store.files, reads, suite_id, version))

    @app.get(
        "/v1/catalogue",
        response_model=CataloguePage,
        summary="List the catalogue",
        tags=["catalogue"],
        responses=_errors(401),
    )
    async def catalogue(token: Caller) -> CataloguePage:
        """Every entry of the catalogue of standard suites, which every tenant reads: by name, the newest version first."""
        return CataloguePage(data=await run_in_threadpool(store.catalogue_entries))

    @app.get(
        "/v1/catalogue/{owner}/{name}/versions/{version}",
        response_model=CatalogueEntry,
        summary="One catalogue entry",
        tags=["catalogue"],
        responses=_errors(401, 404),
    )
    async def catalogue_entry(token: Caller, owner: str, name: str, version: str) -> CatalogueEntry:
        """One entry of the catalogue, with its files."""
        # checked like the suite routes' segments: a name or version no entry can have (a NUL, a slash) is never looked up
        valid = _ENTRY_NAME.fullmatch(f"{owner}/{name}") is not None and is_semver(version)
        found = await run_in_threadpool(store.catalogue_entry, f"{owner}/{name}", version) if valid else None
        if found is None:
            raise RegistryError(
                "not_found",
                f"catalogue entry {_shown(f'{owner}/{name}')} {_shown(version)}: the catalogue "
                "holds no such entry. List it with GET /v1/catalogue.",
            )
        return found

    @app.post(
        "/v1/catalogue",
        status_code=201,
        response_model=CatalogueEntry,
        summary="Publish a catalogue entry",
        tags=["catalogue"],
        responses={
            200: {"model": CatalogueEntry, "description": "that content is already the entry of that name and version"},
            **_errors(401, 403, 409, 413, 422),
        },
        openapi_extra={
            "requestBody": {"required": True, "content": {"application/json": {"schema": NewEntry.model_json_schema()}}}
        },
    )
    async def publish_entry(request: Request, token: Operator) -> Response:
        """Add an immutable, versioned entry to the catalogue every tenant reads; an operator's token only."""
        body = await _read_body(request)
        entry, sha256 = await run_in_threadpool(read_entry, body)
        status, added = await run_in_threadpool(store.publish_entry, token.id, entry, sha256)
        return Response(added.model_dump_json(), status_code=status, media_type="application/json")

    @app.get("/healthz", response_model=Health, summary="Liveness", tags=["health"])
    def healthz() -> Health:
        """Answers while the server runs; needs no token."""
        return Health(status="ok")

    return app


async def _read_body(request: Request) -> bytes:
    """The body, at most 1 MiB: a larger Content-Length is refused unparsed (read and dropped up to DRAIN_AT_MOST),
    a longer stream as soon as it passes the limit."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > MAX_BODY:
        if int(declared) <= DRAIN_AT_MOST:
            async for _ in request.stream():
                pass
        raise _too_large(int(declared))
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY:
                raise _too_large(None)
            chunks.append(chunk)
    except ClientDisconnect:  # the client went away mid-body: nobody is left to answer, and nothing to log
        request.app.state.aborted_uploads += 1
        raise
    return b"".join(chunks)


def _too_large(size: int | None) -> RegistryError:
    said = f"{size} bytes" if size is not None else "more bytes than that"
    return RegistryError(
        "too_large",
        f"body: {said}, over the limit of 1 MiB ({MAX_BODY} bytes). Publish a smaller suite, "
        "or split its cases over several suites.",
    )


def _answer(answer: Answer) -> Response:
    headers = {"ETag": answer.etag}
    if answer.replayed:
        headers["Idempotent-Replayed"] = "true"
    return Response(answer.body, status_code=answer.status, media_type="application/json", headers=headers)


def _version(stored: StoredVersion) -> Response:
    return Response(stored.body(), media_type="application/json", headers={"ETag": stored.etag})


def _one_version(store: RegistryStore, tenant: str, suite_id: str, version: str) -> StoredVersion:
    """One version of one of `tenant`'s suites, or 404 saying whether the suite or only that version is missing."""
    valid = _SUITE_ID.fullmatch(suite_id) is not None and is_semver(version)
    stored = store.version(tenant, suite_id, version) if valid else None
    if stored is None and _SUITE_ID.fullmatch(suite_id) and store.latest(tenant, suite_id) is not None:
        raise RegistryError(
            "not_found",
            f"suite {suite_id!r}: has no version {_shown(version)}. "
            f"List its versions with GET /v1/eval-suites/{suite_id}/versions.",
        )
    return _found(stored, suite_id)


def _found(value: Any, suite_id: str) -> Any:
    """The value, or 404; another tenant's suite is answered exactly as one that does not exist."""
    if value is None:
        raise RegistryError(
            "not_found", f"suite {_shown(suite_id)}: you have no such suite. List yours with GET /v1/eval-suites."
        )
    return value


def _shown(text: str) -> str:
    """A path segment as a message quotes it: a URL can be long, and its words are the client's, not ours."""
    return repr(text) if len(text) <= 80 else repr(text[:77] + "...")


def _handle_errors(app: FastAPI) -> None:
    """Every refusal in the one error shape, a validation error included (422, never a 500)."""

    def error(code: ErrorCode, message: str, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
        # a message may quote the request (a key, a value): made text that encodes, whatever the request held
        return JSONResponse(
            {"error": {"code": code, "message": unicode_text(message)}}, status_code=status, headers=headers
        )

    @app.exception_handler(ClientDisconnect)
    async def client_gone(_: Request, e: ClientDisconnect) -> Response:
        return Response(status_code=400)  # never reaches the client, which is gone; no traceback in the log

    @app.exception_handler(RegistryError)
    async def registry_error(_: Request, e: RegistryError) -> JSONResponse:
        headers = {"WWW-Authenticate": 'Bearer realm="kindgi-eval registry"'} if e.code == "unauthorized" else None
        if e.code == "busy":
            headers = {"Retry-After": "5"}
        return error(e.code, e.message, e.status, headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, e: RequestValidationError) -> JSONResponse:
        lines = []
        for problem in e.errors():
            loc = [
                str(part) for part in problem.get("loc", ())
            ]  # ("query", "limit"): the parameter is what a client names
            where = ".".join(loc[1:]) or (loc[0] if loc else "request")
            message = str(problem.get("msg") or "invalid")
            lines.append(f"{where}: {message[:1].lower()}{message[1:]} (got {repr(problem.get('input'))[:60]})")
        return error("invalid", "; ".join(lines), 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException) -> JSONResponse:
        if e.status_code == 404:
            return error(
                "not_found",
                f"{request.url.path}: no such route. The API is under /v1/eval-suites; see /openapi.json.",
                404,
            )
        if e.status_code == 405:
            allowed = _methods_of(request)
            message = f"{request.method} {request.url.path}: not a method of this route, which takes {', '.join(allowed)}. See /openapi.json."
            return error("invalid", message, 405, {"Allow": ", ".join(allowed)})
        return error(_CODE_OF_STATUS.get(e.status_code, "invalid"), str(e.detail), e.status_code, dict(e.headers or {}))


def _methods_of(request: Request) -> list[str]:
    """Every method the request's path takes, over all its routes: FastAPI makes one route per method, and Starlette's
    405 names only the methods of the first route whose path matched."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        matched, _ = route.matches(request.scope)
        if matched is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return sorted(methods)
