"""SQL with the store's schema (a PostgreSQL namespace) filled in as a quoted identifier."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any

import orjson
import psycopg
from psycopg import sql
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb

DEFAULT_SCHEMA = "agent_assist"
Conn = psycopg.Connection[TupleRow]
_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def check_schema_name(name: str) -> str:
    """Return `name` if it is a plain lowercase identifier, else raise ValueError."""
    if not _SCHEMA_RE.fullmatch(name):
        raise ValueError(f"invalid schema name {name!r}: use [a-z_][a-z0-9_]*, at most 63")
    return name


# `current_user` is a `name`, collated "C"; the `owner` columns are `text` in the database's
# default collation, and `owner = current_user` could use no index that starts with `owner`
# (every key does): `{me}` compares in the column's collation.
_ME = sql.SQL('(current_user::text COLLATE "default")')


@lru_cache(maxsize=512)
def q(schema: str, template: str) -> sql.Composed:
    """Return `template` with `{s}` the quoted schema name and `{me}` the connected role.

    (`{{`/`}}` are braces.)
    """
    return sql.SQL(template).format(s=sql.Identifier(check_schema_name(schema)), me=_ME)


def advisory_key(*parts: str) -> int:
    """Return a signed 64-bit advisory-lock key for `parts` (stable across processes)."""
    digest = hashlib.blake2b("\x1f".join(("agent-assist", *parts)).encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


def text_value(value: str) -> str:
    """Return `value` storable in a text column (PostgreSQL refuses U+0000: it becomes U+FFFD)."""
    return value.replace("\x00", "\ufffd")


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return text_value(value)
    if isinstance(value, dict):
        return {text_value(str(k)): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nul(v) for v in value]
    return value


def _dumps(value: Any) -> bytes:
    out = orjson.dumps(value, option=orjson.OPT_UTC_Z)
    if b"\\u0000" in out:  # jsonb cannot hold U+0000 (this also matches a literal "\\u0000")
        out = orjson.dumps(_without_nul(value), option=orjson.OPT_UTC_Z)
    return out


def jsonb(value: Any) -> Jsonb:
    """Return `value` adapted to jsonb, serialized as the local log does (orjson, UTC `Z`)."""
    return Jsonb(value, dumps=_dumps)
