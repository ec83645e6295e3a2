"""The workbench's shared Streamlit pieces: cached resources, error guard, widgets.

This is the only part of the ragloupe package that imports Streamlit. The
pipeline never imports it (tests/test_app_pages.py checks that), so the
CLI and the pipeline run without a Streamlit runtime. Pages under pages/
import from here and from the pipeline, and hold no pipeline logic.
"""
