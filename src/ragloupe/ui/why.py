"""Why this hit ranked here: a learned-fusion hit's score, split exactly into its features' shares."""

from __future__ import annotations

import streamlit as st

from ragloupe.models import Hit


def learned_rows(hit: Hit) -> list[dict]:
    """One row per feature, largest share first: its raw value and what it added to the logit."""
    if hit.learned is None:
        return []
    rows = [{"feature": name, "value": round(hit.learned.values.get(name, 0.0), 4),
             "contribution": round(share, 4)} for name, share in hit.learned.contributions.items()]
    rows.sort(key=lambda row: (-abs(row["contribution"]), row["feature"]))
    return rows


def why_ranked(hit: Hit) -> None:
    """The hit's learned score and the table of contributions (they sum to the logit, with the intercept)."""
    if hit.learned is None:
        return
    st.caption(f"Why this hit ranked here (learned fusion): logit {hit.learned.logit:.3f} = intercept "
               f"{hit.learned.intercept:.3f} + the contributions below; probability {hit.learned.probability:.3f}")
    st.dataframe(learned_rows(hit), hide_index=True, width="stretch")
