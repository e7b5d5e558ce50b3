"""Options read leniently by their declaration (`options`): each field on its own.

A field the client left unset (absent, null or blank) takes the first of its environment
variables that is set, else its default. A value its declaration refuses gives way to the
default, and a warning names the option by its camelCase path (`model.maxRetries`).
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Annotated, Any

import annotated_types
from pydantic import TypeAdapter, ValidationError

from .options import Lenient, Params, group_of, lenient


@dataclass
class ReadOptions:
    """What was read: values by field name (a group's as a dict), and how they came."""

    values: dict[str, Any] = field(default_factory=dict)
    given: set[str] = field(default_factory=set)  # paths the client set, validly
    from_env: list[tuple[str, str]] = field(default_factory=list)  # (path, variable)
    warnings: list[str] = field(default_factory=list)


def _leaves(annotation: Any) -> set[Any]:
    """Return the types an annotation unites (`int | None`: int and NoneType)."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _leaves(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_leaves(a) for a in typing.get_args(annotation)))
    return {origin or annotation}


@functools.cache
def _adapter(model: type[Params], name: str) -> TypeAdapter[Any]:
    """Return a validator of one field: its type with its constraints and validators."""
    info = model.model_fields[name]
    kind: Any = info.annotation
    return TypeAdapter(Annotated[(kind, *info.metadata)] if info.metadata else kind)


def _bounds(info: Any) -> tuple[Any, Any]:
    low = next((m.ge for m in info.metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((m.le for m in info.metadata if isinstance(m, annotated_types.Le)), None)
    return low, high


def _shown(value: Any) -> str:
    """Return a default as a warning says it: `128000`, `0.6`, `true`, `'ask'`."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Enum):
        return repr(value.value)
    if isinstance(value, int | float):
        return f"{value:n}"
    return repr(value)


def _allowed(info: Any, marker: Lenient) -> str:
    """Return what the option allows, as a warning says it."""
    if marker.allowed:
        return marker.allowed
    leaves = _leaves(info.annotation)
    low, high = _bounds(info)
    if low is not None and high is not None:
        return f"{low:n}..{high:n}{marker.unit}"
    if bool in leaves:
        return "true|false"
    enum = next((t for t in leaves if isinstance(t, type) and issubclass(t, Enum)), None)
    if enum is not None:
        return "|".join(str(m.value) for m in enum)
    return "a string"


def _validate(model: type[Params], name: str, value: Any) -> Any:
    """Return `value` as the field takes it; raise ValueError if it does not."""
    leaves = _leaves(model.model_fields[name].annotation)
    if bool in leaves and not isinstance(value, bool):
        raise ValueError("not a boolean")
    if isinstance(value, bool) and leaves & {int, float} and bool not in leaves:
        raise ValueError("a boolean is not a number")  # JSON keeps them apart; pydantic not
    try:
        return _adapter(model, name).validate_python(value)
    except ValidationError as exc:
        raise ValueError(str(exc)) from None


def _unset(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def read_options(
    model: type[Params],
    raw: Mapping[str, Any],
    env: Mapping[str, str],
    defaults: Mapping[str, Any] | None = None,
) -> ReadOptions:
    """Read `raw` by `model`'s fields; `defaults` replaces declared ones, by path."""
    read = ReadOptions()
    read.values = _read(model, raw, env, defaults or {}, "", read)
    return read


def _read(
    model: type[Params],
    raw: Mapping[str, Any],
    env: Mapping[str, str],
    defaults: Mapping[str, Any],
    prefix: str,
    read: ReadOptions,
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        path = prefix + (info.alias or name)
        marker = lenient(info)
        value = raw.get(info.alias or name)
        if marker.raw:
            values[name] = value
            continue
        group = group_of(info)
        if group is not None:
            if value is not None and not isinstance(value, Mapping):
                keys = ", ".join(f.alias or n for n, f in group.model_fields.items())
                fallback = marker.fallback or "the defaults"
                read.warnings.append(f"{path} must be an object {{{keys}}}; using {fallback}")
            inner = value if isinstance(value, Mapping) else {}
            values[name] = _read(group, inner, env, defaults, path + ".", read)
            continue
        default = defaults.get(path, info.get_default(call_default_factory=True))
        values[name] = default
        source = path
        if _unset(value):
            variable = next((v for v in marker.env if not _unset(env.get(v))), None)
            if variable is None:
                continue
            value, source = env[variable], variable
            read.from_env.append((path, variable))
        try:
            parsed = _validate(model, name, value)
        except ValueError:
            if marker.invalid:
                read.warnings.append(marker.invalid)
            else:
                fallback = marker.fallback or _shown(default)
                allowed = _allowed(info, marker)
                read.warnings.append(f"{path} {value!r} is invalid ({allowed}); using {fallback}")
            continue
        if _unset(parsed):  # blank once stripped
            continue
        values[name] = parsed
        if source == path:
            read.given.add(path)
    return values
