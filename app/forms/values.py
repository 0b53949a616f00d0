"""Scalar protobuf values as the user reads and types them: formatting, parsing and ranges.

Qt-free. A float field is shown in the shortest form that reads back to the same float32 (as the
prototxt writer does), so 0.0001 stays 0.0001 rather than 9.999999747378752e-05.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

T = FieldDescriptor
INT_RANGES = {
    T.TYPE_INT32: (-(2**31), 2**31 - 1),
    T.TYPE_SINT32: (-(2**31), 2**31 - 1),
    T.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    T.TYPE_UINT32: (0, 2**32 - 1),
    T.TYPE_FIXED32: (0, 2**32 - 1),
    T.TYPE_INT64: (-(2**63), 2**63 - 1),
    T.TYPE_SINT64: (-(2**63), 2**63 - 1),
    T.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    T.TYPE_UINT64: (0, 2**64 - 1),
    T.TYPE_FIXED64: (0, 2**64 - 1),
}
FLOAT_TYPES = {T.TYPE_FLOAT, T.TYPE_DOUBLE}
_FLOAT32_MAX = 3.4028234663852886e38


def kind(field: FieldDescriptor) -> str:
    """'message', 'enum', 'bool', 'int', 'float', 'string' or 'bytes'."""
    if field.message_type is not None:
        return "message"
    if field.enum_type is not None:
        return "enum"
    if field.type == T.TYPE_BOOL:
        return "bool"
    if field.type in INT_RANGES:
        return "int"
    if field.type in FLOAT_TYPES:
        return "float"
    return "bytes" if field.type == T.TYPE_BYTES else "string"


def _as_float32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def format_float(value: float, single: bool = True) -> str:
    """The shortest text that parses back to ``value`` (as float32 when ``single``)."""
    if math.isnan(value) or math.isinf(value):
        return repr(value)
    if not single:
        return repr(float(value))
    target = _as_float32(value)
    for digits in range(1, 10):
        shortest = float(f"{target:.{digits}g}")
        if _as_float32(shortest) == target:
            return repr(shortest)  # Python's own shortest form: 100.0, 0.0001, 1e+20
    return repr(target)


def format_value(field: FieldDescriptor, value: Any) -> str:
    k = kind(field)
    if k == "float":
        return format_float(value, field.type == T.TYPE_FLOAT)
    if k == "bool":
        return "true" if value else "false"
    if k == "enum":
        enum_value = field.enum_type.values_by_number.get(value)
        return enum_value.name if enum_value is not None else str(value)
    if k == "bytes":
        return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)
    return str(value)


def parse_value(field: FieldDescriptor, text: str) -> Any:
    """The value ``text`` names for ``field``; ValueError with a message fit for the user if none."""
    k = kind(field)
    text = text.strip()
    if k == "int":
        try:
            value = int(text, 0) if text.lower().startswith(("0x", "-0x")) else int(text)
        except ValueError:
            raise ValueError(f"{field.name}: '{text}' is not a whole number") from None
        low, high = INT_RANGES[field.type]
        if not low <= value <= high:
            raise ValueError(f"{field.name}: {value} is outside {low}..{high}")
        return value
    if k == "float":
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"{field.name}: '{text}' is not a number") from None
        if not math.isfinite(number):
            raise ValueError(f"{field.name}: must be a finite number")
        if field.type == T.TYPE_FLOAT and abs(number) > _FLOAT32_MAX:
            raise ValueError(f"{field.name}: {text} is too large for a float")
        return number
    if k == "bool":
        lowered = text.lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"{field.name}: '{text}' is not true or false")
    if k == "enum":
        enum_value = field.enum_type.values_by_name.get(text.upper()) or field.enum_type.values_by_name.get(
            text
        )
        if enum_value is None:
            names = ", ".join(v.name for v in field.enum_type.values)
            raise ValueError(f"{field.name}: '{text}' is not one of {names}")
        return enum_value.number
    if k == "bytes":
        return text.encode()
    return text
