"""How matches are ordered, and the snippet that shows each: pure functions of the texts.

A match where the query stands as a whole word (or words: the characters around it are
not letters or digits of a script written with spaces) ranks above one inside a word,
then by bm25's term-frequency part, with the query as the term and each text's length in
characters against the average of the matches: more occurrences, shorter texts first.
Ties go to the newest (the larger rowid). Ideographs, kana and other scripts written
without spaces never make a match "inside a word".
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Iterable

from .text import ascii_lower, fold

_K1 = 1.2  # bm25's constants
_B = 0.75
WORD_BONUS = 4.0  # above any term-frequency score (< k1 + 1): whole-word matches first
CONTEXT = 40  # characters of context a snippet keeps on each side of the first match
# Scripts written without spaces between words: a character of them is never "inside a word".
_NO_SPACES = (
    ("\u0e00", "\u0eff"),  # Thai, Lao
    ("\u1000", "\u109f"),  # Myanmar
    ("\u1780", "\u17ff"),  # Khmer
    ("\u3040", "\u30ff"),  # kana
    ("\u3100", "\u312f"),  # bopomofo
    ("\u3400", "\u4dbf"),  # CJK extension A
    ("\u4e00", "\u9fff"),  # CJK unified ideographs
    ("\uf900", "\ufaff"),  # CJK compatibility ideographs
    ("\U00020000", "\U0003ffff"),  # CJK extensions B and later
)


_ASCII_WORD = frozenset(string.ascii_letters + string.digits)


def is_word_char(char: str) -> bool:
    """Whether `char` is part of a word of a script written with spaces."""
    if char in _ASCII_WORD:
        return True
    if char < "\x80" or not char.isalnum():
        return False
    return not any(lo <= char <= hi for lo, hi in _NO_SPACES)


def occurrences(norm: str, query: str) -> tuple[int, int]:
    """Return how often `query` occurs in `norm` (non-overlapping) and how often as a word."""
    count = norm.count(query)
    left = is_word_char(query[0])
    right = is_word_char(query[-1])
    if not count or not (left or right):
        return count, count
    whole = 0
    size = len(query)
    end = len(norm)
    at = norm.find(query)
    while at >= 0:
        after = at + size
        if (not left or at == 0 or not is_word_char(norm[at - 1])) and (
            not right or after == end or not is_word_char(norm[after])
        ):
            whole += 1
        at = norm.find(query, after)
    return count, whole


def rank(matches: Iterable[tuple[int, str]], query: str) -> list[tuple[float, int]]:
    """Score each (rowid, folded text) that contains `query`; return (score, rowid), best first."""
    counted = []
    total = 0
    for rowid, norm in matches:
        count, whole = occurrences(norm, query)
        if count:  # the SQL checked it; a text that does not contain it is never a hit
            counted.append((rowid, len(norm), count, whole))
            total += len(norm)
    if not counted:
        return []
    average = total / len(counted)
    scored = []
    for rowid, length, count, whole in counted:
        tf = whole or count
        score = tf * (_K1 + 1.0) / (tf + _K1 * (1.0 - _B + _B * length / average))
        scored.append((score + WORD_BONUS if whole else score, rowid))
    scored.sort(reverse=True)
    return scored


def _owners(text: str, norm: str) -> list[tuple[int, int]] | None:
    """Map each character of `norm` to the span of `text` it comes from, if there is a map.

    Text is folded a cluster at a time (a character and the combining marks after it);
    when that gives `norm` (all but rare composing sequences), the map is exact.
    """
    owners: list[tuple[int, int]] = []
    pieces: list[str] = []
    start = 0
    for index in range(1, len(text) + 1):
        if index < len(text) and _continues(text[index]):
            continue
        piece = fold(text[start:index])
        pieces.append(piece)
        owners.extend([(start, index)] * len(piece))
        start = index
    if len(owners) != len(norm) or "".join(pieces) != norm:
        return None
    return owners


def _continues(char: str) -> bool:
    """Whether `char` composes with the one before it (combining mark, Hangul medial jamo)."""
    return bool(unicodedata.combining(char)) or "\u1160" <= char <= "\u11ff"


def _spans(norm: str, query: str) -> list[tuple[int, int]]:
    """Return the (start, end) of each non-overlapping occurrence of `query` in `norm`."""
    spans = []
    at = norm.find(query)
    while at >= 0:
        spans.append((at, at + len(query)))
        at = norm.find(query, at + len(query))
    return spans


def snippet(text: str, norm: str, query: str) -> str:
    """Return `text` around its first match, every match in the window marked with [ ].

    The text is shown as written; in the rare text whose folding does not go character by
    character (composing sequences), its folded form is shown instead.
    """
    spans = _spans(norm, query)
    shown = text
    if not text.isascii() and norm != ascii_lower(text):  # else one character each
        owners = _owners(text, norm)
        if owners is None:
            shown = norm
        else:
            spans = [(owners[s][0], owners[e - 1][1]) for s, e in spans]
    if not spans:
        return shown[: 2 * CONTEXT] + ("…" if len(shown) > 2 * CONTEXT else "")
    first, last = spans[0]
    start = max(0, first - CONTEXT)
    end = min(len(shown), last + CONTEXT)
    if start > 0 and (space := shown.find(" ", start, first)) >= 0:
        start = space + 1
    if end < len(shown) and (space := shown.rfind(" ", last, end)) >= 0:
        end = space
    pieces = ["…"] if start > 0 else []
    cursor = start
    for s, e in spans:
        if s < cursor or e > end:
            continue
        pieces += [shown[cursor:s], "[", shown[s:e], "]"]
        cursor = e
    pieces.append(shown[cursor:end])
    if end < len(shown):
        pieces.append("…")
    return "".join(pieces)
