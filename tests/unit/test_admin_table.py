"""The plain table `sessions list` prints: widths in terminal cells, the title cut to fit."""

from __future__ import annotations

from lsp_server.admin.table import cut, quoted, render, width

HEADERS = ["id", "turns", "title"]


def test_columns_are_padded_to_the_widest_cell_and_numbers_align_right() -> None:
    rows = [["a1", "3", "short"], ["b2", "12", "a longer title"]]
    text = render(HEADERS, rows, shrink=2, right=[1])
    assert text.splitlines() == [
        "id  turns  title",
        "a1      3  short",
        "b2     12  a longer title",
    ]


def test_wide_characters_count_two_cells() -> None:
    assert width("エージェント") == 12 and width("abc") == 3 and width("e\u0301") == 1
    lines = render(["t", "x"], [["設計", "1"], ["ab", "2"]], shrink=0).splitlines()
    assert lines[1] == "設計  1" and lines[2] == "ab    2"  # both columns start at cell 6


def test_the_shrinking_column_is_cut_to_fit_the_terminal() -> None:
    rows = [["a1", "3", "x" * 100]]
    lines = render(HEADERS, rows, shrink=2, right=[1], columns=40).splitlines()
    assert all(width(line) <= 40 for line in lines)
    assert lines[1].endswith("…") and lines[1].startswith("a1      3  xxx")


def test_nothing_is_cut_without_a_terminal_width() -> None:
    rows = [["a1", "3", "x" * 300]]
    assert "x" * 300 in render(HEADERS, rows, shrink=2)


def test_wide_characters_are_cut_on_a_cell_boundary() -> None:
    assert cut("エージェントの設計", 7) == "エージ…"
    assert width(cut("エージェントの設計", 7)) <= 7
    assert cut("short", 7) == "short"


def test_control_characters_in_a_title_cannot_break_the_table() -> None:
    lines = render(HEADERS, [["a1", "1", "one\nline\x1b[31m red"]], shrink=2).splitlines()
    assert len(lines) == 2 and "\x1b" not in lines[1] and "one line" in lines[1]


def test_a_quoted_text_is_cut_with_its_length_when_long() -> None:
    assert quoted("config.ya") == "'config.ya'"
    assert quoted("a\nb") == "'a\\nb'"  # control characters escaped, as repr does
    long = "エージェント" * 2_000
    shown = quoted(long, cells=20)
    assert shown == "'エージェントエージ…' (12,000 characters)"  # 19 cells and the …
