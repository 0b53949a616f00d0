"""Use with This Net: the open net's Data layers read a new data set, its classifier is sized to it.

TRAIN Data layers (and those without a phase rule) read ``train_lmdb``, TEST ones ``val_lmdb``
(``test_lmdb`` when there is no validation split); every one subtracts ``mean.binaryproto`` (a
``mean_value`` it had is dropped: Caffe refuses both). The layer whose output feeds each loss gets
``num_output`` = the number of classes. All of it is one command, so one Ctrl+Z takes it back.
"""

from __future__ import annotations

from pathlib import Path

from app.commands import Command, CommandError, Compound, ReplaceLayer
from app.fields import copy_message
from proto import caffe_pb2

SIZED = ("inner_product_param", "convolution_param")


def _phase(layer: caffe_pb2.LayerParameter) -> int | None:
    phases = {rule.phase for rule in layer.include if rule.HasField("phase")}
    if layer.HasField("phase"):
        phases.add(layer.phase)
    return phases.pop() if len(phases) == 1 else None


def _feeds_loss(net: caffe_pb2.NetParameter) -> set[int]:
    """Indices of the layers with a num_output whose top is a loss's first bottom."""
    found = set()
    for index, layer in enumerate(net.layer):
        if not layer.type.endswith("Loss") or not layer.bottom:
            continue
        blob = layer.bottom[0]
        for j in range(index - 1, -1, -1):
            producer = net.layer[j]
            if blob in producer.top:
                if any(producer.HasField(p) for p in SIZED):
                    found.add(j)
                    break
                if blob not in producer.bottom:  # not in place: the blob starts here
                    break
    return found


def use_with_net(net: caffe_pb2.NetParameter, dataset: Path, classes: int) -> Command:
    """The command that points ``net`` at the data set in folder ``dataset``."""
    train = dataset / "train_lmdb"
    test = dataset / "val_lmdb" if (dataset / "val_lmdb").exists() else dataset / "test_lmdb"
    mean = dataset / "mean.binaryproto"
    steps: list[Command] = []
    for index, old in enumerate(net.layer):
        if old.type != "Data":
            continue
        layer = copy_message(old)
        source = test if _phase(layer) == caffe_pb2.TEST else train
        layer.data_param.source = str(source)
        layer.data_param.backend = caffe_pb2.DataParameter.LMDB
        del layer.transform_param.mean_value[:]
        layer.transform_param.mean_file = str(mean)
        steps.append(ReplaceLayer(index, layer, "Point at the data set"))
    if not steps:
        raise CommandError("the net has no Data layer to point at the data set")
    for index in sorted(_feeds_loss(net)):
        layer = copy_message(net.layer[index])
        sized = next(p for p in SIZED if layer.HasField(p))
        getattr(layer, sized).num_output = classes
        steps.append(ReplaceLayer(index, layer, "Size the classifier"))
    return Compound(steps, f"Use data set {dataset.name}")
