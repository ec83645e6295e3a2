"""The workbench's shared Streamlit pieces: cached resources, error guard, widgets.

This is the only part of the ragloupe package that imports Streamlit. The
pipeline never imports it (tests/test_app_pages.py checks that), so the
CLI and the pipeline run without a Streamlit runtime. Pages under pages/
import from here and from the pipeline, and hold no pipeline logic.

- cache.py        the app's Workspace per index and other heavy objects (st.cache_resource)
- guard.py        anything a page raises turned into a readable message
- navigation.py, sidebar.py, state.py  the pages, the shared sidebar, each page's kept inputs
- widgets.py, text.py, inputs.py, tables.py, charts.py  widgets, safe text, widget values to
  arguments, records to table rows, figures (the last four pure)
- answer_view.py, check_panel.py, coverage_view.py, goldsets_view.py, tuning_view.py,
  labelling.py, table_view.py, why.py  sections of one page each
- background.py   indexing in a background thread
"""
