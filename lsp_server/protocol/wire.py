"""How a model is put on the wire: camelCase names, what may be absent, params validation."""

from __future__ import annotations

import functools
import operator
from datetime import datetime
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    ValidationError,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from engine.options import Params as Params  # the base of the options, too

# JSON-RPC / LSP error codes
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
REQUEST_CANCELLED = -32800
REQUEST_FAILED = -32803

ERROR_CODES: dict[str, int] = {
    "INVALID_PARAMS": INVALID_PARAMS,
    "METHOD_NOT_FOUND": METHOD_NOT_FOUND,
    "REQUEST_CANCELLED": REQUEST_CANCELLED,
    "REQUEST_FAILED": REQUEST_FAILED,
}

# RFC 3339, as pydantic writes it (`2026-12-01T12:00:00.250000Z` for UTC, in its own code:
# a Python serializer per timestamp cost ~1 µs each, 20,000 of them in a list of sessions).
Timestamp = Annotated[datetime, WithJsonSchema({"type": "string", "format": "date-time"})]
_IS_NONE = functools.partial(operator.is_, None)  # a C call, not a Python frame per field


def omitted(description: str = "", default: Any = None) -> Any:
    """Declare a field left off the wire while it holds `default` (`x?: T` in TypeScript)."""
    return Field(
        default=default,
        description=description or None,
        exclude_if=_IS_NONE if default is None else lambda v: v is None or v == default,
    )


class Wire(BaseModel):
    """Base of what the server sends (results, notification params and their parts).

    Every field is always sent (`null` where its type allows it), except those declared with
    `omitted()`, which are left off while they hold their default.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        from_attributes=True,  # a domain object with the same field names converts directly
        json_schema_serialization_defaults_required=True,
        json_schema_mode_override="serialization",
    )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """Mark `omitted()` fields optional and not nullable: absent, or a value."""
        schema = handler.resolve_ref_schema(handler(core_schema))
        gone = set()
        for name, info in cls.model_fields.items():
            if info.exclude_if is None:
                continue
            wire = info.alias or name
            gone.add(wire)
            prop = schema.get("properties", {}).get(wire, {})
            options = prop.get("anyOf")
            if options is not None:
                kept = [o for o in options if o.get("type") != "null"]
                del prop["anyOf"]
                if len(kept) == 1:
                    prop.update(kept[0])
                else:
                    prop["anyOf"] = kept
            prop.pop("default", None)
        if "required" in schema:
            schema["required"] = [r for r in schema["required"] if r not in gone]
        return schema

    def wire(self) -> dict[str, Any]:
        """Return the JSON-ready dict sent to the client."""
        return self.model_dump(mode="json", by_alias=True)


class Notification(Wire):
    """Params of a notification the server sends; `METHOD` names it."""

    METHOD: ClassVar[str]


class FailureData(Wire):
    """The `data` of a RequestFailed (-32803) error, when there is more to say."""

    cancelled: bool = omitted(
        "The user cancelled (e.g. at the reset question): nothing was changed.", default=False
    )


class EmptyParams(Params):
    """Params of a request that takes none."""


class EmptyResult(Wire):
    """A result with nothing in it."""


P = TypeVar("P", bound=Params)


class ParamsError(ValueError):
    """Params that do not match the contract; the message names the field."""


def parse_params(model: type[P], method: str, raw: Any) -> P:
    """Validate raw JSON params into `model`, or raise ParamsError naming the bad field."""
    if raw is None:
        raw = {}
    if isinstance(raw, list | tuple):  # executeCommand passes `arguments: [params]`
        raw = raw[0] if raw else {}
    if not isinstance(raw, dict):
        raise ParamsError(f"{method}: params must be an object, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "params"
        raise ParamsError(f"{method}: invalid field '{field}': {first['msg']}") from None


def command_name(method: str) -> str:
    """Return the `workspace/executeCommand` name of a request: `agentAssist.<verb>`."""
    return "agentAssist." + method.split("/", 1)[1]
