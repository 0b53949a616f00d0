"""`main.py extract_features WEIGHTS NET_PROTO BLOB1[,BLOB2] DB1[,DB2] NUM_BATCHES lmdb [CPU|GPU]
[DEVICE]`, as Caffe's tools/extract_features: float Datums in new LMDBs (a DB named *.npy gets a
numpy array instead), logged as Caffe logs it (engine/model_use/features.py)."""

from __future__ import annotations

import argparse

from engine import backend, pymodules
from engine.cli import common, glog
from engine.cli.train import bundled_data
from engine.data.paths import DataPaths
from engine.errors import naming_file
from engine.model_use import features
from engine.net import Net
from engine.relative_paths import folders_from
from proto import caffe_pb2


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("extract_features", help="write a net's blobs as Datums of features, as Caffe's tool")
    p.add_argument("weights", metavar="WEIGHTS")
    p.add_argument("net", metavar="NET_PROTO")
    p.add_argument("blobs", metavar="BLOB1[,BLOB2]")
    p.add_argument("dbs", metavar="DB1[,DB2]", help="new LMDBs (a name ending in .npy: a numpy array)")
    p.add_argument("batches", type=int, metavar="NUM_BATCHES")
    p.add_argument("db_type", metavar="lmdb")
    p.add_argument("mode", nargs="?", default="CPU", metavar="CPU|GPU")
    p.add_argument("device", nargs="?", type=int, default=0, metavar="DEVICE")


def run(args: argparse.Namespace) -> int:
    say = glog.printer("extract_features.cpp:0", "E")  # Caffe's tool logs at ERROR level
    if args.db_type.lower() != "lmdb":
        raise common.CliError(f"db_type {args.db_type}: only lmdb is written here (LEVELDB is not supported)")
    if args.batches < 1:
        raise common.CliError(f"NUM_BATCHES {args.batches}: must be at least 1")
    common.require_file(args.net, "NET_PROTO")
    copy_weights = common.read_weights(args.weights, "WEIGHTS")
    if args.mode == "GPU":
        say("Using GPU")
        say(f"Using Device_id={args.device}")
        common.set_device(args.device)
    else:
        say("Using CPU")
        backend.set_mode_cpu()
    param = common.net_for(args.net, caffe_pb2.TEST, 0, [])
    paths = bundled_data([param], DataPaths(search_from=tuple(folders_from(args.net))), say)
    blobs, dbs = args.blobs.split(","), args.dbs.split(",")
    with pymodules.for_nets([args.net], [param]):
        with naming_file(args.net):
            net = Net(param, data_paths=paths)
        try:
            copy_weights(net)
            with naming_file(args.net):
                features.extract(net, blobs, dbs, args.batches, say)
        finally:
            net.close()
    return 0
