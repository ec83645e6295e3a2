"""The workbench's pages: which file each is, its title, section and URL.

The page files sit in the top-level pages/ folder (the product card's name);
the entry script that runs st.navigation sits in app/, not beside pages/:
Streamlit 1.67 checks for a folder called ``pages`` next to the main script
and, when one is there, runs a fresh server's first request in its old
multipage mode (a bookmarked page URL then opens alone, with an automatic
sidebar instead of this navigation). docs/app.md has the details.
"""

from __future__ import annotations

from typing import NamedTuple

from ragloupe.config import PROJECT_ROOT

PAGES_DIR = PROJECT_ROOT / "pages"


class PageEntry(NamedTuple):
    section: str
    name: str  # the file's stem and the page's URL path
    title: str
    icon: str  # a material icon name


# Every page is served at /<name>; the app's root / opens the first (app/streamlit_app.py: Streamlit
# serves its default page only at /, so a default first page answered its own address with
# "Page not found").
PAGES = (
    PageEntry("Retrieval", "search_compare", "Search & compare", "compare_arrows"),
    PageEntry("Retrieval", "answer", "Answer", "chat"),
    PageEntry("Retrieval", "chunk_explorer", "Chunk Explorer", "view_list"),
    PageEntry("Retrieval", "embeddings", "Embeddings", "scatter_plot"),
    PageEntry("Measure", "evaluation", "Evaluation", "straighten"),
    PageEntry("Measure", "failure_audit", "Failure audit", "troubleshoot"),
    PageEntry("Index", "index_manage", "Index", "database"),
    PageEntry("Index", "run_info", "Run info", "info"),
)


def page_file(name: str) -> str:
    """The page's file as an absolute path, what st.Page and st.switch_page take.

    Absolute, because Streamlit resolves a relative page path against the
    entry script's folder (app/), not against pages/.
    """
    if name not in {page.name for page in PAGES}:
        raise ValueError(f"no page called {name!r}")
    return str(PAGES_DIR / f"{name}.py")

