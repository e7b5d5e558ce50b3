"""Keep secrets (and, in metadata mode, all conversation content) off the disk."""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"

# A key names a secret when one of its parts (between `_`, `-`, `.`, a camelCase hump, or
# the key's ends) is one of these words, in any case: DB_PASSWORD, app.secret, apiKey.
_KEY_WORD = r"(?i:pass(?:word|wd)|secret|token|api[_.-]?key|private[_.-]?key|access[_.-]?key)"
_KEY = (
    r"(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{0,64}?(?:(?<![A-Za-z0-9])|(?<=[a-z0-9])(?=[A-Z]))"
    + _KEY_WORD
    + r"(?![a-z0-9])[A-Za-z0-9_.-]{0,64}"
)
# What may stand between the key and its value: `KEY=`, `key: `, `"key": `, `KEY = '`.
_KEY_SEP = r"[\"']?[ \t]{0,16}[:=][ \t]{0,16}"
# A value looks like a secret: 6 characters or more, quoted (spaces allowed, one line), or
# bare with no space, quote, bracket, comma or semicolon and ending where a value ends, so
# that code such as `token = tokens[0]` or `password = getpass()` is left alone.
_VALUE = (
    r"(?:\"[^\"\n]{6,256}\"|'[^'\n]{6,256}'"
    r"|[^\s\"'`()\[\]{}<>,;&]{6,}(?![^\s\"',;&)\]}]))"
)

# Each pattern runs, in this order, only on a text whose case-folded form holds its gate (a
# cheap search: every string of every event written pays it, each streamed chunk and each
# path of a drift event). Every case-insensitive pattern holds one of `HINT_WORDS`, and case
# folding maps every character `(?i)` takes for one of their letters to that letter (only
# `i` has characters it does not fold so: İ and ı).
HINT_WORDS = ("bearer", "key", "token", "passw", "secret", "aws")


class _Pattern:
    def __init__(self, pattern: str, *, gate: str, needs: str = "") -> None:
        self.regex = re.compile(pattern)
        self.gate = re.compile(gate)  # searched in the case-folded text
        self.needs = needs  # one of these characters is in every match (or just after it)


_PATTERNS = (
    # PEM private keys, whole block (to the end of the text if never closed).
    _Pattern(
        r"-----BEGIN [A-Z0-9 ]{0,64}PRIVATE KEY[A-Z ]{0,32}-----(?s:.*?)"
        r"(?:-----END [A-Z0-9 ]{0,64}PRIVATE KEY[A-Z ]{0,32}-----|\Z)",
        gate="private key",
    ),
    # Vendor formats: OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-), Stripe, AWS access key
    # ids, GitHub, GitLab, Slack, Google, JWTs.
    _Pattern(
        "|".join(
            [
                r"\bsk-[A-Za-z0-9_-]{16,}",
                r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{10,}",
                r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
                r"\b(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{20,}",
                r"\bglpat-[A-Za-z0-9_-]{20,}",
                r"\bxox[a-z]-[A-Za-z0-9-]{10,}",
                r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
                r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
            ]
        ),
        gate=r"k(?:_live_|_test_)|a(?:kia|sia|iza)|gh[pousr]_|g(?:ithub_pat|lpat-)|xox|eyj|sk-",
    ),
    # Authorization headers.
    _Pattern(r"(?i:\bbearer[ \t]+[A-Za-z0-9._~+/-]{12,}=*)", gate="bearer"),
    # The password of a URL's userinfo: scheme://user:PASSWORD@host.
    _Pattern(
        r"(?P<keep>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@\"'<>]*:)[^\s/?#@\"'<>]+(?=@)",
        gate="://",
        needs="@",
    ),
    # An AWS secret access key (40 characters) after an AWS key name.
    _Pattern(
        r"(?P<keep>(?i:\baws[A-Za-z0-9_.-]{0,40}?)" + _KEY_SEP + r"[\"']?)"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        gate="aws",
        needs="=:",
    ),
    # KEY=value, key: value, "key": "value" for keys that name a secret.
    _Pattern(
        r"(?P<keep>" + _KEY + _KEY_SEP + r")" + _VALUE,
        gate="passw|secret|token|key",
        needs="=:",
    ),
)


# A text none of the gates' words is in (nor a URL with an `@`) holds no secret: tested first.
_PRE_CHECK = re.compile(
    r"k(?:ey|_live_|_test_)|a(?:kia|sia|iza|ws)|gh[pousr]_|g(?:ithub_pat|lpat-)|xox|eyj"
    r"|bearer|token|passw|s(?:k-|ecret)|private key"
)


def _replace(match: re.Match[str]) -> str:
    prefix = match.groupdict().get("keep")
    if prefix is None:
        return REDACTED
    value = match.string[match.end("keep") : match.end()]
    quoted = len(value) > 1 and value[0] in "\"'" and value[-1] == value[0]
    return prefix + (value[0] + REDACTED + value[0] if quoted else REDACTED)


# Keys whose values are conversation content (dropped in metadata mode); message
# structure (kinds, tool names, ids, timestamps) is kept so derivations stay valid.
CONTENT_KEYS = frozenset(
    {
        "input",
        "delta",
        "content",
        "args",
        "text",
        "summary",
        "decisions",
        "system_prompt",
        "instructions",
        "error",
        "compacted_history_summary",
        "title",
    }
)


class Redactor:
    """Scrubs known secrets and secret-looking strings from anything bound for disk."""

    def __init__(self, secrets: Iterable[str] = (), *, metadata_only: bool = False) -> None:
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
        self.metadata_only = metadata_only

    def with_mode(self, metadata_only: bool) -> Redactor:
        """Return this redactor (same secrets) for a session of the given persistence mode."""
        if metadata_only == self.metadata_only:
            return self
        other = Redactor(metadata_only=metadata_only)
        other._secrets = list(self._secrets)
        return other

    def contains_secret(self, data: bytes) -> bool:
        """Return True if `data` (a file's bytes) holds a known or secret-looking string."""
        text = data.decode("utf-8", errors="replace")
        return self.scrub_text(text) != text

    @property
    def secrets(self) -> tuple[str, ...]:
        """The exact strings (configured keys, passwords) this redactor replaces."""
        return tuple(self._secrets)

    def add_secret(self, secret: str | None) -> None:
        """Remember another exact string (e.g. a configured API key) to redact."""
        if secret and len(secret) >= 4 and secret not in self._secrets:
            self._secrets = sorted([*self._secrets, secret], key=len, reverse=True)

    def scrub_text(self, text: str) -> str:
        """Return `text` with every secret replaced by `[REDACTED]`."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        folded = text.casefold()
        if _PRE_CHECK.search(folded) is None and not ("@" in text and "://" in text):
            return text
        for pattern in _PATTERNS:
            if pattern.needs and not any(c in text for c in pattern.needs):
                continue
            if pattern.gate.search(folded) is not None:
                text = pattern.regex.sub(_replace, text)
        return text

    def scrub(self, value: Any) -> Any:
        """Recursively scrub strings in JSON-like data (and strip content in metadata mode)."""
        return self._walk(value, in_content=False)

    def _walk(self, value: Any, *, in_content: bool) -> Any:
        if isinstance(value, str):
            if in_content and self.metadata_only:
                return content_placeholder(value)
            return self.scrub_text(value)
        if isinstance(value, dict):
            return {
                k: self._walk(v, in_content=in_content or k in CONTENT_KEYS)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._walk(v, in_content=in_content) for v in value]
        return value


def content_placeholder(text: str) -> str:
    """Describe content that is not persisted: its hash and length, never the text."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"[not persisted: sha256:{digest}, {len(text)} chars]"


# Where a streamed text may be cut (after whitespace) unless a secret could still be growing
# across the cut: the line so far ends in a key and its separator (or an open quoted value),
# in `bearer`, or in part of a PEM header. Bounded like the patterns, so the last
# `_CONTEXT_SPAN` characters of a line decide.
_CONTINUES = re.compile(
    r"(?:-----BEGIN[A-Z0-9 ]{0,120}|(?i:bearer)[ \t]*"
    r"|(?:" + _KEY + r"|(?i:\baws[A-Za-z0-9_.-]{0,40}))"
    r"[\"']?[ \t]{0,16}(?:[:=][ \t]{0,16}(?:\"[^\"\n]{0,256}|'[^'\n]{0,256})?)?)\Z"
)
_CONTEXT_SPAN = 600
_CONTEXT_GATE = re.compile("-----begin|bearer|passw|secret|token|key|aws")  # case-folded
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,64}PRIVATE KEY[A-Z ]{0,32}-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,64}PRIVATE KEY[A-Z ]{0,32}-----")
# A text with no safe cut (no whitespace: a minified line, a base64 blob) is not held past
# `HOLD_LIMIT` characters: holding it all made every piece cost a copy of it (a quadratic
# stream). It is cut after the last character no secret's token holds, at least `HOLD_TAIL`
# characters before its end (longer than any real secret: a PEM RSA-4096 key is ~3.3 KB).
HOLD_LIMIT = 64 * 1024
HOLD_TAIL = 16 * 1024
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=.:~-")


class StreamScrubber:
    """Redacts a text that arrives in pieces; what it gives back, joined, is the text redacted.

    Whatever the pieces: each is given back up to the last point no secret can cross (after
    whitespace, outside a key's value, a Bearer token or an open PEM block); the rest is held
    until more text shows it safe, or until `flush`.
    """

    def __init__(self, redactor: Redactor, *, redact: bool = True) -> None:
        self._redactor = redactor
        # False: the pieces come back as they were given, cut only where it is safe, for a
        # caller that redacts each piece itself (the log does: nothing is scrubbed twice).
        self._redact = redact
        self._held = ""
        # Configured secrets with whitespace in them could be cut there: such a cut waits.
        self._spaced = [s for s in redactor.secrets if any(c.isspace() for c in s)]

    @property
    def held(self) -> str:
        """The text not given back yet."""
        return self._held

    def feed(self, delta: str) -> str:
        """Take the next piece; return the redacted text now known safe (maybe empty)."""
        start = len(self._held)
        self._held += delta
        cut = self._safe_cut(start)
        if cut <= 0 and len(self._held) > HOLD_LIMIT:
            cut = _forced_cut(self._held)
        if cut <= 0:
            return ""
        out, self._held = self._held[:cut], self._held[cut:]
        return self._redactor.scrub_text(out) if self._redact else out

    def flush(self) -> str:
        """Return the held text, redacted: the stream ended (or stops here)."""
        out, self._held = self._held, ""
        return self._redactor.scrub_text(out) if out and self._redact else out

    def _safe_cut(self, start: int) -> int:
        # Only cuts in the new piece can be new: one refused before stays refused (what
        # precedes it has not changed; a PEM block open there is still open there).
        held = self._held
        p = len(held)
        for _ in range(64):  # past that many refusals, wait for more text
            p = _after_last_space(held, start, p)
            if p == 0:
                return 0
            if self._cut_ok(p):
                return p
            p -= 1
        return 0

    def _cut_ok(self, p: int) -> bool:
        held = self._held
        line = held[max(held.rfind("\n", 0, p) + 1, p - _CONTEXT_SPAN) : p]
        if _CONTEXT_GATE.search(line.casefold()) and _CONTINUES.search(line):
            return False
        if held.rfind("-----BEGIN ", 0, p) >= 0:
            last = None
            for found in _PEM_BEGIN.finditer(held, 0, p):
                last = found
            if last is not None and _PEM_END.search(held, last.end(), p) is None:
                return False
        return not any(
            held.endswith(secret[:k], 0, p)
            for secret in self._spaced
            for k in range(1, len(secret))
        )


def _forced_cut(held: str) -> int:
    """Where to cut a text held too long: after a character no token holds, if one is near."""
    end = len(held) - HOLD_TAIL
    for i in range(end, max(0, end - HOLD_LIMIT), -1):
        if held[i - 1] not in _TOKEN_CHARS:
            return i
    return end


def _after_last_space(text: str, lo: int, end: int) -> int:
    """Return the position just after the last whitespace of `text[lo:end]`, or 0."""
    for i in range(end - 1, lo - 1, -1):
        if text[i].isspace():
            return i + 1
    return 0


# Files whose names say they hold secrets: never copied into a checkpoint's blobs.
_SECRET_FILE_NAMES = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".pgpass",
    "*.p12",
    "*.pfx",
)


def is_secret_file_name(path: str) -> bool:
    """Return True if the file's name (its last path part) marks it as holding secrets."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _SECRET_FILE_NAMES)


def url_without_userinfo(url: str) -> str:
    """Return `url` without its `user:password@` part, for messages (`model.baseUrl`)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"


def url_credential(url: str | None) -> str | None:
    """Return the password of a URL's userinfo (or the user alone, a token), if any."""
    if not url or "://" not in url:
        return None
    authority = url.partition("://")[2].partition("/")[0]
    userinfo, at, _ = authority.rpartition("@")
    if not at or not userinfo:
        return None
    user, colon, password = userinfo.partition(":")
    return password if colon else user


class RedactingLogFilter(logging.Filter):
    """Scrubs a log record's text (and its traceback) before any handler writes it."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self.redactor = redactor or Redactor()

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace the record's message by its redacted text; always let it through."""
        scrub = self.redactor.scrub_text
        message = record.getMessage()
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True
