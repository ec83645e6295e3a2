"""`ragloupe engines` and `ragloupe attach`: the engines a mode can name, and outside systems attached as engines.

    ragloupe engines
    ragloupe attach NAME --chroma-path DIR --collection COL [--doc-field F --page-field F --page-base N] [--model M]
    ragloupe attach NAME --chroma-host HOST [--chroma-port PORT] --collection COL
    ragloupe attach NAME --python package.module:function
    ragloupe attach NAME --http URL
    ragloupe attach NAME --run FILE [--goldset PATH ...]
    ragloupe attach --remove NAME

Once attached, NAME is a mode of its own (``--mode NAME``, ``--mode hybrid+NAME``) in
search, ``search --compare``, eval, the app and the API. What is attached is kept in
``<index dir>/attached_engines.json`` (docs/engines.md). An attached Chroma collection
is only ever read.
"""

from __future__ import annotations

import argparse

from ragloupe.cli import CommandResult, add_json_flag


def register(sub: argparse._SubParsersAction) -> None:
    listing = sub.add_parser("engines", help="list the engines a mode can name: built-in, plugins, attached",
                             description=__doc__.splitlines()[0])
    add_json_flag(listing)
    listing.set_defaults(handler=handle_engines)

    attach = sub.add_parser("attach", help="attach an outside retriever or Chroma collection as an engine",
                            description=__doc__.splitlines()[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog="\n".join(__doc__.splitlines()[2:10]))
    attach.add_argument("name", nargs="?", help="the engine's name: lower-case letters, digits, - or _ "
                                                "(the mode that searches it)")
    attach.add_argument("--remove", metavar="NAME", default=None, help="forget an attached engine")
    attach.add_argument("--replace", action="store_true", help="replace an engine attached under the same name")
    kind = attach.add_argument_group("what to attach (one of)")
    kind.add_argument("--chroma-path", metavar="DIR", help="a Chroma persistent directory (only read: a copy is opened)")
    kind.add_argument("--chroma-host", metavar="HOST", help="a Chroma server")
    kind.add_argument("--python", metavar="MODULE:FUNCTION", help="a function: question -> ranked units")
    kind.add_argument("--http", metavar="URL", help="a retriever that answers a POSTed question (docs/engines.md)")
    kind.add_argument("--run", metavar="FILE", help="a run file as `ragloupe eval --run` reads it")
    chroma = attach.add_argument_group("a Chroma collection")
    chroma.add_argument("--collection", dest="chroma_collection", metavar="COL",
                        help="the Chroma collection to read (ragloupe's own named collection: "
                             "`ragloupe --collection NAME attach ...`)")
    chroma.add_argument("--chroma-port", type=int, default=8000, metavar="PORT")
    chroma.add_argument("--doc-field", default="", help="metadata field naming the document (default: "
                                                        "LangChain's source or LlamaIndex's file_name)")
    chroma.add_argument("--page-field", default="", help="metadata field holding the page (page, page_label)")
    chroma.add_argument("--page-base", type=int, default=None, help="the page field's first page: 0 or 1")
    chroma.add_argument("--model", default="", help="the sentence-transformers model that embedded the "
                                                    "collection (default: ragloupe's model in force)")
    attach.add_argument("--goldset", action="append", default=[], metavar="PATH",
                        help="with --run: the gold sets whose questions the run's query ids are "
                             "(default: every gold set ragloupe knows)")
    add_json_flag(attach)
    attach.set_defaults(handler=handle_attach)


def handle_engines(args: argparse.Namespace) -> CommandResult:
    from ragloupe.attached.attachments import file_of
    from ragloupe.config import get_settings
    from ragloupe.workspace import Workspace

    settings = get_settings()
    registry = Workspace.open(settings).engines()
    rows = registry.describe()
    width = max(len(r["name"]) for r in rows)
    lines = [f"{r['name'].ljust(width)}  {r['origin']:<11}  {r['score']}" + (f"\n{'':{width}}  {'':<11}  from {r['source']}"
                                                                            if r["source"] and r["origin"] != "unit signal" else "")
             for r in rows]
    lines += ["", f"attached engines are kept in {file_of(settings)}"]
    lines += [f"left out: {problem}" for problem in registry.problems]
    data = {"engines": rows, "problems": list(registry.problems), "attachments_file": str(file_of(settings))}
    return CommandResult(data, "\n".join(lines))


def handle_attach(args: argparse.Namespace) -> CommandResult:
    from ragloupe import attached
    from ragloupe.config import get_settings
    from ragloupe.errors import AttachRefused

    settings = get_settings()
    if args.remove:
        gone = attached.remove(settings, args.remove)
        return CommandResult({"removed": gone.name, "kind": gone.kind},
                             f"{gone.name}: no longer attached ({gone.target()} was not touched)")
    if not args.name:
        raise AttachRefused("name the engine: ragloupe attach NAME --chroma-path DIR --collection COL "
                            "(or --python, --http, --run)")
    kinds = [k for k, given in (("chroma", args.chroma_path or args.chroma_host), ("python", args.python),
                                ("http", args.http), ("run", args.run)) if given]
    if len(kinds) != 1:
        raise AttachRefused("say what to attach with one of --chroma-path, --chroma-host, --python, --http, --run")
    kind = kinds[0]
    if kind == "chroma":
        from ragloupe.workspace import Workspace

        workspace = Workspace.open(settings)
        embedder = _named_model(args.model, settings) if args.model else workspace.embedder
        attachment = attached.attach(
            settings, args.name, "chroma", replace=args.replace, embedder=embedder,
            collection=args.chroma_collection or "", path=args.chroma_path or "", host=args.chroma_host or "",
            port=args.chroma_port, doc_field=args.doc_field, page_field=args.page_field,
            page_base=args.page_base, model=args.model)
    elif kind == "python":
        attachment = attached.attach(settings, args.name, "python", replace=args.replace, function=args.python)
    elif kind == "http":
        attachment = attached.attach(settings, args.name, "http", replace=args.replace, url=args.http)
    else:
        attachment = attached.attach(settings, args.name, "run", replace=args.replace, path=args.run,
                                     goldsets=args.goldset)
    text = (f"{attachment.name}: attached ({attachment.target()}); search it with --mode {attachment.name} "
            f"or --mode hybrid+{attachment.name}")
    return CommandResult({"attached": attachment.name, "kind": attachment.kind, "options": attachment.options}, text)


def _named_model(model: str, settings):
    from ragloupe.errors import AttachRefused, EmbedderUnavailable
    from ragloupe.index.embedder import get_embedder

    try:
        return get_embedder(settings.replace(embedding_model=model))
    except EmbedderUnavailable as exc:
        raise AttachRefused(f"--model {model}: {exc}") from None
