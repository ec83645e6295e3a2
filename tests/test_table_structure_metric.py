"""The ICDAR 2013 structure metric on small tables worked out by hand."""

from __future__ import annotations

from collections import Counter

from ragloupe.evaluate.table_structure import (Cell, GridTable, grid_from_rows, read_ground_truth,
                                               relations, score_document)


def test_each_cell_relates_to_its_right_and_lower_neighbour():
    table = grid_from_rows([["a", "b"], ["c", "d"]])

    assert relations(table.cells) == Counter({("a", "b", "right"): 1, ("c", "d", "right"): 1,
                                              ("a", "c", "below"): 1, ("b", "d", "below"): 1})


def test_blank_cells_are_skipped_to_the_nearest_filled_one():
    table = grid_from_rows([["a", "", "b"], ["", "", ""], ["c", "x", ""]])

    assert relations(table.cells) == Counter({("a", "b", "right"): 1, ("c", "x", "right"): 1,
                                              ("a", "c", "below"): 1})


def test_a_spanning_header_relates_to_every_column_below_it():
    table = grid_from_rows([["", "Sales", None], ["Region", "2012", "2013"]])

    assert relations(table.cells) == Counter({("Sales", "2012", "below"): 1, ("Sales", "2013", "below"): 1,
                                              ("Region", "2012", "right"): 1, ("2012", "2013", "right"): 1})


def test_a_cell_spanning_rows_relates_right_in_each_row():
    cells = (Cell(0, 0, "Group", end_row=1), Cell(0, 1, "x"), Cell(1, 1, "y"))

    assert relations(cells) == Counter({("Group", "x", "right"): 1, ("Group", "y", "right"): 1,
                                        ("x", "y", "below"): 1})


def test_whitespace_and_accents_are_ignored():
    truth = [grid_from_rows([["Région", "Total  2012"], ["Nord", "12"]])]
    extracted = [grid_from_rows([["Re gion", "Total\n2012"], ["Nord", "12"]])]

    score = score_document(truth, extracted)

    assert (score.correct, score.extracted, score.expected) == (4, 4, 4)
    assert score.f1 == 1.0


def test_a_wrong_cell_costs_the_relations_it_takes_part_in():
    truth = [grid_from_rows([["a", "b"], ["c", "d"]])]
    extracted = [grid_from_rows([["a", "b"], ["c", "e"]])]

    score = score_document(truth, extracted)

    assert (score.correct, score.extracted, score.expected) == (2, 4, 4)
    assert score.precision == 0.5 and score.recall == 0.5


def test_tables_pair_one_to_one_and_an_unpaired_table_counts_as_false():
    truth = [grid_from_rows([["a", "b"], ["c", "d"]])]
    twice = [grid_from_rows([["a", "b"], ["c", "d"]]), grid_from_rows([["a", "b"], ["c", "d"]])]

    score = score_document(truth, twice)

    assert (score.correct, score.extracted, score.expected) == (4, 8, 4)
    assert (score.tables_paired, score.tables_extracted, score.tables_expected) == (1, 2, 1)


def test_tables_on_different_pages_are_not_paired():
    truth = [GridTable(1, grid_from_rows([["a", "b"]]).cells)]
    extracted = [GridTable(2, grid_from_rows([["a", "b"]]).cells)]

    score = score_document(truth, extracted)

    assert (score.correct, score.tables_paired) == (0, 0)
    assert score.recall == 0.0


def test_a_missed_table_counts_all_its_relations_as_missed():
    truth = [grid_from_rows([["a", "b"]]), grid_from_rows([["x", "y"], ["z", "w"]])]
    extracted = [grid_from_rows([["a", "b"]])]

    score = score_document(truth, extracted)

    assert (score.correct, score.extracted, score.expected) == (1, 1, 5)


def test_ground_truth_file_is_read_with_spans(tmp_path):
    path = tmp_path / "x-str.xml"
    path.write_text("""<?xml version="1.0" encoding="UTF-8"?>
<document filename="x-str.xml"><table id="1"><region id="1" page="2">
  <cell id="1" start-col="1" start-row="0" end-col="2"><content>Sales</content></cell>
  <cell id="2" start-col="1" start-row="1"><content>2012</content></cell>
  <cell id="3" start-col="2" start-row="1"><content>2013</content></cell>
</region></table></document>""", encoding="utf-8")

    (table,) = read_ground_truth(path)

    assert table.page == 2
    assert relations(table.cells) == Counter({("Sales", "2012", "below"): 1, ("Sales", "2013", "below"): 1,
                                              ("2012", "2013", "right"): 1})
