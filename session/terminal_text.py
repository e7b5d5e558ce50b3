r"""Text made inert for a terminal: control characters shown, never obeyed.

Stored and model text reaches a terminal through `agent-assist chat`, the admin commands
and the demo; a character a terminal obeys (ESC starting OSC 52 or OSC 8, CSI, a C1 CSI,
CR overwriting a line, a bidi override reordering it) would let that text write the
clipboard, retitle the window, hide a link's target or hide itself. What is replaced:

- C0 controls other than newline and tab, and DEL: their Unicode control pictures
  (ESC as `␛`, CR as `␍`, BEL as `␇`, DEL as `␡`);
- C1 controls (U+0080-U+009F, NEL among them), the line and paragraph separators
  U+2028/U+2029 and the bidi controls (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069):
  `\u` and four hex digits, as there is no picture for them.

`inert_line` also shows newline and tab (`␊`, `␉`), for a name printed on one line;
`inert_json` escapes in JSON what encoders leave raw (C1, separators, bidi): same value.
"""

from __future__ import annotations

import re

_PICTURES = {cp: chr(0x2400 + cp) for cp in range(0x20)} | {0x7F: "\u2421"}
_ESCAPED = [*range(0x80, 0xA0), 0x2028, 0x2029, 0x061C, 0x200E, 0x200F]
_ESCAPED += [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]

LINE_TABLE: dict[int, str] = _PICTURES | {cp: f"\\u{cp:04x}" for cp in _ESCAPED}
TEXT_TABLE: dict[int, str] = {cp: s for cp, s in LINE_TABLE.items() if cp not in (0x09, 0x0A)}

_UNSAFE = re.compile("[" + "".join(re.escape(chr(cp)) for cp in sorted(LINE_TABLE)) + "]")
_UNSAFE_IN_TEXT = re.compile("[" + "".join(re.escape(chr(cp)) for cp in sorted(TEXT_TABLE)) + "]")


def inert(text: str) -> str:
    """Return `text` with every character a terminal obeys (but newline and tab) shown."""
    if _UNSAFE_IN_TEXT.search(text) is None:
        return text
    return text.translate(TEXT_TABLE)


def inert_line(text: str) -> str:
    """Return `text` for one line: newline and tab shown too."""
    if _UNSAFE.search(text) is None:
        return text
    return text.translate(LINE_TABLE)


def has_controls(text: str) -> bool:
    """Whether `text` holds a control, line-separator or bidi character (newline and tab too)."""
    return _UNSAFE.search(text) is not None


# In UTF-8 JSON: DEL, C1, U+061C, U+200E/F, U+2028-U+202E, U+2066-U+2069 (C0 is escaped by
# every JSON encoder already).
_UNSAFE_IN_JSON = re.compile(
    rb"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]"
)


def _json_escape(match: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(match.group().decode("utf-8"))


def inert_json(data: bytes) -> bytes:
    """Return UTF-8 JSON with the characters JSON encoders leave raw escaped (same value)."""
    return _UNSAFE_IN_JSON.sub(_json_escape, data)


def counted(count: int, noun: str) -> str:
    """Return `1 turn`, `2 turns`: a count with its noun, plural unless it is one."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
