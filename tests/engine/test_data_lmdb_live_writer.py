"""#32 case 7: a Data layer reading an LMDB that another process is writing. With ``lock=False`` and
one long read transaction, the writer reused pages the reader still walked and lmdb aborted the
reader (``mdb.c: Assertion 'IS_BRANCH' failed``, exit 134, 4 runs of 4). Read-only with the reader
lock, and a transaction renewed at every wrap, the reader runs on and sees the new records.

Both sides run as child processes (an abort must not take the test runner with it), in a bounded
loop: the writer commits a fixed number of small transactions, the reader reads until the writer
is done."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

WRITER = """
import sys, lmdb
from proto import caffe_pb2
import os, time
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[3]) and time.monotonic() < deadline:
    time.sleep(0.01)  # until the reader has read its first batch
env = lmdb.open(sys.argv[1], map_size=1 << 28)
datum = caffe_pb2.Datum(channels=1, height=16, width=16, data=bytes(256), label=1).SerializeToString()
key = 64
for commit in range(600):  # every commit copies the branch pages on its path and frees the old ones
    with env.begin(write=True) as txn:
        for _ in range(16):
            txn.put(b"%08d" % key, datum, append=True)
            key += 1
        txn.delete(b"%08d" % (key - 40))  # frees leaf pages too, for reuse
open(sys.argv[2], "w").close()
"""

READER = """
import os, sys
import numpy as np
from engine.net import Net
from proto import textio
net = Net(textio.parse_net('''
layer { name: "d" type: "Data" top: "x" top: "y"
  data_param { source: "%s" backend: LMDB batch_size: 50 } }
''' % sys.argv[1]), phase=0, xp=np)
net.forward()
open(sys.argv[3], "w").close()
batches = 1
while not os.path.exists(sys.argv[2]) and batches < 20000:
    net.forward()
    batches += 1
for _ in range(20):  # and a few passes after the last commit: the new records are read
    net.forward()
import gc
from engine.data.lmdb_source import LMDBSource
print(batches, max(o.count for o in gc.get_objects() if isinstance(o, LMDBSource)))
"""


def _start(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_data_layer_reads_on_while_another_process_writes(tmp_path):
    db, done, reading = tmp_path / "db", tmp_path / "writer-done", tmp_path / "reader-started"
    import lmdb

    from proto import caffe_pb2

    env = lmdb.open(str(db), map_size=1 << 28)
    datum = caffe_pb2.Datum(channels=1, height=16, width=16, data=bytes(256), label=1).SerializeToString()
    with env.begin(write=True) as txn:
        for key in range(64):
            txn.put(b"%08d" % key, datum)
    env.close()
    reader = _start(READER, str(db), str(done), str(reading))
    writer = _start(WRITER, str(db), str(done), str(reading))
    w_out, w_err = writer.communicate(timeout=120)
    r_out, r_err = reader.communicate(timeout=120)
    assert writer.returncode == 0, w_err
    assert reader.returncode == 0, r_err[-2000:]
    batches, count = (int(v) for v in r_out.split())
    assert batches > 0
    assert count > 64  # the records written while it read were seen in a later pass
