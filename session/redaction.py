"""Keep secrets (and, in metadata mode, all conversation content) off the disk."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"

_SECRETS = re.compile(
    "|".join(
        [
            # PEM private keys, whole block.
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            # OpenAI-style and similar API keys.
            r"\bsk-[A-Za-z0-9_-]{16,}",
            r"\b(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{20,}",
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
            r"\bAKIA[0-9A-Z]{16}\b",
            r"\bAIza[0-9A-Za-z_-]{35}\b",
            # Authorization headers.
            r"(?i:\bbearer\s+[A-Za-z0-9._~+/-]{12,}=*)",
            # key = value assignments for things that look like credentials.
            r"(?P<assign>(?i:\b(?:api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token"
            r"|password)\s*[:=]\s*))(?P<quote>[\"']?)[^\s\"']{6,}(?P=quote)",
        ]
    )
)
# Cheap pre-check, searched in the case-folded text: a text without any of these cannot hold
# a secret the patterns match. Every case-insensitive pattern above holds `bearer`, `key`,
# `token` or `password`, and case folding maps every character `(?i)` takes for one of their
# letters to that letter (only `i` has characters it does not fold so: İ and ı). Searched this
# way it is ~9× faster than as a case-insensitive pattern, and it runs on every string of
# every event written (each streamed chunk, each path of a drift event).
HINT_WORDS = ("bearer", "key", "token", "password")
_HINTS = re.compile(r"private key|sk-|gh[pousr]_|github_pat|xox|akia|aiza|" + "|".join(HINT_WORDS))


def _replace(match: re.Match[str]) -> str:
    prefix = match.group("assign")
    return prefix + REDACTED if prefix else REDACTED


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

    def add_secret(self, secret: str | None) -> None:
        """Remember another exact string (e.g. a configured API key) to redact."""
        if secret and len(secret) >= 4 and secret not in self._secrets:
            self._secrets = sorted([*self._secrets, secret], key=len, reverse=True)

    def scrub_text(self, text: str) -> str:
        """Return `text` with every secret replaced by `[REDACTED]`."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if _HINTS.search(text.casefold()) is None:
            return text
        return _SECRETS.sub(_replace, text)

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
