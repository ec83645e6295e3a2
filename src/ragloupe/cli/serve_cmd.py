"""`ragloupe serve`: the HTTP API (FastAPI under uvicorn), on 127.0.0.1 unless told otherwise.

    ragloupe serve [--host 127.0.0.1] [--port 8765] [--workers 1]

``--workers N`` runs N server processes on the one port (uvicorn's workers): each
loads the model, the saved BM25 and the caches itself (N times the memory), and
searches then use N cores. One is the default: indexing jobs, their status and
the counters of /metrics live in the process that took the request, so with
more than one a job's status or the counters depend on which worker answers
(docs/api.md).

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
    parser.add_argument("--workers", type=_workers, default=1,
                        help="server processes on the port, each with its own model and caches (default 1)")
    parser.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"),
                        help="uvicorn's log level (default warning)")
    parser.set_defaults(handler=handle)


def _workers(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= 64:
        raise argparse.ArgumentTypeError(f"--workers takes a whole number from 1 to 64, not {text!r}")
    return count


def handle(args: argparse.Namespace) -> CommandResult:
    import uvicorn

    from ragloupe.api.app import create_app
    from ragloupe.api.security import check_bind
    from ragloupe.config import get_settings, share_cores_between_workers

    settings = get_settings()
    host = args.host or settings.api_host
    port = args.port if args.port is not None else settings.api_port
    check_bind(host, settings)
    print(f"ragloupe API on http://{host}:{port} (docs at /docs); Ctrl+C stops it", flush=True)
    if args.workers == 1:
        uvicorn.run(create_app(settings, warm=True), host=host, port=port, log_level=args.log_level,
                    access_log=False)
    else:  # each worker process builds its own app from the same environment, with cores/N threads
        share_cores_between_workers(settings, args.workers)
        uvicorn.run("ragloupe.api.app:serve_app", factory=True, workers=args.workers, host=host, port=port,
                    log_level=args.log_level, access_log=False)
    return CommandResult({"stopped": True}, "ragloupe API stopped")
