"""Read and write a protobuf field by a dotted path: ``convolution_param.kernel_size``, ``param.1.lr_mult``.

A numeric segment indexes a repeated message field (one past the end appends a new element).
Values: a scalar for a singular field, a list for a repeated one, a message for a message
field, an enum's name or number, and ``None`` to clear the field back to its default.
"""

from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

M = TypeVar("M", bound=Message)


def copy_message(message: M) -> M:
    """A deep copy of ``message``: commands and edits never share a message with the document."""
    clone = type(message)()
    clone.CopyFrom(message)
    return clone


class FieldPathError(ValueError):
    """A path that names no field, or a value the field cannot hold; ``str()`` says which."""


def _split(path: str) -> list[str]:
    parts = path.split(".")
    if not path or any(not p for p in parts):
        raise FieldPathError(f"bad field path '{path}'")
    return parts


def _field(message: Message, name: str) -> FieldDescriptor:
    field = message.DESCRIPTOR.fields_by_name.get(name)
    if field is None:
        raise FieldPathError(f"{message.DESCRIPTOR.name} has no field '{name}'")
    return field  # type: ignore[return-value]  # upb's descriptor is the same class at run time


def _is_repeated(field: FieldDescriptor) -> bool:
    return field.is_repeated


def _resolve(message: Message, parts: list[str]) -> tuple[Message, str]:
    """The message holding the last segment, creating the elements and sub-messages on the way."""
    i = 0
    while i < len(parts) - 1:
        field = _field(message, parts[i])
        if field.message_type is None:
            raise FieldPathError(f"'{parts[i]}' is not a message field")
        if _is_repeated(field):
            if not parts[i + 1].isdigit():
                raise FieldPathError(f"'{parts[i]}' is repeated: give an index, as in '{parts[i]}.0'")
            items, index = getattr(message, parts[i]), int(parts[i + 1])
            if index > len(items):
                raise FieldPathError(f"index {index} past the end of '{parts[i]}' ({len(items)} items)")
            message = items[index] if index < len(items) else items.add()
            i += 2
        else:
            message = getattr(message, parts[i])
            i += 1
    if i != len(parts) - 1:
        raise FieldPathError(f"field path '{'.'.join(parts)}' ends at an element, not a field")
    return message, parts[-1]


def _convert(field: FieldDescriptor, value: Any) -> Any:
    if field.enum_type is not None and isinstance(value, str):
        enum_value = field.enum_type.values_by_name.get(value)
        if enum_value is None:
            names = ", ".join(v.name for v in field.enum_type.values)
            raise FieldPathError(f"'{value}' is not one of {names}")
        return enum_value.number
    return value


def get_field(message: Message, path: str) -> Any:
    """The value at ``path`` (a default where unset); no elements or sub-messages are created."""
    parts = _split(path)
    for i, part in enumerate(parts):
        if part.isdigit():
            message = message[int(part)]  # type: ignore[index]
        else:
            _field(message, part)
            message = getattr(message, part)
        if i == len(parts) - 1:
            return message
    return message


def set_field(message: Message, path: str, value: Any) -> None:
    """Set the field at ``path`` in place; FieldPathError (with the reason) if it cannot be."""
    holder, name = _resolve(message, _split(path))
    field = _field(holder, name)
    try:
        if value is None:
            holder.ClearField(name)
        elif _is_repeated(field):
            items = getattr(holder, name)
            if isinstance(value, (str, bytes, Message)):
                raise FieldPathError(f"'{name}' is repeated: give a list")
            del items[:]
            for item in value:
                if field.message_type is not None:
                    items.add().CopyFrom(item)
                else:
                    items.append(_convert(field, item))
        elif field.message_type is not None:
            getattr(holder, name).CopyFrom(value)
        else:
            setattr(holder, name, _convert(field, value))
    except FieldPathError:
        raise
    except (TypeError, ValueError, AttributeError) as e:
        raise FieldPathError(f"{name}: {e}") from None
