"""How every verdict is worded and coloured, wherever a face shows it: one mapping.

The groundedness screen's verdicts (NOT_CONTRADICTED, DERIVED, MISATTRIBUTED,
UNSUPPORTED, UNVERIFIABLE) and the claim checker's (supported, unverified,
contradicted) each get one colour and one short meaning here, and nothing else
picks a colour or a gloss for them. So a sentence the screen calls UNSUPPORTED
is red with "in none of the passages" in the answer's verdict, in its token row
and in its citation panel alike, never a neutral "evidence located" beside it.

Colours are Streamlit's named colours (``:red-badge[...]``) with the CSS value
used where a table cell is tinted; the word is always shown with the colour, so
a reader who cannot tell red from green still reads the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VerdictLook:
    verdict: str  # as the checker writes it
    colour: str  # Streamlit's colour name: red, orange, blue, green, gray
    css: str  # the same colour for a tinted table cell
    meaning: str  # a few words a person reads beside the verdict
    backs_the_sentence: bool  # a passage may be shown as evidence for a sentence with this verdict


_RED, _ORANGE, _BLUE, _GREEN, _GRAY = (("red", "#ffd6d6"), ("orange", "#ffe4c2"), ("blue", "#d6e6ff"),
                                       ("green", "#d4f2dc"), ("gray", "#e6e6e6"))


def _look(verdict: str, colour: tuple[str, str], meaning: str, backs: bool) -> VerdictLook:
    return VerdictLook(verdict, colour[0], colour[1], meaning, backs)


VERDICTS: dict[str, VerdictLook] = {look.verdict: look for look in (
    # The groundedness screen (generate.groundedness), worst first.
    _look("UNSUPPORTED", _RED, "in none of the passages", False),
    _look("MISATTRIBUTED", _ORANGE, "in a retrieved passage, but not the one cited", False),
    _look("DERIVED", _BLUE, "computed from figures of the cited passages", True),
    _look("NOT_CONTRADICTED", _GREEN, "found in the cited passage (not proof it says the same)", True),
    _look("UNVERIFIABLE", _GRAY, "nothing checkable: the screen has no opinion", False),
    # The claim checker (generate.claims, generate.check).
    _look("contradicted", _RED, "a passage says otherwise", False),
    _look("unverified", _ORANGE, "the passages do not say", False),
    _look("supported", _GREEN, "a passage states it", True),
)}

_UNKNOWN = VerdictLook("", "gray", "#e6e6e6", "", False)


def look_of(verdict: str) -> VerdictLook:
    """The look of a verdict; an unknown one is gray with no meaning, never a pass colour."""
    return VERDICTS.get(verdict, _UNKNOWN)


def badge(verdict: str) -> str:
    """The verdict as a Streamlit badge with its meaning: ':red-badge[UNSUPPORTED] in none of ...'.

    Only verdict names from VERDICTS reach markdown here, never document or model text.
    """
    look = look_of(verdict)
    name = verdict if verdict in VERDICTS else "unknown verdict"
    return f":{look.colour}-badge[{name}] {look.meaning}".rstrip()


def cell_style(verdict: str) -> str:
    """CSS for a table cell holding the verdict (pandas Styler)."""
    return f"background-color: {look_of(verdict).css}"
