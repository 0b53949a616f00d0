"""Caffe's ``convert_imageset``: the images of a list into a new LMDB of Datums, as Caffe writes them.

Record ``i`` of the (possibly shuffled) list goes under the key ``%08d_<path>`` (its place in the
list, so a skipped image leaves a gap), in transactions of 1000. An image is decoded as OpenCV's
IMREAD_COLOR (3 channels, BGR) or IMREAD_GRAYSCALE (``gray``), resized with INTER_LINEAR only when
both ``resize_height`` and ``resize_width`` are set, and stored channels-first with its channels,
height, width, label and ``encoded: false``. With an encoding (``encoded`` guesses it from each
file's extension, ``encode_type`` names it) the Datum holds only the encoded bytes, the label and
``encoded: true``: the file's own bytes when no resize flag is set and its extension is the
encoding (jpeg counts as jpg), else the decoded image encoded anew. An image that is missing or
does not decode is skipped with a line naming it. The database is built under a temporary name and
renamed at the end, so a run that stops leaves nothing.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Callable
from pathlib import Path

from engine.data.errors import DataError
from engine.data.image_encode import check_encoding, encode_image
from engine.data.image_list_bytes import read_image_list
from engine.data.images import decode_image, resize_bilinear
from engine.data.lmdb_writer import COMMIT_EVERY, LMDBWriter
from engine.data.staging import check_target, staged_folder
from proto import caffe_pb2
from proto.inputs import read_regular_bytes

Log = Callable[[str, str], None]  # (severity letter I/W/E, message)


@dataclasses.dataclass(frozen=True)
class ImagesetOptions:
    """convert_imageset's flags, with Caffe's defaults."""

    gray: bool = False
    shuffle: bool = False
    resize_height: int = 0
    resize_width: int = 0
    check_size: bool = False
    encoded: bool = False
    encode_type: str = ""

    def encoding(self, name: bytes) -> str:
        """The format an image is stored in ("" for raw pixels), as Caffe picks it."""
        if self.encode_type:
            return self.encode_type.lower()
        if not self.encoded:
            return ""
        dot = name.rfind(b".")  # none: Caffe takes the whole name, which then "matches" itself
        return name[dot + 1 :].decode("ascii", "replace").lower()


class SkippedImage(DataError):
    """An image Caffe would skip (missing, unreadable, not an image); the run goes on."""


def _shown(name: bytes) -> str:
    return os.fsdecode(name).encode("utf-8", "backslashreplace").decode("utf-8")


def _same_extension(name: bytes, encoding: str) -> bool:
    dot = name.rfind(b".")
    ext = (name[dot + 1 :] if dot >= 0 else name).decode("ascii", "replace").lower()
    return ext == encoding or (encoding == "jpg" and ext == "jpeg")


def read_datum(path: bytes, name: bytes, label: int, options: ImagesetOptions) -> caffe_pb2.Datum:
    """The Datum Caffe's ReadImageToDatum makes of the file at ``path`` (``name`` as listed)."""
    shown = _shown(path)
    try:
        data = read_regular_bytes(os.fsdecode(path))
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        reason = getattr(exc, "strerror", None) or exc
        raise SkippedImage(f"Could not open or find file {shown} ({reason})") from None
    try:
        pixels = decode_image(data, "gray" if options.gray else "color", shown)
    except DataError as exc:
        reason = str(exc).removeprefix(shown + ": ")
        raise SkippedImage(f"Could not open or find file {shown} ({reason})") from None
    if options.resize_height > 0 and options.resize_width > 0:
        pixels = resize_bilinear(pixels, options.resize_height, options.resize_width)
    encoding = options.encoding(name)
    if not encoding:
        channels, height, width = pixels.shape
        datum = caffe_pb2.Datum(channels=channels, height=height, width=width, data=pixels.tobytes())
        datum.label = label
        datum.encoded = False  # Caffe sets it, so the record carries it
        return datum
    keep = not options.resize_height and not options.resize_width and _same_extension(name, encoding)
    datum = caffe_pb2.Datum(data=data if keep else encode_image(pixels, encoding))
    datum.label = label
    datum.encoded = True
    return datum


@dataclasses.dataclass
class ImagesetSummary:
    written: int = 0
    skipped: list[str] = dataclasses.field(default_factory=list)


def convert_imageset(
    root_folder: str | bytes,
    list_file: Path,
    db_path: Path,
    options: ImagesetOptions,
    log: Log,
    seed: int | None = None,
) -> ImagesetSummary:
    """Write the LMDB ``db_path`` (which must not exist) from ``list_file``'s images under
    ``root_folder`` (glued in front of each path as a string, as Caffe does)."""
    check_target(Path(os.path.abspath(db_path)), False, "the database")
    lines = read_image_list(list_file)
    if options.encode_type:
        check_encoding(options.encode_type)
    if options.shuffle:
        log("I", "Shuffling data")
        random.Random(seed).shuffle(lines)
    log("I", f"A total of {len(lines)} images.")
    if options.encode_type and not options.encoded:
        log("I", "encode_type specified, assuming encoded=true.")
    root = root_folder if isinstance(root_folder, bytes) else os.fsencode(root_folder)
    summary = ImagesetSummary()
    data_size: int | None = None
    with staged_folder(db_path, what="the database") as tmp, LMDBWriter(tmp, new=False) as db:
        for line_id, (name, label) in enumerate(lines):
            if options.encoded and not options.encode_type and b"." not in name:
                log("W", f"Failed to guess the encoding of '{_shown(name)}'")
            try:
                datum = read_datum(root + name, name, label, options)
            except SkippedImage as exc:
                log("E", str(exc))
                summary.skipped.append(str(exc))
                continue
            if options.check_size:
                if data_size is None:
                    data_size = datum.channels * datum.height * datum.width
                elif len(datum.data) != data_size:
                    hint = " (an encoded Datum has no size to compare, as in Caffe)" if datum.encoded else ""
                    raise DataError(
                        f"Incorrect data field size {len(datum.data)} at line {line_id + 1} "
                        f"({_shown(name)}): the first image had {data_size} values{hint}"
                    )
            db.put(b"%08d_" % line_id + name, datum.SerializeToString())
            summary.written += 1
            if summary.written % COMMIT_EVERY == 0:
                db.commit()
                log("I", f"Processed {summary.written} files.")
        db.commit()
        if summary.written % COMMIT_EVERY:
            log("I", f"Processed {summary.written} files.")
    return summary
