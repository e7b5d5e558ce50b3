"""Secrets never reach disk; metadata mode keeps structure but drops content."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from session.checkpoints import SECRET_FILE_WITHHELD
from session.local.manager import SessionManager
from session.redaction import (
    HINT_WORDS,
    HOLD_LIMIT,
    REDACTED,
    RedactingLogFilter,
    Redactor,
    StreamScrubber,
    content_placeholder,
    is_secret_file_name,
    url_credential,
    url_without_userinfo,
)

from .conftest import make_lifecycle, request, response, run_turn


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
    assert r.scrub_text('api_key = "hunter2hunter2"') == f'api_key = "{REDACTED}"'
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


# -- the corpus: every form of secret the redactor knows ----------------------------------
# (a line as it appears in a `.env`, a config file or a reply, and the secret in it). The
# security suite writes them into a workspace `.env` and greps the whole store for each.
SECRET_FORMS: list[tuple[str, str]] = [
    ("DB_PASSWORD=Tr0ub4dor-db-9371", "Tr0ub4dor-db-9371"),
    ("POSTGRES_PASSWORD=pgS3cretPw5529", "pgS3cretPw5529"),
    ("MYSQL_ROOT_PASSWD='rootpw 77412'", "rootpw 77412"),
    (
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq4r8e1x0t",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq4r8e1x0t",
    ),
    (
        "aws_key: Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0MTIz",
        "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0MTIz",
    ),
    ("AWS_ACCESS_KEY_ID=AKIAQ3EGRH5KZ7TNWX2P", "AKIAQ3EGRH5KZ7TNWX2P"),
    ("session key ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A"),
    ("export GITHUB_TOKEN=tok-export-66310", "tok-export-66310"),
    ("app.secret=appS3cret61530", "appS3cret61530"),
    ("x-api-key: yamlkey-90817", "yamlkey-90817"),
    ("private_key = pk-assign-31877", "pk-assign-31877"),
    ('"client_secret": "cs-json-44120"', "cs-json-44120"),
    ('{"apiKey":"camelKey03917"}', "camelKey03917"),
    ("password: hunter2-yaml", "hunter2-yaml"),
    ("DATABASE_URL=postgres://app:pgurlpw3318@db.internal:5432/app", "pgurlpw3318"),
    ("origin https://deploy:urltok8842@github.com/acme/app.git", "urltok8842"),
    ("OPENAI=sk-proj-Q2x8vLm4Tz7Rk1Wp9Ys3Nd6Hc", "sk-proj-Q2x8vLm4Tz7Rk1Wp9Ys3Nd6Hc"),
    ("legacy sk-Lm4Tz7Rk1Wp9Ys3Nd6HcQ2x8", "sk-Lm4Tz7Rk1Wp9Ys3Nd6HcQ2x8"),
    ("ANTHROPIC=sk-ant-api03-Vb7Nq2Lx9Rt4Kz1Mw8Pd", "sk-ant-api03-Vb7Nq2Lx9Rt4Kz1Mw8Pd"),
    ("STRIPE=sk_live_51HqLx9Rt4Kz1Mw8PdVb7", "sk_live_51HqLx9Rt4Kz1Mw8PdVb7"),
    ("restricted rk_live_51Kz1Mw8PdVb7HqLx9Rt4", "rk_live_51Kz1Mw8PdVb7HqLx9Rt4"),
    ("test mode sk_test_4eC39HqLyjWDarjtT1zdp7dc", "sk_test_4eC39HqLyjWDarjtT1zdp7dc"),
    ("ghp_R4nd0mT0k3nV4lu3F0rT3st1ngAbCdEf12", "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngAbCdEf12"),
    ("oauth gho_16C7e42F292c6912E7710c838347Ae178B4a", "gho_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("app ghs_Xq2Lm9Rt4Kz1Mw8PdVb7Nc3Hy6Jf0Ga5", "ghs_Xq2Lm9Rt4Kz1Mw8PdVb7Nc3Hy6Jf0Ga5"),
    ("user ghu_Mw8PdVb7Nc3Hy6Jf0Ga5Xq2Lm9Rt4Kz1", "ghu_Mw8PdVb7Nc3Hy6Jf0Ga5Xq2Lm9Rt4Kz1"),
    ("refresh ghr_Nc3Hy6Jf0Ga5Xq2Lm9Rt4Kz1Mw8PdVb7", "ghr_Nc3Hy6Jf0Ga5Xq2Lm9Rt4Kz1Mw8PdVb7"),
    (
        "fine github_pat_11AB2CD3E0_Xq2Lm9Rt4Kz1Mw8PdVb7Nc",
        "github_pat_11AB2CD3E0_Xq2Lm9Rt4Kz1Mw8PdVb7Nc",
    ),
    ("gitlab glpat-Xq2Lm9Rt4Kz1Mw8PdVb7N", "glpat-Xq2Lm9Rt4Kz1Mw8PdVb7N"),
    ("slack xoxb-2048-1597-Xq2Lm9Rt4Kz1Mw8P", "xoxb-2048-1597-Xq2Lm9Rt4Kz1Mw8P"),
    ("slack user xoxp-4096-3181-Lm9Rt4Kz1Mw8PdV", "xoxp-4096-3181-Lm9Rt4Kz1Mw8PdV"),
    ("maps AIzaSyB-Xq2Lm9Rt4Kz1Mw8PdVb7Nc3Hy6Jf0Gx", "AIzaSyB-Xq2Lm9Rt4Kz1Mw8PdVb7Nc3Hy6Jf0Gx"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.Sfl4KxwRJSMeKKF2QT4fwpM",
        "eyJzdWIiOiIxMjM0NSJ9",
    ),
    ("Authorization: Bearer brr-Xq2Lm9Rt4Kz1Mw8P", "brr-Xq2Lm9Rt4Kz1Mw8P"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
    ),
]

# Text that looks like code or prose about keys, and stays: a value is a secret when it has
# 6 characters or more and, bare, no space, bracket, parenthesis, comma or semicolon.
NOT_SECRETS = [
    "token = tokens[0]",
    "password = getpass()",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "secret = None",
    "max_tokens = 128000",
    "tokenizer = AutoTokenizer.from_pretrained(name)",
    "keyboard: us-intl",
    "The token budget and the key decisions: use REST; password policy TBD.",
    "see https://example.com/docs and git@github.com:acme/app.git",
    "passes = 3; bypass: true",
]


@pytest.mark.parametrize(("line", "secret"), SECRET_FORMS)
def test_every_form_in_the_corpus_is_redacted(line: str, secret: str) -> None:
    scrubbed = Redactor().scrub_text(f"before\n{line}\nafter")
    assert secret not in scrubbed and REDACTED in scrubbed
    assert scrubbed.startswith("before\n") and scrubbed.endswith("\nafter")


def test_keys_and_url_hosts_are_kept_only_the_secret_goes() -> None:
    r = Redactor()
    assert r.scrub_text("DB_PASSWORD=hunter2x") == f"DB_PASSWORD={REDACTED}"
    assert r.scrub_text('"client_secret": "abc def"') == f'"client_secret": "{REDACTED}"'
    assert r.scrub_text("postgres://app:pw@db/x") == f"postgres://app:{REDACTED}@db/x"
    assert r.scrub_text("https://u:t@github.com") == f"https://u:{REDACTED}@github.com"


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_code_and_prose_about_keys_stay(text: str) -> None:
    assert Redactor().scrub_text(text) == text


def test_a_quoted_value_after_a_secret_key_goes_even_with_spaces() -> None:
    # A password may hold spaces; the price is a hint such as this one (documented).
    assert Redactor().scrub_text('password_hint = "see the vault"') == (
        f'password_hint = "{REDACTED}"'
    )


def test_redaction_is_idempotent_on_the_corpus() -> None:
    r = Redactor(["configured-key-0042"])
    text = "\n".join(line for line, _ in SECRET_FORMS)
    once = r.scrub_text(text)
    assert r.scrub_text(once) == once


@pytest.mark.parametrize(
    "name",
    [
        ".env",
        ".env.local",
        "config/.env.production",
        "server.pem",
        "tls.key",
        "id_rsa",
        "id_rsa.pub",
        "home/.ssh/id_ed25519",
        "id_ecdsa",
        ".netrc",
        ".pgpass",
        "cert.p12",
        "CERT.PFX",
        "dir\\.env",
    ],
)
def test_secret_file_names(name: str) -> None:
    assert is_secret_file_name(name)


@pytest.mark.parametrize(
    "name", ["env.py", "src/.envrc.md", "keys.py", "key.txt", "README.md", "pem.go", "environment"]
)
def test_ordinary_file_names(name: str) -> None:
    assert not is_secret_file_name(name)


# -- the stream: a secret split across chunks -----------------------------------------------

STREAM_TEXT = (
    "Here is your .env:\n"
    + "\n".join(line for line, _ in SECRET_FORMS)
    + "\nand the configured key configured-key-0042, said inline. Bearer "
    'brr-inline-Xq2Lm9Rt4 then password: "two words" done -----BEGIN RSA PRIVATE KEY-----'
    " MIIEowIBAAKCAQEA -----END RSA PRIVATE KEY----- end"
)


def stream(redactor: Redactor, pieces: list[str]) -> list[str]:
    scrubber = StreamScrubber(redactor)
    return [scrubber.feed(piece) for piece in pieces] + [scrubber.flush()]


def test_a_stream_cut_at_every_single_offset_is_stored_as_the_whole_text_redacted() -> None:
    r = Redactor(["configured-key-0042"])
    whole = r.scrub_text(STREAM_TEXT)
    for cut in range(len(STREAM_TEXT) + 1):
        joined = "".join(stream(r, [STREAM_TEXT[:cut], STREAM_TEXT[cut:]]))
        assert joined == whole, cut


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 16])
def test_a_stream_in_small_chunks_holds_no_secret(size: str) -> None:
    r = Redactor(["configured-key-0042"])
    pieces = [STREAM_TEXT[i : i + int(size)] for i in range(0, len(STREAM_TEXT), int(size))]
    out = stream(r, pieces)
    joined = "".join(out)
    assert joined == r.scrub_text(STREAM_TEXT)
    for _, secret in [*SECRET_FORMS, ("", "configured-key-0042"), ("", "MIIEowIBAAKCAQEA")]:
        assert secret not in joined
    assert len([piece for piece in out if piece]) > 10  # it is written as it goes, not at the end


def test_ordinary_text_streams_out_at_once_up_to_its_last_space() -> None:
    scrubber = StreamScrubber(Redactor())
    assert scrubber.feed("The plan is ") == "The plan is "
    assert scrubber.feed("to refac") == "to "
    assert scrubber.feed("tor it.") == "refactor "
    assert scrubber.feed(" DB_PASSWORD= ") == "it. "  # a key: what follows may be its value
    assert scrubber.feed("hunter2") == ""
    assert scrubber.flush() == f"DB_PASSWORD= {REDACTED}"


@settings(max_examples=300, deadline=None)
@given(
    index=st.integers(0, len(SECRET_FORMS) - 1),
    prefix=st.text(alphabet="ab :=\n\"'-_.", max_size=12),
    cuts=st.lists(st.integers(0, 200), max_size=8),
)
def test_any_split_of_a_secret_joins_redacted(index: int, prefix: str, cuts: list[int]) -> None:
    line, secret = SECRET_FORMS[index]
    text = f"{prefix}\n{line} and more"
    r = Redactor()
    offsets = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *offsets], [*offsets, len(text)], strict=True)]
    joined = "".join(stream(r, pieces))
    assert joined == r.scrub_text(text)
    assert secret not in joined


# -- the turn's recorder: what reaches the log ----------------------------------------------


def stored_chunks(manager: SessionManager, session_id: str) -> list[str]:
    events = manager.read_events(session_id).events
    return [e.data.delta for e in events if e.type == "assistant/chunk"]  # type: ignore[union-attr]


@pytest.mark.parametrize("size", [1, 3, 8])
def test_a_turn_s_chunks_join_to_its_text_redacted(manager: SessionManager, size: int) -> None:
    lc = make_lifecycle(manager, secrets=("configured-key-0042",))
    turn = lc.begin_turn("quote my .env")
    turn.start_step([request("quote my .env")])
    for i in range(0, len(STREAM_TEXT), size):
        turn.chunk(STREAM_TEXT[i : i + size])
    turn.assistant_message(response(STREAM_TEXT))
    turn.end_step({})
    turn.end("completed")
    joined = "".join(stored_chunks(manager, lc.session_id))
    assert joined == Redactor(["configured-key-0042"]).scrub_text(STREAM_TEXT)
    assert "configured-key-0042" not in joined and "MIIEowIBAAKCAQEA" not in joined
    for _, secret in SECRET_FORMS:
        assert secret not in joined
    lc.close()


def test_the_held_tail_is_written_at_a_retry_an_abort_and_a_close(
    manager: SessionManager,
) -> None:
    lc = make_lifecycle(manager)
    turn = lc.begin_turn("q")
    turn.start_step([request("q")])
    turn.chunk("first try sk-proj-Q2x8vLm4Tz7Rk1Wp9Ys3")
    turn.retry_step("cut", "incomplete", 0.1, streamed=True)  # the tail goes before it
    turn.start_step([])
    turn.chunk("second try sk-proj-Q2x8vLm4Tz7Rk1Wp9Ys3")
    turn.end("aborted")
    turn = lc.begin_turn("again")
    turn.start_step([request("again")])
    turn.chunk("third try sk-proj-Q2x8vLm4Tz7Rk1Wp9Ys3")
    sid = lc.session_id
    lc.close()  # the process stops mid-turn
    events = manager.read_events(sid).events
    types = [e.type for e in events if e.type in {"assistant/chunk", "step/retry", "turn/end"}]
    assert types == [
        "assistant/chunk",  # "first try "
        "assistant/chunk",  # the held tail
        "step/retry",
        "assistant/chunk",
        "assistant/chunk",
        "turn/end",
        "assistant/chunk",
        "assistant/chunk",
        "turn/end",
    ]
    assert "".join(stored_chunks(manager, sid)) == (
        f"first try {REDACTED}second try {REDACTED}third try {REDACTED}"
    )


def test_files_named_as_secret_are_never_copied_into_a_checkpoint(
    manager: SessionManager, workspace: Path, home: Path
) -> None:
    # Contents the patterns would not catch: the name alone withholds them.
    names = {"templates/.env": b"DB_HOST=db\nDB_PW=plainword\n", "templates/id_ed25519": b"k"}
    names |= {"templates/tls.pem": b"opaque-pem-body", "templates/.env.local": b"X=opaque-env"}
    for name, data in names.items():
        (workspace / name).write_bytes(data)
    (workspace / "templates" / "notes.md").write_text("kept\n")
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    saved = lc.explicit_save()
    plan = lc.plan_restore(saved.checkpoint, {})
    assert plan.withheld == dict.fromkeys(names, SECRET_FILE_WITHHELD)
    lc.restore(plan)
    assert all((workspace / name).read_bytes() == data for name, data in names.items())
    lc.close()
    stored = [p.read_bytes() for p in home.rglob("*") if p.is_file()]
    for data in (b"plainword", b"opaque-pem-body", b"opaque-env"):
        assert not any(data in blob for blob in stored)


# -- messages: a base URL's credentials, an error body's token --------------------------------


def test_a_base_url_is_named_without_its_userinfo() -> None:
    assert url_without_userinfo("http://alice:pw-77@host:8080/v1") == "http://host:8080/v1"
    assert url_without_userinfo("https://tok@host/v1") == "https://host/v1"
    assert url_without_userinfo("https://host/v1@x") == "https://host/v1@x"
    assert url_credential("http://alice:pw-77@host/v1") == "pw-77"
    assert url_credential("https://tok123@host") == "tok123"
    assert url_credential("https://host/v1") is None


def test_an_error_body_s_token_and_a_url_s_password_leave_the_fault() -> None:
    from pydantic_ai.exceptions import ModelHTTPError

    from engine.model.faults import classify

    body = {"error": {"message": "Bad credentials: ghp_R4nd0mT0k3nV4lu3F0rT3st1ngAbCdEf12"}}
    fault = classify(ModelHTTPError(status_code=401, model_name="m", body=body))
    assert "ghp_R4nd0m" not in fault.message + fault.detail and REDACTED in fault.message
    fault = classify(RuntimeError("cannot reach http://alice:pw-secret-7@10.0.0.1/v1"))
    assert "pw-secret-7" not in fault.message and "10.0.0.1" in fault.message


def test_log_records_are_scrubbed_before_a_handler_writes_them() -> None:
    record = logging.LogRecord(
        "x", logging.WARNING, __file__, 1, "failed at %s", ("http://a:pw-log-1@h/v1",), None
    )
    assert RedactingLogFilter().filter(record)
    assert record.getMessage() == f"failed at http://a:{REDACTED}@h/v1"


def test_a_long_text_without_a_safe_cut_is_not_held_whole_and_its_secrets_still_go() -> None:
    key = "sk-proj-" + "Q7x" * 20
    blob = ("a" * 50_000 + "," + key + ",") * 6 + "a" * 70_000
    scrubber = StreamScrubber(Redactor())
    out = []
    most_held = 0
    for i in range(0, len(blob), 7):
        out.append(scrubber.feed(blob[i : i + 7]))
        most_held = max(most_held, len(scrubber.held))
    out.append(scrubber.flush())
    joined = "".join(out)
    assert key not in joined and joined.count(REDACTED) == 6
    assert most_held <= HOLD_LIMIT + 7  # held text stays bounded: each piece costs little
    assert joined.replace(REDACTED, key) == blob
