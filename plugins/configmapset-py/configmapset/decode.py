"""Reading JSON into the plugin's types, with the same messages serde gives the Rust plugin for the same input."""

from __future__ import annotations

from typing import Any

from wasm_reconciler import Error

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def unexpected(value: Any) -> str:
    """How serde names a JSON value it did not expect."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f'string "{value}"'
    if isinstance(value, list):
        return "sequence"
    return "map"


def struct(value: Any, name: str) -> dict[str, Any]:
    """A JSON object read as the struct `name`."""
    if not isinstance(value, dict):
        raise Error(f"invalid type: {unexpected(value)}, expected struct {name}")
    return value


def field(obj: dict[str, Any], key: str) -> Any:
    """A required field."""
    if key not in obj:
        raise Error(f"missing field `{key}`")
    return obj[key]


def i32(value: Any) -> int:
    """A JSON integer in the range of an ``i32``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise Error(f"invalid type: {unexpected(value)}, expected i32")
    if not I32_MIN <= value <= I32_MAX:
        raise Error(f"invalid value: integer `{value}`, expected i32")
    return value


def string(value: Any) -> str:
    """A JSON string."""
    if not isinstance(value, str):
        raise Error(f"invalid type: {unexpected(value)}, expected a string")
    return value


def string_map(value: Any) -> dict[str, str]:
    """A JSON object of strings, sorted by key as a ``BTreeMap`` keeps it."""
    if not isinstance(value, dict):
        raise Error(f"invalid type: {unexpected(value)}, expected a map")
    return {key: string(value[key]) for key in sorted(value)}


def optional_string_map(obj: dict[str, Any], key: str) -> dict[str, str]:
    """A map field that defaults to empty when absent (``#[serde(default)]``: present ``null`` is an error)."""
    return string_map(obj[key]) if key in obj else {}
