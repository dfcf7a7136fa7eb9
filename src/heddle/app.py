"""The application factory: `create_app()` builds the whole service (API, engine, realtime)."""

from __future__ import annotations

import json

from fastapi import FastAPI

from heddle import API_VERSION
from heddle.api.cors import CorsMiddleware
from heddle.api.docs_ui import install_docs
from heddle.api.errors import install_error_handlers
from heddle.api.middleware import RequestContextMiddleware
from heddle.api.system import router as system_router
from heddle.config import Settings, get_settings
from heddle.console.routes import router as console_router
from heddle.deployment import check_deployment
from heddle.identify.routes import router as identify_router
from heddle.interop.a2a_routes import router as a2a_router
from heddle.interop.agui_routes import router as agui_router
from heddle.lifespan import AppServices
from heddle.loom.attachments.routes import router as attachments_router
from heddle.loom.events_routes import router as loom_events_router
from heddle.loom.memory_routes import router as memory_router
from heddle.loom.realtime_routes import router as realtime_router
from heddle.loom.routes import router as loom_router
from heddle.loom.routes_control import router as loom_control_router
from heddle.loom.routes_feedback import router as loom_feedback_router
from heddle.loom.routes_schedules import router as loom_schedules_router
from heddle.mcp_server import McpEndpoint
from heddle.observability.logging import configure_logging
from heddle.openapi import install_openapi
from heddle.realtime.admission import Admission
from heddle.realtime.server import build_realtime_router
from heddle.web.routes import router as web_router
from heddle.webhooks.routes import router as webhooks_router
from heddle.workspaces.routes import router as workspace_router
from heddle.workspaces.service import origin_allowed_anywhere

DESCRIPTION = """\
Heddle has two products behind one JSON API under `/v1`:

* **Identify** resolves a BIC, IBAN, routing number, sort code, IFSC, NUBAN, mobile-money
  wallet or Ghana bank code to its institution, its reachable rails and, on some rails, the
  holder name. Only an `identified` result is billed.
* **Loom** runs agent conversations: threads, messages and runs with a full trace.

Every response is an envelope: `{"status": "success", "data": ...}` or
`{"status": "error", "error": {"code", "message", "details"}}`.
"""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    check_deployment(settings)  # DeploymentError: a clear message, before anything starts
    configure_logging(settings.log_level, settings.log_json)
    svc = AppServices(settings)
    app = FastAPI(
        title="Heddle", version=API_VERSION, description=DESCRIPTION, lifespan=svc.lifespan,
        # /docs and /redoc come from packaged assets (heddle.api.docs_ui), not a CDN.
        docs_url=None, redoc_url=None, openapi_url="/openapi.json",
        # operationId = the handler's name (`get_run`), so generated clients read naturally.
        generate_unique_id_function=lambda route: route.name,
        # Heddle exports Prometheus metrics and structlog logs itself; FastAPI's native
        # OpenTelemetry hooks would only look up global providers on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.services = svc
    install_error_handlers(app)
    app.add_middleware(RequestContextMiddleware, max_body_bytes=settings.max_body_bytes,
                       metrics=svc.metrics, request_log=lambda: svc.container.request_log if svc.container else None,
                       max_header_bytes=settings.max_header_bytes, max_header_count=settings.max_header_count,
                       max_json_depth=settings.max_json_depth, body_timeout=settings.body_timeout,
                       access_log=settings.access_log, max_upload_bytes=settings.attachment_max_bytes)
    async def origin_allowed(origin: str) -> bool:
        async with svc.get().db.session() as session:
            return await origin_allowed_anywhere(session, origin)

    app.add_middleware(CorsMiddleware, origin_allowed=origin_allowed)
    app.include_router(system_router)
    app.include_router(workspace_router)
    app.include_router(webhooks_router)
    app.include_router(identify_router)
    app.include_router(loom_router)
    app.include_router(loom_control_router)
    app.include_router(loom_feedback_router)
    app.include_router(loom_events_router)
    app.include_router(attachments_router)
    app.include_router(memory_router)
    app.include_router(loom_schedules_router)
    app.include_router(agui_router)  # /v1/agui (heddle/interop/)
    app.include_router(a2a_router)  # /v1/a2a (heddle/interop/)
    app.include_router(realtime_router)
    app.add_route("/mcp", McpEndpoint(), include_in_schema=False)  # Identify as an MCP server
    if svc.realtime.hub is not None:  # the built-in Pusher-protocol server, at /app/{key}
        admission = Admission(per_address=settings.realtime_max_connections_per_address,
                              unauthenticated=settings.realtime_max_unauthenticated, metrics=svc.metrics)
        app.include_router(build_realtime_router(
            svc.realtime.hub, app_key=svc.realtime.key, app_secret=svc.realtime.secret, admission=admission))
    app.include_router(console_router)  # /console/api and /console/login, before the SPA's /console/{path}
    app.include_router(web_router)  # last: /console/{path} must not shadow the console API
    install_openapi(app)
    install_docs(app)
    return app


def document_json() -> str:
    """The OpenAPI document as the server serves it (for clients/js/openapi.json, `make js-types`)."""
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:", log_level="WARNING"))
    return json.dumps(app.openapi(), indent=2, ensure_ascii=False) + "\n"
