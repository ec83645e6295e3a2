"""Each page's inputs and last result, kept across navigation.

Streamlit forgets a widget's value when a run does not draw it, so leaving
a page and coming back resets it. Every page therefore seeds its widgets
from a store of its own ("_kept" in the session) and copies their values
back on each run; widgets get their value through session state only, never
a ``value=``/``default=`` argument too (Streamlit warns when both are set).

Keys are "<page>.<name>" so the Answer page's question and the Search
page's question are two values, and carry() can fill another page's inputs
("Send to Answer").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

_KEPT = "_kept"


def _kept() -> dict[str, Any]:
    return st.session_state.setdefault(_KEPT, {})


def keep(page: str, defaults: Mapping[str, Any]) -> None:
    """Give each of the page's widgets its last value (or its default) before it is drawn.

    Call at the top of the page, before the widgets, with every widget key
    the page draws (without the page prefix).
    """
    kept = _kept()
    for name, default in defaults.items():
        key = f"{page}.{name}"
        if key in st.session_state:
            kept[key] = st.session_state[key]
        else:
            st.session_state[key] = kept.get(key, default)


def value(page: str, name: str, default: Any = None) -> Any:
    """A page's current value for one input (the widget's, else the kept one)."""
    key = f"{page}.{name}"
    if key in st.session_state:
        return st.session_state[key]
    return _kept().get(key, default)


def put(page: str, name: str, new: Any) -> None:
    """Set one input of a page; on the current page call it from a widget callback."""
    key = f"{page}.{name}"
    _kept()[key] = new
    st.session_state[key] = new


def carry(page: str, values: Mapping[str, Any]) -> None:
    """Fill another page's inputs; it shows them the next time it is opened."""
    kept = _kept()
    for name, new in values.items():
        key = f"{page}.{name}"
        kept[key] = new
        st.session_state.pop(key, None)  # a stale widget value must not win over the carried one


def restrict(page: str, name: str, options: list) -> None:
    """Drop kept choices of a multiselect that are no longer offered (a document re-indexed away)."""
    key = f"{page}.{name}"
    current = st.session_state.get(key)
    if isinstance(current, list) and any(item not in options for item in current):
        st.session_state[key] = [item for item in current if item in options]
        _kept()[key] = st.session_state[key]


def result(page: str, new: Any = None) -> Any:
    """The page's last result (a ranking, an answer, a run list); store it when ``new`` is given."""
    key = f"_result.{page}"
    if new is not None:
        st.session_state[key] = new
    return st.session_state.get(key)


def forget(page: str) -> None:
    st.session_state.pop(f"_result.{page}", None)
