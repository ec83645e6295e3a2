"""`ragloupe serve`: the HTTP API (FastAPI under uvicorn), on 127.0.0.1 unless told otherwise.

    ragloupe serve [--host 127.0.0.1] [--port 8765]

A non-loopback address is refused unless RAGLOUPE_API_KEY is set. The
interactive docs are at /docs, the schema at /openapi.json.
"""

from __future__ import annotations

import argparse

from ragloupe.cli import CommandResult


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="serve search, documents, indexing, runs and answer checks over HTTP",
                            description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=None, help="address to listen on (default: RAGLOUPE_API_HOST, 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default: RAGLOUPE_API_PORT, 8765)")
    parser.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"),
                        help="uvicorn's log level (default warning)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> CommandResult:
    import uvicorn

    from ragloupe.api.app import create_app
    from ragloupe.api.security import check_bind
    from ragloupe.config import get_settings

    settings = get_settings()
    host = args.host or settings.api_host
    port = args.port if args.port is not None else settings.api_port
    check_bind(host, settings)
    print(f"ragloupe API on http://{host}:{port} (docs at /docs); Ctrl+C stops it", flush=True)
    uvicorn.run(create_app(settings, warm=True), host=host, port=port, log_level=args.log_level, access_log=False)
    return CommandResult({"stopped": True}, "ragloupe API stopped")
