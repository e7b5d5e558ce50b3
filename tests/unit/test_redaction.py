"""Secrets never reach disk; metadata mode keeps structure but drops content."""

from __future__ import annotations

import re
import sys

import pytest

from session.redaction import HINT_WORDS, REDACTED, Redactor, content_placeholder


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "xoxb-1234567890-abcdefghij",
        "AKIAABCDEFGHIJKLMNOP",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    ],
)
def test_secret_looking_strings_are_redacted(secret: str) -> None:
    scrubbed = Redactor().scrub_text(f"before {secret} after")
    assert secret not in scrubbed and REDACTED in scrubbed
    assert scrubbed.startswith("before ") and scrubbed.endswith(" after")


def test_bearer_and_assignments_keep_their_prefix() -> None:
    r = Redactor()
    assert (
        r.scrub_text("Authorization: Bearer abcdefghijklmnop.qrs") == f"Authorization: {REDACTED}"
    )
    assert r.scrub_text('api_key = "hunter2hunter2"') == f"api_key = {REDACTED}"
    assert r.scrub_text("password: s3cretpass") == f"password: {REDACTED}"


@pytest.mark.parametrize(
    "text",
    [
        "api_\u212aey = hunter2hunter2",  # KELVIN SIGN, which (?i) takes for k
        "pa\u017f\u017fword: s3cretpass",  # LONG S, which (?i) takes for s
        "AUTH_TOKEN=abcdef123456",
        "Authorization: BEARER abcdefghijklmnop",
    ],
)
def test_case_insensitive_secrets_are_found_whatever_their_case(text: str) -> None:
    scrubbed = Redactor().scrub_text(text)
    assert REDACTED in scrubbed and not scrubbed.endswith(("2hunter2", "retpass", "123456"))


def test_the_pre_check_misses_no_character_the_patterns_take_for_a_letter() -> None:
    # The pre-check searches the case-folded text for the words every case-insensitive
    # pattern holds: each character `(?i)` matches to one of their letters must fold to it.
    letters = sorted(set("".join(HINT_WORDS)))
    everything = "".join(map(chr, range(sys.maxunicode + 1))).replace("\n", "")
    for letter in letters:
        taken = re.findall(f"(?i){letter}", everything)
        assert all(ch.casefold() == letter for ch in taken), (letter, taken)


def test_configured_key_is_redacted_anywhere() -> None:
    r = Redactor(["plain-looking-key-42"])
    assert r.scrub({"a": ["x plain-looking-key-42 y"]}) == {"a": [f"x {REDACTED} y"]}


def test_ordinary_text_is_untouched() -> None:
    text = "The token budget and the key decisions: use REST; password policy TBD."
    assert Redactor().scrub_text(text) == text


def test_metadata_mode_drops_content_but_keeps_structure() -> None:
    r = Redactor(metadata_only=True)
    data = {
        "messages": [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "hi"}]}],
        "tool_call_id": "c1",
        "name": "read_file",
        "args": {"path": "secret/plan.md"},
    }
    out = r.scrub(data)
    part = out["messages"][0]["parts"][0]
    assert part["part_kind"] == "user-prompt" and out["messages"][0]["kind"] == "request"
    assert part["content"] == content_placeholder("hi")
    assert out["args"]["path"].startswith("[not persisted: sha256:")
    assert out["name"] == "read_file" and out["tool_call_id"] == "c1"
