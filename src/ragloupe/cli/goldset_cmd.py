"""`ragloupe goldset`: your own gold sets, headless.

    ragloupe goldset add NAME --question Q --doc DOC (--page N | --record ID) [--answer TEXT] [--by WHO]
    ragloupe goldset list [NAME]
    ragloupe goldset rm NAME QUERY_ID... | rm NAME --whole
    ragloupe goldset validate NAME|PATH...
    ragloupe goldset draft NAME [--n 20]          # needs the configured LLM
    ragloupe goldset accept NAME DRAFT_ID... | --all
    ragloupe goldset dismiss NAME DRAFT_ID...

Gold sets live under RAGLOUPE_GOLDSETS_DIR (default RAGLOUPE_RUNS_DIR/goldsets) in the
shipped format; `ragloupe eval NAME` evaluates one. Question and answer text is printed
as plain data.
"""

from __future__ import annotations

import argparse

from ragloupe.cli import CommandResult, add_json_flag
from ragloupe.config import Settings, get_settings


def register(sub: argparse._SubParsersAction) -> None:
    gold = sub.add_parser("goldset", help="your own gold sets: add, list, rm, validate, draft",
                          description=__doc__.splitlines()[0])
    actions = gold.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="add a question and the unit that answers it")
    add.add_argument("name")
    add.add_argument("--question", required=True)
    add.add_argument("--doc", required=True, help="the document's id (its file name without extension)")
    where = add.add_mutually_exclusive_group(required=True)
    where.add_argument("--page", type=int, help="the page that answers it (1-based)")
    where.add_argument("--record", help="the record that answers it")
    add.add_argument("--answer", default="", help="the answer text as the unit writes it")
    add.add_argument("--by", default="", help="who labels it (default: your login name)")
    listing = actions.add_parser("list", help="your gold sets, or the items of one")
    listing.add_argument("name", nargs="?")
    rm = actions.add_parser("rm", help="remove items, or a whole gold set with --whole")
    rm.add_argument("name")
    rm.add_argument("query_ids", nargs="*")
    rm.add_argument("--whole", action="store_true", help="delete the whole gold set")
    validate = actions.add_parser("validate", help="check gold sets against the index")
    validate.add_argument("refs", nargs="+", metavar="NAME|PATH")
    draft = actions.add_parser("draft", help="draft questions with the configured LLM")
    draft.add_argument("name")
    draft.add_argument("--n", type=int, default=20, help="units to draft from (default 20)")
    accept = actions.add_parser("accept", help="make offered drafts gold items")
    accept.add_argument("name")
    accept.add_argument("draft_ids", nargs="*")
    accept.add_argument("--all", action="store_true", help="accept every offered draft")
    accept.add_argument("--by", default="")
    dismiss = actions.add_parser("dismiss", help="reject offered drafts")
    dismiss.add_argument("name")
    dismiss.add_argument("draft_ids", nargs="+")
    for parser in (add, listing, rm, validate, draft, accept, dismiss):
        add_json_flag(parser)
        parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> CommandResult:
    from ragloupe.workspace import Workspace

    settings = get_settings()
    workspace = Workspace.open(settings)  # the command's: its store opened when an action first reads it
    return {"add": _add, "list": _list, "rm": _rm, "validate": _validate, "draft": _draft,
            "accept": _accept, "dismiss": _dismiss}[args.action](args, settings, workspace)


def _snapshot(settings: Settings, doc_ids, workspace):
    from ragloupe.evaluate.runs import index_snapshot

    return index_snapshot(settings, sorted(doc_ids), workspace.store)


def _add(args, settings: Settings, workspace) -> CommandResult:
    from ragloupe.evaluate.usersets import NewItem, add_item

    item = NewItem(args.question, args.doc, page=args.page, record_id=args.record or "",
                   answer=args.answer, by=args.by, via="cli")
    snapshot = _snapshot(settings, [args.doc], workspace)
    entry, warnings = add_item(settings, args.name, item, snapshot.documents,
                               snapshot.unit_texts.get(item.unit))
    lines = [f"{args.name}: added {entry['query_id']} ({item.unit}): {entry['question']}"]
    lines += [f"warning: {w}" for w in warnings]
    return CommandResult({"item": entry, "warnings": warnings}, "\n".join(lines))


def _list(args, settings: Settings, workspace=None) -> CommandResult:
    from ragloupe.errors import RagloupeError
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.evaluate.usersets import goldset_path, goldsets_dir, list_user_goldsets

    if args.name:
        goldset = load_goldset(goldset_path(settings, args.name))
        rows = [{"query_id": q.query_id, "unit": q.expected_units[0], "question": q.question,
                 "answer": q.expected_answer} for q in goldset.queries]
        lines = [f"{r['query_id']}  {r['unit']}  {r['question']}  -> {r['answer'] or '(no answer text)'}"
                 for r in rows] or [f"{args.name} has no item"]
        return CommandResult(rows, "\n".join(lines))
    rows = []
    for path in list_user_goldsets(settings):
        try:
            rows.append({"name": path.stem, "items": len(load_goldset(path).queries), "path": str(path)})
        except RagloupeError as exc:  # one unreadable file is a row, not a stop
            rows.append({"name": path.stem, "items": None, "path": str(path), "error": str(exc)})
    if not rows:
        return CommandResult([], f"no gold set of yours yet in {goldsets_dir(settings)}: "
                                 "`ragloupe goldset add NAME ...` makes one")
    lines = [f"{r['name']:<30}{'' if r['items'] is None else r['items']:>6}  "
             f"{r.get('error') or r['path']}" for r in rows]
    return CommandResult(rows, "\n".join(lines))


def _rm(args, settings: Settings, workspace=None) -> CommandResult:
    from ragloupe.cli.eval_cmd import BadOption
    from ragloupe.evaluate.usersets import delete_goldset, remove_items

    if args.whole == bool(args.query_ids):
        raise BadOption("name the items to remove, or --whole to delete the gold set (not both)")
    if args.whole:
        path = delete_goldset(settings, args.name)
        return CommandResult({"deleted": str(path)}, f"deleted {path}")
    removed = remove_items(settings, args.name, list(args.query_ids))
    return CommandResult({"removed": removed}, f"{args.name}: removed {', '.join(removed)}")


def _validate(args, settings: Settings, workspace) -> CommandResult:
    from ragloupe.errors import RagloupeError
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.evaluate.usersets import check_goldset, resolve_goldset

    lines, data, bad = [], [], False
    for ref in args.refs:
        try:
            goldset = load_goldset(resolve_goldset(ref, settings))
        except RagloupeError as exc:
            lines.append(f"cannot load: {exc}")
            data.append({"ref": ref, "error": str(exc)})
            bad = True
            continue
        findings = check_goldset(goldset, _snapshot(settings, {q.doc_id for q in goldset.queries}, workspace))
        bad = bad or any(f.severity == "error" for f in findings)
        lines.append(f"{goldset.name}: {len(goldset.queries)} questions, {len(findings)} finding(s)")
        lines += [f"  {f.severity}: {f.message}" for f in findings]
        data.append({"ref": ref, "name": goldset.name, "queries": len(goldset.queries),
                     "findings": [f.as_dict() for f in findings]})
    return CommandResult(data, "\n".join(lines), exit_code=1 if bad else 0)


def _draft(args, settings: Settings, workspace) -> CommandResult:
    from ragloupe.evaluate.drafting import draft_for

    body = draft_for(settings, args.name, args.n, workspace)
    meta = body["_meta"]
    lines = [f"{args.name}: {meta['offered']} of {meta['units_sampled']} drafts offered "
             f"(model {meta['model']}, prompt {meta['prompt_sha256'][:12]}, seed {meta['seed']})"]
    for d in body["drafts"]:
        lines.append(f"{d['draft_id']}  {d['status']:<8} {d['unit']}  {d['question'] or '—'}"
                     + (f"  -> {d['answer']}" if d["status"] == "offered" else f"  ({d['reason']})"))
    lines.append(f"`ragloupe goldset accept {args.name} D_001 ...` (or --all) makes offered drafts gold")
    return CommandResult(body, "\n".join(lines))


def _accept(args, settings: Settings, workspace) -> CommandResult:
    from ragloupe.cli.eval_cmd import BadOption
    from ragloupe.evaluate.usersets import accept_drafts, read_drafts

    body = read_drafts(settings, args.name)
    ids = ([d["draft_id"] for d in body["drafts"] if d["status"] == "offered"] if args.all
           else list(args.draft_ids))
    if not ids:
        raise BadOption(f"{args.name}: no draft to accept (name DRAFT_IDs, or --all)")
    snapshot = _snapshot(settings, {d["doc_id"] for d in body["drafts"]}, workspace)
    entries, warnings = accept_drafts(settings, args.name, ids, snapshot.documents, snapshot.unit_texts,
                                      by=args.by)
    lines = [f"{args.name}: accepted {len(entries)} draft(s) as "
             + ", ".join(e["query_id"] for e in entries)] + [f"warning: {w}" for w in warnings]
    return CommandResult({"items": entries, "warnings": warnings}, "\n".join(lines))


def _dismiss(args, settings: Settings, workspace=None) -> CommandResult:
    from ragloupe.evaluate.usersets import dismiss_drafts

    dismiss_drafts(settings, args.name, list(args.draft_ids))
    return CommandResult({"dismissed": list(args.draft_ids)}, f"{args.name}: dismissed "
                                                               + ", ".join(args.draft_ids))
