"""create_app(settings): the FastAPI application with every router, the guard and the error handlers.

Errors become JSON with one line a person can act on, under "error":

- a body that is not JSON, or a field of the wrong type: 422 naming the field;
- named errors (errors.py): the status of the error's kind (STATUS): a conflict with
  the index 409, an unavailable server or model 503, a bad LLM reply 502, not found
  404, invalid input 422, an unsupported file 415, switched off 403, too large 413,
  a refused file or run 400;
- anything else is a bug: the guard logs its traceback and answers 500.

The interactive docs (/docs) load Swagger UI from the swagger-ui-bundle
package, served by this server: nothing comes from the internet.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

import ragloupe
from ragloupe.api.resources import Resources
from ragloupe.api.security import Guard
from ragloupe.config import Settings
from ragloupe.errors import Kind, RagloupeError

# Each kind of named error -> its HTTP status.
STATUS: dict[Kind, int] = {
    Kind.INVALID: 422, Kind.REFUSED: 400, Kind.UNSUPPORTED: 415, Kind.NOT_FOUND: 404,
    Kind.CONFLICT: 409, Kind.UNAVAILABLE: 503, Kind.BAD_REPLY: 502, Kind.FORBIDDEN: 403,
    Kind.TOO_LARGE: 413,
}


def create_app(settings: Settings, warm: bool = False) -> FastAPI:
    """The application; ``warm`` loads the model, the index and BM25 in the background at start,
    so the first search does not pay for them (`ragloupe serve` asks for it)."""
    from ragloupe.api import checks, documents, indexing, pages, runs, search, system

    resources = Resources(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if warm:
            resources.start_warm_up()
        yield

    app = FastAPI(title="ragloupe", version=ragloupe.__version__, docs_url=None, redoc_url=None,
                  lifespan=lifespan,
                  description="Search, documents, indexing, evaluation runs and answer checks over HTTP.")
    app.state.resources = resources
    for module in (system, checks, search, documents, pages, indexing, runs):
        app.include_router(module.router)
    _mount_docs(app)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RagloupeError, _named_error)
    app.add_middleware(Guard, resources=app.state.resources)
    return app


def serve_app() -> FastAPI:
    """The warmed application with the settings of the environment: what each worker process of
    `ragloupe serve --workers N` imports (uvicorn's factory), as the single process does."""
    from ragloupe.config import get_settings

    return create_app(get_settings(), warm=True)


def status_for(exc: RagloupeError) -> int:
    """The HTTP status of a named error: its kind's, from errors.py."""
    return STATUS[exc.kind]


async def _named_error(request: Request, exc: RagloupeError) -> JSONResponse:
    status = status_for(exc)
    request.app.state.resources.metrics.error(_route(request), type(exc).__name__)
    return JSONResponse({"error": str(exc)}, status_code=status)


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)


async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 with each bad field named: 'sources.0.text: Input should be a valid string'."""
    problems = [_problem(error) for error in exc.errors()]
    request.app.state.resources.metrics.error(_route(request), "invalid_request")
    return JSONResponse({"error": "; ".join(f"{p['field']}: {p['message']}" for p in problems),
                         "detail": problems}, status_code=422)


def _problem(error: dict[str, Any]) -> dict[str, str]:
    location = [str(part) for part in error.get("loc", ())]
    if error.get("type") == "json_invalid":
        where = location[1] if len(location) > 1 else "?"
        return {"field": "body", "message": f"not valid JSON (at character {where}): {error.get('msg', '')}"}
    if location and location[0] in {"body", "query", "path", "header"}:
        location = location[1:] or location
    return {"field": ".".join(location) or "body", "message": str(error.get("msg", "invalid"))}


def _route(request: Request) -> str:
    route = request.scope.get("route")
    return getattr(route, "path", None) or "unmatched"


def _mount_docs(app: FastAPI) -> None:
    """Swagger UI from the swagger-ui-bundle package, served locally."""
    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:  # the schema at /openapi.json is still there
        return
    app.mount("/static/swagger", StaticFiles(directory=swagger_ui_path), name="swagger")

    @app.get("/docs", include_in_schema=False)
    def docs() -> Any:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="ragloupe API",
                                   swagger_js_url="/static/swagger/swagger-ui-bundle.js",
                                   swagger_css_url="/static/swagger/swagger-ui.css",
                                   swagger_favicon_url="/static/swagger/favicon-32x32.png")
