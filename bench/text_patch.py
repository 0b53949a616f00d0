"""One edit written back into the user's text, at ResNet-152's size (671 layers, ~6,000 lines).

    python -m bench.text_patch [--repeat 20]

Times, best of ``--repeat``: ``proto.text_patch.patch_text`` for a value changed, a layer removed
and a layer added, against rendering the whole net afresh (what an edit cost before the text was
kept, losing every comment). The target: an edit well under the 100 ms a user notices.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from bench.graph_scale import resnet152
from proto import caffe_pb2
from proto.text_patch import patch_text
from proto.textio import net_to_text, parse_net


def best_ms(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    text = "# ResNet-152, with a comment to keep\n" + net_to_text(resnet152(32))
    old = parse_net(text, upgrade=False)

    def edited(change: Callable[[caffe_pb2.NetParameter], object]) -> caffe_pb2.NetParameter:
        new = caffe_pb2.NetParameter()
        new.CopyFrom(old)
        change(new)
        return new

    middle = len(old.layer) // 2
    cases = {
        "value changed": edited(lambda n: setattr(n.layer[middle], "name", "renamed")),
        "layer removed": edited(lambda n: n.layer.__delitem__(middle)),
        "layer added": edited(lambda n: n.layer.add(name="extra", type="ReLU", bottom=["fc1000"])),
    }
    render = best_ms(lambda: net_to_text(cases["value changed"]), args.repeat)
    print(f"{len(old.layer)} layers, {text.count(chr(10))} lines; rendering the whole net: {render:.1f} ms")
    for label, new in cases.items():
        kept = patch_text(text, old, new)
        assert kept is not None and kept.startswith("# ResNet-152")
        ms = best_ms(lambda: patch_text(text, old, new), args.repeat)  # noqa: B023  # called at once
        print(f"{label:>14}: {ms:6.1f} ms  ({ms / render:.1f}x rendering)")


if __name__ == "__main__":
    main()
