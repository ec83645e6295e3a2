"""Page quality statuses and the reasons a person reads beside them."""

from __future__ import annotations

from ragloupe.config import Settings
from ragloupe.ingest.quality import assess_page

SETTINGS = Settings()  # the defaults: max 40% non-alphabetic, min 20 characters

PROSE = ("The board reviewed waiting times for planned care and agreed a plan "
         "to reduce delays across hospital and community services.")


def test_ordinary_prose_is_clean_with_no_reason():
    assert assess_page(PROSE, SETTINGS) == ("clean", "")


def test_page_with_almost_no_text_is_empty_and_says_how_little():
    assert assess_page("  Notes  ", SETTINGS) == ("empty", "only 5 characters of text")
    assert assess_page("\n \n", SETTINGS) == ("empty", "no text on the page")


def test_page_with_an_image_and_no_text_needs_ocr():
    assert assess_page("", SETTINGS, has_images=True) == ("empty", "no text layer: needs OCR")


def test_a_page_of_figures_is_not_degraded_and_says_its_share_of_digits():
    table = "Total 2023 1,234,567 2022 1,198,004 Change 36,563 3.05%"

    quality, reason = assess_page(table, SETTINGS)

    digits = sum(c.isdigit() for c in table)
    chars = sum(not c.isspace() for c in table)
    assert quality == "figures"
    assert reason == f"a page of figures ({digits / chars:.0%} digits)"


def test_a_financial_statement_page_is_a_page_of_figures():
    statement = "\n".join(["Statement of comprehensive net expenditure for the year ended 31 March 2023",
                           "Note 2023 £000 2022 £000"] + [
        f"Staff costs {n} ({n * 3 + 1:,}) {n * 41 + 7:,} ({n * 29 + 3:,}) {n * 17 + 11:,}"
        for n in range(101, 131)])

    quality, reason = assess_page(statement, SETTINGS)

    assert quality == "figures"
    assert reason.startswith("a page of figures (") and "degraded" not in reason


def test_many_non_letters_that_are_not_digits_still_degrade_the_page():
    leaders = PROSE + " " + " ".join(["Contents ........ §§ ** ## ~~ ++ == //"] * 12)

    quality, reason = assess_page(leaders, SETTINGS)

    assert quality == "degraded"
    assert reason.endswith("non-alphabetic characters")


def test_nonalpha_threshold_is_the_setting():
    table = "Total 2023 1,234,567 2022 1,198,004 Change 36,563 3.05%"

    assert assess_page(table, SETTINGS.replace(quality_max_nonalpha=0.95)).quality == "clean"


def test_a_few_private_use_glyphs_degrade_the_page_and_are_named():
    text = PROSE + " \uf0d8 bullet" * 12

    assert assess_page(text, SETTINGS) == ("degraded", "private-use glyphs (U+F0D8) x12")


def test_mostly_unreadable_glyphs_reject_the_page():
    text = "Risk " + "\uf0b7\uf0a7\ufffd" * 20

    quality, reason = assess_page(text, SETTINGS)

    assert quality == "rejected"
    assert "unreadable glyphs" in reason and "private-use glyphs (U+F0B7) x40" in reason


def test_page_of_numbers_only_is_a_page_of_figures():
    numbers = "2023 2022 1,234 5,678 (9,012) 3,456 7,890"
    digits = sum(c.isdigit() for c in numbers) / sum(not c.isspace() for c in numbers)

    assert assess_page(numbers, SETTINGS) == ("figures", f"a page of figures ({digits:.0%} digits)")


def test_a_page_of_figures_with_damage_is_degraded_and_names_both():
    text = "signi cant 12345 67890 (12345) 67890 12345 67890 12345 67890 " * 3

    quality, reason = assess_page(text, SETTINGS)

    assert quality == "degraded"
    assert reason.startswith("a page of figures (")
    assert reason.endswith("ligature or hyphenation damage x3")


def test_dropped_ligatures_are_reported_as_damage():
    text = PROSE + " The signi cant e ect on the o ce."

    quality, reason = assess_page(text, SETTINGS)

    assert quality == "degraded"
    assert reason == "ligature or hyphenation damage x3"


def test_ligatures_dropped_without_a_gap_are_reported_as_damage():
    text = PROSE + " The rst eld shows signicant ooding."

    assert assess_page(text, SETTINGS) == ("degraded", "ligature or hyphenation damage x4")


def test_many_line_end_hyphenations_are_reported_as_damage():
    text = "The manage-\nment of the organi-\nsation and its com-\nmittees " + PROSE

    assert assess_page(text, SETTINGS) == ("degraded", "ligature or hyphenation damage x3")


def test_one_line_end_hyphenation_is_ordinary_typesetting():
    assert assess_page("A well-\nknown plan. " + PROSE, SETTINGS) == ("clean", "")


def test_several_problems_are_all_named():
    text = PROSE + " \uf0d8" * 3 + " signi cant 12345 67890 12345 67890 12345 67890 12345 67890" * 3

    quality, reason = assess_page(text, SETTINGS)

    assert quality == "degraded"
    assert "private-use glyphs (U+F0D8) x3" in reason
    assert "ligature or hyphenation damage x3" in reason
    assert "a page of figures" in reason
