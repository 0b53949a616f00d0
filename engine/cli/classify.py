"""`main.py classify --model DEPLOY --weights W [options] IMAGE|FOLDER|LIST...`, as Caffe's
classify.py: images resized to --images-dim (default: the net's input size), the ten oversampled
crops averaged unless --center-only, preprocessed by pycaffe's Transformer (by default as the net's
data layer did: engine/model_use/preprocess.py). Prints each image's top K classes; --out saves the
N x C predictions (.npy). An image that does not decode is named in one line and the run goes on
(the exit code is then 2)."""

from __future__ import annotations

import argparse
import io
import sys

import numpy as np

from engine import backend
from engine.cli import common
from engine.data.errors import DataError
from engine.model_use import classify, inputs, preprocess
from proto.atomic import write_bytes_atomic


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("classify", help="classify images with a trained model, as Caffe's classify.py")
    p.add_argument("images", nargs="+", metavar="IMAGE|FOLDER|LIST")
    p.add_argument("--model", required=True, help="the deploy net (a train_val net is derived)")
    p.add_argument("--weights", required=True, help="the trained .caffemodel")
    p.add_argument("--labels", default="", help="class names, one a line")
    mean = p.add_mutually_exclusive_group()
    mean.add_argument("--mean-file", default="", help="a mean .binaryproto or .npy (default: the net's)")
    mean.add_argument("--mean-value", default="", metavar="B,G,R", help="one mean value per channel")
    p.add_argument("--raw-scale", type=float, default=None, help="pixel scale before the mean (default 255)")
    p.add_argument("--input-scale", type=float, default=None, help="scale after the mean (default: net's)")
    p.add_argument("--channel-swap", default="", metavar="2,1,0", help="channel order (default 2,1,0)")
    p.add_argument("--images-dim", default="", metavar="H,W", help="resize to (default: input size)")
    p.add_argument("--center-only", action="store_true", help="the centre crop only, not ten crops averaged")
    p.add_argument("--top", type=int, default=5, metavar="K", help="classes printed per image (default 5)")
    p.add_argument("--gpu", default="", metavar="ID", help="run on this GPU")
    p.add_argument("--out", default="", help="save the N x C predictions here (.npy)")


def numbers(text: str, flag: str, kind: type = float) -> list:
    try:
        return [kind(part) for part in text.split(",")]
    except ValueError:
        raise common.CliError(f"{flag} {text}: expected numbers separated by ','") from None


def run(args: argparse.Namespace) -> int:
    common.require_file(args.model, "--model")
    common.require_file(args.weights, "--weights")
    if args.out:
        given = [args.model, args.weights, args.labels or "", args.mean_file or "", *args.images]
        common.check_output(args.out, "--out", [p for p in given if p])
    if args.top < 1:
        raise common.CliError(f"--top {args.top}: must be at least 1")
    if args.gpu:
        common.set_device(numbers(args.gpu, "--gpu", int)[0])
    else:
        backend.set_mode_cpu()
    mean = None
    if args.mean_file:
        common.require_file(args.mean_file, "--mean-file")
        mean = preprocess.load_mean(args.mean_file)
    elif args.mean_value:
        mean = np.asarray(numbers(args.mean_value, "--mean-value"), np.float32)
    dims = numbers(args.images_dim, "--images-dim", int) if args.images_dim else None
    if dims is not None and (len(dims) != 2 or min(dims) < 1):
        raise common.CliError(f"--images-dim {args.images_dim}: expected H,W")
    items = inputs.gather(args.images)
    model = classify.open_classifier(
        args.model,
        args.weights,
        mean=mean,
        input_scale=args.input_scale,
        raw_scale=args.raw_scale,
        channel_swap=numbers(args.channel_swap, "--channel-swap", int) if args.channel_swap else None,
        image_dims=dims,
    )
    labels = classify.read_labels(args.labels, model.classes) if args.labels else None
    names, images, failed = [], [], 0
    for item, image in inputs.decoded(items, model.channels):
        if isinstance(image, DataError):
            print(f"skipped: {image}", file=sys.stderr)  # the one error line comes last
            failed += 1
        else:
            names.append(item.path)
            images.append(image)
    mode = "center crop" if args.center_only else "ten crops"
    print(f"Classifying {len(images)} image(s) ({mode}, input {'x'.join(map(str, model.input_shape[1:]))}).")
    predictions = classify.predict(model, images, oversample=not args.center_only)
    for name, row in zip(names, predictions):
        print(name)
        for rank, (index, p) in enumerate(classify.top_k(row, args.top), 1):
            label = labels[index] if labels else str(index)
            print(f"  {rank}. {p:.6f}  {label}")
    if args.out:
        buffer = io.BytesIO()
        np.save(buffer, predictions)
        write_bytes_atomic(args.out, buffer.getvalue())
        print(f"Saved {predictions.shape[0]}x{predictions.shape[1]} predictions to {args.out}")
    if failed:
        print(f"error: {failed} of {len(items)} image(s) could not be read", file=sys.stderr)
        return 2
    return 0
