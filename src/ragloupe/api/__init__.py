"""The HTTP face of ragloupe (FastAPI, served by uvicorn with `ragloupe serve`).

As thin as cli/ and pages/: one module per area (checks, documents, search,
runs, indexing, system) turns requests into calls of the same pipeline
functions and their records into JSON. app.create_app wires them up with the
guard (API key, body limits, metrics) and the error handlers that keep
tracebacks out of every response.
"""
