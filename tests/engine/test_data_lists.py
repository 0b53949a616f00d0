"""#16 cases 4, 6 and 8 for the list files: WindowData's window file and ImageData's image list are
read in one linear pass (a 200,000-window file here; bench/parsers.py times a million), the fast
block conversion gives exactly what the token-by-token walk gives, errors name the line even deep
in a big file, numbers beyond Caffe's 32-bit int are one-line errors, and a FIFO or a device given
as the list is refused at once instead of hanging."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from bench.parsers import list_text, window_text
from engine.data.errors import DataError
from engine.data.image_list import read_list
from engine.data.window_file import read_window_file


def same_windows(a, b) -> None:
    assert a.images == b.images and a.label_counts == b.label_counts
    np.testing.assert_array_equal(a.foreground, b.foreground)
    np.testing.assert_array_equal(a.background, b.background)


def test_a_big_window_file_parses_and_blocks_equal_the_token_walk(tmp_path):
    text = window_text(200_000, 2000)
    neat = tmp_path / "neat.txt"
    neat.write_text(text)
    # The same tokens, two windows per line: no block fits its lines, so every window is walked.
    lines = text.splitlines()
    ragged_lines, i = [], 0
    while i < len(lines):
        if lines[i].startswith("#"):
            ragged_lines += lines[i : i + 4]
            count, i = int(lines[i + 3]), i + 4
            body = lines[i : i + count]
            ragged_lines += [" ".join(body[k : k + 2]) for k in range(0, count, 2)]
            i += count
    ragged = tmp_path / "ragged.txt"
    ragged.write_text("\n".join(ragged_lines) + "\n")
    fast, slow = read_window_file(neat, 0.5, 0.5), read_window_file(ragged, 0.5, 0.5)
    assert len(fast.foreground) + len(fast.background) == 200_000 and len(fast.images) == 100
    same_windows(fast, slow)
    assert fast.foreground[:, 1].min() >= 1 and set(np.unique(fast.background[:, 1:3])) == {0.0}
    assert fast.foreground.dtype == np.float32 and fast.label_counts[0] == len(fast.background)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("1 0.9 0 0 x 10", r":{line}: expected a window corner, got 'x'"),
        ("1 zero 0 0 10 10", r":{line}: expected a window's overlap, got 'zero'"),
        (f"{2**40} 0.9 0 0 10 10", r":{line}: a window's label 1099511627776 does not fit in 32 bits"),
        (f"1 0.9 0 0 {10**30} 10", ":{line}: a window corner 1" + "0" * 30 + " does not fit in 32 bits"),
        ("0 0.9 0 0 10 10", r":{line}: image 3: a foreground window \(overlap 0.9\) needs a positive label"),
    ],
)
def test_errors_deep_in_a_big_file_name_their_line(tmp_path, bad, message):
    lines = window_text(10_000, 2000).splitlines()
    line = 3 * 2004 + 4 + 1500  # image 3's 1500th window
    lines[line - 1] = bad
    path = tmp_path / "windows.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=f"{path}{message.format(line=line)}"):
        read_window_file(path, 0.5, 0.5)


def test_image_lists_are_read_in_one_pass_and_huge_labels_are_one_line(tmp_path):
    path = tmp_path / "list.txt"
    path.write_text(list_text(200_000))
    lines = read_list(path)
    assert len(lines) == 200_000 and lines[123_456] == ("images/n00123/00123456.JPEG", 456)
    path.write_text("a.png 1\nb with space.png 2\nc.png 99999999999999999999\n")
    with pytest.raises(DataError, match=f"{path}:3: the label 99999999999999999999 does not fit in 32 bits"):
        read_list(path)
    path.write_text(f"a.png {-(2**31)}\nb.png {2**31 - 1}\n")  # the ends of Caffe's int are fine
    assert [label for _, label in read_list(path)] == [-(2**31), 2**31 - 1]


@pytest.mark.parametrize("reader", ["window", "list"])
def test_a_fifo_or_a_device_as_the_list_is_refused_at_once(tmp_path, reader):
    fifo = tmp_path / "list.fifo"
    os.mkfifo(fifo)
    read = {"window": lambda p: read_window_file(p, 0.5, 0.5), "list": read_list}[reader]
    outcome: list[BaseException] = []

    def attempt(path):
        try:
            read(path)
        except BaseException as exc:
            outcome.append(exc)

    for path, kind in ((fifo, "a FIFO (named pipe)"), ("/dev/zero", "a character device")):
        worker = threading.Thread(target=attempt, args=(path,), daemon=True)
        worker.start()
        worker.join(30)
        assert not worker.is_alive(), f"reading {path} hangs"
        error = outcome.pop()
        assert isinstance(error, DataError) and str(path) in str(error)
        assert f"it is {kind}, not a regular file" in str(error), str(error)
