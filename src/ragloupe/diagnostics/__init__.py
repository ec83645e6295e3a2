"""What the workbench shows about the pipeline itself, not about one query:
2-D maps of the embeddings (projections), the run's settings, versions and
endpoints (system), and which gold pages belong to a typed question (gold).
No Streamlit here: the pages call these and lay out what they return."""
