"""ragloupe workbench: the entry point. `make run` starts it on 127.0.0.1:8501.

It only sets up the page and the navigation; each page is a file under
views/ that reads widgets, calls into ragloupe and lays out the result.
The folder is not called pages/: a pages/ folder next to this file puts
Streamlit in its old "multipage v1" mode, where a fresh server whose first
request is a page URL (a bookmark, a reload) runs that file alone, with an
automatic sidebar instead of this navigation.

Arguments after `--` (`streamlit run streamlit_app.py -- --index-if-empty PATH ...`)
name sources to index in the background when the index is empty, so a first
`make run` shows the app at once while the demo corpus is indexed.
"""

import sys
from pathlib import Path

from ragloupe.config import bootstrap_environment, setting_warnings

bootstrap_environment()

import streamlit as st  # noqa: E402

PAGES_DIR = Path(__file__).parent / "views"
ICON = Path(__file__).parent / "assets" / "favicon.png"  # local: a material icon is fetched from Google

# (section, file, title, material icon). The first page is the default, served at /;
# the others at /<file>, the url_path given to st.Page.
PAGES = (
    ("Retrieval", "search_compare", "Search & compare", "compare_arrows"),
    ("Retrieval", "answer", "Answer", "chat"),
    ("Retrieval", "chunk_explorer", "Chunk Explorer", "view_list"),
    ("Retrieval", "embeddings", "Embeddings", "scatter_plot"),
    ("Measure", "evaluation", "Evaluation", "straighten"),
    ("Measure", "failure_audit", "Failure audit", "troubleshoot"),
    ("Index", "index_manage", "Index", "database"),
    ("Index", "run_info", "Run info", "info"),
)

st.set_page_config(page_title="ragloupe", page_icon=str(ICON), layout="wide")

if "--index-if-empty" in sys.argv:
    from ragloupe.ui.background import start_first_run_index

    start_first_run_index(sys.argv[sys.argv.index("--index-if-empty") + 1:])

sections: dict[str, list] = {}
for position, (section, file, title, icon) in enumerate(PAGES):
    sections.setdefault(section, []).append(st.Page(
        PAGES_DIR / f"{file}.py", title=title, icon=f":material/{icon}:", url_path=file,
        default=position == 0))
navigation = st.navigation(sections)
st.sidebar.caption("ragloupe · a loupe on retrieval-augmented generation")
for line in setting_warnings():  # a misspelt RAGLOUPE_* name would otherwise be silently ignored
    st.sidebar.warning(line)
navigation.run()
