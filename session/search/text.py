"""What "contains" means: texts and queries compared after Unicode NFKC and case folding.

`fold(s)` is `NFKC(casefold(NFKC(s)))`: full-width and half-width forms, ligatures and other
compatibility characters become their plain forms (`ＡＢＣ`, `ﬁ` → `abc`, `fi`), and case
is folded the Unicode way (`Straße` → `strasse`). A query finds every text whose folded form
contains the folded query, in any script, inside words, across punctuation.
"""

from __future__ import annotations

import unicodedata

from .schema import GRAM_END


def clean(text: str) -> str:
    """Make text safe to bind and index: no NUL, no lone surrogates, no `GRAM_END` character."""
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if GRAM_END[0] in text:
        text = text.replace(GRAM_END[0], "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def fold(text: str) -> str:
    """Return `text` normalized for comparison (NFKC, case folded, NFKC again)."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def ascii_lower(text: str) -> str:
    """Lower-case A-Z only, as SQLite's built-in `lower()` does."""
    return text.encode("utf-8").lower().decode("utf-8")


def stored_norm(text: str) -> str | None:
    """Return the `norm` column for a (clean) text: its fold, or None when `lower()` gives it.

    None only when folding changes nothing but ASCII letters and a Unicode-aware `lower()`
    (SQLite built with ICU) would change nothing else either, so `lower(text)` in SQL is the
    fold whatever SQLite computes it.
    """
    if text.isascii():
        return None
    folded = fold(text)
    lowered = ascii_lower(text)
    return None if folded == lowered and text.lower() == lowered else folded
