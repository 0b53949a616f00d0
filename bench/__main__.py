"""`python -m bench` (or `make bench`): the benchmarks, each printing ratios against its peer.

python -m bench.lenet_train [--threads N] [--gpu] [--batch 64 1024]   engine vs PyTorch, LeNet training
python -m bench.cpu_nets [--threads 2] [--nets ...]                   4 real nets vs PyTorch and real Caffe
python -m bench.layer_profile [--nets ...]                            per layer type, inside a training step
python -m bench.gpu_nets                                              GPU: engine vs torch eager and graph
python -m bench.graph_scale                                           a 500-layer net: open, lay out, draw
python -m bench.text_patch                                            one edit kept in a ResNet-152 text
python -m bench.gui_responsiveness                                    GUI timer delay while training
"""

import sys

from bench import lenet_train

print(__doc__)
lenet_train.main(sys.argv[1:])
