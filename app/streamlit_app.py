"""ragloupe workbench: the entry point. `make run` starts it on 127.0.0.1:8501.

It only sets up the page and the navigation; each page is a file under the
top-level pages/ folder that reads widgets, calls into ragloupe and lays out
the result. This script sits in app/, not beside pages/: a pages/ folder next
to the main script puts Streamlit in its old "multipage v1" mode, where a fresh
server whose first request is a page URL (a bookmark, a reload) runs that file
alone, with an automatic sidebar instead of this navigation
(ragloupe/ui/navigation.py and docs/app.md say more).

Arguments after `--` (`streamlit run app/streamlit_app.py -- --index-if-empty PATH ...`)
name sources to index in the background when the index is empty, so a first
`make run` shows the app at once while the demo corpus is indexed.
"""

import sys

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, setting_warnings

bootstrap_environment()

import streamlit as st  # noqa: E402

from ragloupe.ui.navigation import PAGES, page_file  # noqa: E402
from ragloupe.ui.sidebar import sidebar_controls  # noqa: E402

ICON = PROJECT_ROOT / "assets" / "favicon.png"  # local: a material icon is fetched from Google

st.set_page_config(page_title="ragloupe", page_icon=str(ICON), layout="wide")

if "--index-if-empty" in sys.argv:
    from ragloupe.ui.background import start_first_run_index

    start_first_run_index(sys.argv[sys.argv.index("--index-if-empty") + 1:])


def _first_page() -> None:
    """The app's root URL opens the first page at its own URL: the default page is served only at /,
    so a first page that were the default would answer its own address (a bookmark, a link) with
    Streamlit's "Page not found"."""
    st.switch_page(page_file(PAGES[0].name))


sections: dict[str, list] = {}
for page in PAGES:
    sections.setdefault(page.section, []).append(st.Page(
        page_file(page.name), title=page.title, icon=f":material/{page.icon}:", url_path=page.name))
sections[PAGES[0].section].insert(0, st.Page(_first_page, title=PAGES[0].title, url_path="home",
                                             default=True, visibility="hidden"))
navigation = st.navigation(sections)
st.sidebar.caption("ragloupe · a loupe on retrieval-augmented generation")
sidebar_controls()  # the collection and the examiner view, for every page
for line in setting_warnings():  # a misspelt RAGLOUPE_* name would otherwise be silently ignored
    st.sidebar.warning(line)
navigation.run()
