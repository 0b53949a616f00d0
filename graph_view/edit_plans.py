"""The arithmetic behind the editing gestures, without Qt and without the command classes.

* ``order_for_connect``: Caffe runs layers in file order, so wiring a late layer's top into an
  earlier layer must move that layer (and whatever hangs off it) after the producer;
* ``moves_after``: that reordering as a list of (index, to) moves, MoveLayer's arguments;
* ``renamed_copies``: layers to paste, with fresh layer names and fresh names for the blobs the
  copied layers produce among themselves; inputs from outside keep their names, so a pasted
  branch hangs off the same blobs as the original.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from proto import caffe_pb2

LayerParameter = caffe_pb2.LayerParameter


def fresh_name(taken: Collection[str], base: str) -> str:
    """``base`` if free, else its trailing number raised until free: conv1 -> conv2, data -> data2."""
    if base not in taken:
        return base
    match = re.fullmatch(r"(.*?)(\d*)", base)
    stem, digits = (match.group(1), match.group(2)) if match else (base, "")
    stem = stem or base
    number = int(digits) + 1 if digits and match and match.group(1) else 2
    while f"{stem}{number}" in taken:
        number += 1
    return f"{stem}{number}"


def downstream(layers: Sequence[LayerParameter], start: int, stop: int) -> list[int]:
    """``start`` and the layers in (start, stop] that read, directly or not, what it produces."""
    found, blobs = [start], set(layers[start].top)
    for i in range(start + 1, stop + 1):
        if blobs & set(layers[i].bottom):
            found.append(i)
            blobs |= set(layers[i].top)
    return found


def moves_after(
    layers: Sequence[LayerParameter], consumer: int, producer_last: int
) -> list[tuple[int, int]] | None:
    """Moves that put ``consumer`` and its dependants right after ``producer_last``.

    None when the producer itself depends on the consumer: the wire closes a cycle, and no
    order can run it (the validation says so on the canvas).
    """
    if consumer > producer_last:
        return []
    group = downstream(layers, consumer, producer_last)
    if producer_last in group:
        return None
    order = list(range(len(layers)))
    moves = []
    for old in reversed(group):
        at, to = order.index(old), order.index(producer_last)
        moves.append((at, to))
        order.insert(to, order.pop(at))
    return moves


def position_after(moves: Iterable[tuple[int, int]], index: int, count: int) -> int:
    """Where the layer now at ``index`` ends up after ``moves``."""
    order = list(range(count))
    for at, to in moves:
        order.insert(to, order.pop(at))
    return order.index(index)


def renamed_copies(
    copies: Sequence[LayerParameter], layer_names: Collection[str], blob_names: Collection[str]
) -> list[LayerParameter]:
    taken_layers, taken_blobs = set(layer_names), set(blob_names)
    produced: dict[str, str] = {}  # old blob -> new blob, for blobs a copied layer produces
    out = []
    for source in copies:
        layer = LayerParameter()
        layer.CopyFrom(source)
        new_name = fresh_name(taken_layers, layer.name)
        taken_layers.add(new_name)
        layer.bottom[:] = [produced.get(b, b) for b in layer.bottom]
        for i, top in enumerate(layer.top):
            if i < len(source.bottom) and source.bottom[i] == top:
                layer.top[i] = layer.bottom[i]  # in place: follows its bottom
                continue
            new_top = new_name if top == source.name else fresh_name(taken_blobs | taken_layers, top)
            produced[top] = new_top
            taken_blobs.add(new_top)
            layer.top[i] = new_top
        layer.name = new_name
        out.append(layer)
    return out


def layers_to_text(layers: Iterable[LayerParameter]) -> str:
    from proto.textio import net_to_text

    net = caffe_pb2.NetParameter()
    for layer in layers:
        net.layer.add().CopyFrom(layer)
    return net_to_text(net)


def layers_from_text(text: str) -> list[LayerParameter]:
    """Layers from prototxt (a whole net or just ``layer { }`` blocks); [] when it does not parse."""
    from proto.errors import FormatError
    from proto.textio import parse_net

    try:
        return list(parse_net(text, "<clipboard>").layer)
    except (FormatError, ValueError):
        return []
