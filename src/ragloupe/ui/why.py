"""Why this hit ranked here: a learned-fusion hit's score, split exactly into its features' shares."""

from __future__ import annotations

import streamlit as st

from ragloupe.diagnostics.feature_words import contribution_words, feature_words
from ragloupe.models import Hit


def learned_rows(hit: Hit) -> list[dict]:
    """One row per feature, largest share first: its raw value and what it added to the logit."""
    if hit.learned is None:
        return []
    rows = [{"what it measures": feature_words(name), "value": round(hit.learned.values.get(name, 0.0), 4),
             "effect": contribution_words(share), "contribution": round(share, 4), "feature": name}
            for name, share in hit.learned.contributions.items()]
    rows.sort(key=lambda row: (-abs(row["contribution"]), row["feature"]))
    return rows


def why_ranked(hit: Hit) -> None:
    """The hit's learned score and the table of contributions (they sum to the logit, with the intercept)."""
    if hit.learned is None:
        return
    st.caption(f"Why chunk {hit.chunk.position} of {hit.chunk.unit} ranked here (learned fusion): its score "
               f"(a logit, {hit.learned.logit:.3f}) is a starting value of {hit.learned.intercept:.3f} plus each "
               "feature's contribution below; a positive contribution raised the score, a negative one "
               f"lowered it. Probability of being the answer: {hit.learned.probability:.3f}.")
    st.dataframe(learned_rows(hit), hide_index=True, width="stretch",
                 column_config={"what it measures": st.column_config.TextColumn(width="large"),
                                "effect": st.column_config.TextColumn(width="medium")})
