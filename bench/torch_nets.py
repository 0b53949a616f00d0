"""bench.nets' nets in plain PyTorch modules (torch's own CPU kernels, as a PyTorch user writes them).

Same layers, sizes and ceil-mode pooling as the prototxts; the peer bench.cpu_nets times.
"""

from __future__ import annotations

from typing import Any


def cifar10_quick() -> Any:
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 32, 5, padding=2),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        nn.ReLU(),
        nn.Conv2d(32, 32, 5, padding=2),
        nn.ReLU(),
        nn.AvgPool2d(3, 2, ceil_mode=True),
        nn.Conv2d(32, 64, 5, padding=2),
        nn.ReLU(),
        nn.AvgPool2d(3, 2, ceil_mode=True),
        nn.Flatten(),
        nn.Linear(64 * 4 * 4, 64),
        nn.Linear(64, 10),
    )


def caffenet() -> Any:
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 96, 11, stride=4),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        nn.LocalResponseNorm(5, 1e-4, 0.75, 1.0),
        nn.Conv2d(96, 256, 5, padding=2, groups=2),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        nn.LocalResponseNorm(5, 1e-4, 0.75, 1.0),
        nn.Conv2d(256, 384, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(384, 384, 3, padding=1, groups=2),
        nn.ReLU(),
        nn.Conv2d(384, 256, 3, padding=1, groups=2),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        nn.Flatten(),
        nn.Linear(256 * 6 * 6, 4096),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Linear(4096, 4096),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Linear(4096, 1000),
    )


def resnet18() -> Any:
    from torch import nn

    def conv_bn(cin: int, cout: int, k: int, stride: int) -> list[Any]:
        return [nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout)]

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.body = nn.Sequential(*conv_bn(cin, cout, 3, stride), nn.ReLU(), *conv_bn(cout, cout, 3, 1))
            self.proj = nn.Sequential(*conv_bn(cin, cout, 1, stride)) if stride > 1 else nn.Identity()
            self.relu = nn.ReLU()

        def forward(self, x: Any) -> Any:
            return self.relu(self.body(x) + self.proj(x))

    layers: list[Any] = [*conv_bn(3, 64, 7, 2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True)]
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            layers.append(Block(cin, cout, 2 if block == 0 and stage > 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers)


def lenet() -> Any:
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 20, 5),
        nn.MaxPool2d(2, 2, ceil_mode=True),
        nn.Conv2d(20, 50, 5),
        nn.MaxPool2d(2, 2, ceil_mode=True),
        nn.Flatten(),
        nn.Linear(800, 500),
        nn.ReLU(),
        nn.Linear(500, 10),
    )


def googlenet() -> Any:
    import torch
    from torch import nn

    from bench.nets import INCEPTIONS

    def conv_relu(cin: int, cout: int, k: int, stride: int = 1, pad: int = 0) -> Any:
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride, pad), nn.ReLU(inplace=True))

    class Inception(nn.Module):
        def __init__(self, cin: int, one: int, r3: int, three: int, r5: int, five: int, proj: int) -> None:
            super().__init__()
            self.one = conv_relu(cin, one, 1)
            self.three = nn.Sequential(conv_relu(cin, r3, 1), conv_relu(r3, three, 3, pad=1))
            self.five = nn.Sequential(conv_relu(cin, r5, 1), conv_relu(r5, five, 5, pad=2))
            self.proj = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), conv_relu(cin, proj, 1))
            self.width = one + three + five + proj

        def forward(self, x: Any) -> Any:
            return torch.cat([self.one(x), self.three(x), self.five(x), self.proj(x)], 1)

    layers: list[Any] = [
        conv_relu(3, 64, 7, 2, 3),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        nn.LocalResponseNorm(5, 1e-4, 0.75),
        conv_relu(64, 64, 1),
        conv_relu(64, 192, 3, pad=1),
        nn.LocalResponseNorm(5, 1e-4, 0.75),
        nn.MaxPool2d(3, 2, ceil_mode=True),
    ]
    width = 192
    for name, sizes in INCEPTIONS.items():
        layers.append(Inception(width, *sizes))
        width = layers[-1].width
        if name in ("3b", "4e"):
            layers.append(nn.MaxPool2d(3, 2, ceil_mode=True))
    layers += [nn.AvgPool2d(7, 1), nn.Dropout(0.4), nn.Flatten(), nn.Linear(width, 1000)]
    return nn.Sequential(*layers)


MODELS = {
    "cifar10_quick": cifar10_quick,
    "caffenet": caffenet,
    "resnet18": resnet18,
    "lenet": lenet,
    "googlenet": googlenet,
}
