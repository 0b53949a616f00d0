#!/usr/bin/env bash
# The GPU check, in one call, on a machine with a CUDA device and nothing of ours installed:
#
#     tools/gpu_check.sh [--wheels DIR] [--budget SECONDS]
#
# 1. the engine suite's GPU cases (pytest -k cupy: every layer, solver and net test's cupy case, the
#    fused kernels against the plain-cupy path, CUDA graphs against the eager path);
# 2. the layer and solver tests' GPU cases again on the plain-cupy path (ENGINE_KERNELS=0, no graphs);
# 3. training through engine.trainer.Trainer, what the app's Train runs, on the GPU (tools/gpu_train.py);
# 4. python -m bench.gpu_nets: LeNet b64 and b1024, CIFAR-10 quick b100 and GoogLeNet b32, the engine
#    (eager and with CUDA graphs) against torch eager and torch's whole-step CUDA graph, ms/step and
#    peak GPU memory, side by side;
#    (and before it tools/gpu_model_use.py: dataset -> train -> classify, evaluate, compare-init, --gpu 0,
#    and tools/gpu_graph_probe.py: which operation breaks a capture, for the layers graphs skip yet);
# 5. main.py time --gpu on LeNet, CIFAR-10 quick and GoogLeNet-mini (resources/examples/inception.prototxt);
# then a summary of each stage. It needs python3 with numpy, protobuf, pytest and cupy (torch for the
# comparison); the engine's other dependencies (h5py, lmdb, Pillow, threadpoolctl, networkx, ...) are
# installed from DIR (a folder of wheels; `pip download -d DIR h5py lmdb Pillow threadpoolctl networkx
# pytest-timeout pytest-xdist hypothesis` on a machine with network) into .gpu-site when missing.
# The stages share the budget (default 540 s, under a 10-minute limit); a stage that runs out is cut
# and says so. Exit 0 when every stage passed, 1 when one failed, 2 when there is no GPU to check.
set -uo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
WHEELS=""
BUDGET=540
while [ $# -gt 0 ]; do
  case "$1" in
    --wheels) WHEELS="$2"; shift 2 ;;
    --budget) BUDGET="$2"; shift 2 ;;
    *) echo "gpu_check: unknown argument $1 (use --wheels DIR, --budget SECONDS)"; exit 2 ;;
  esac
done
START=$SECONDS
SUMMARY=()
FAILED=0
SITE="$PWD/.gpu-site"
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export QT_QPA_PLATFORM=offscreen

left() { echo $((BUDGET - (SECONDS - START))); }

stage() {  # stage NAME SHARE_PERCENT COMMAND...: run with its share of the time left, keep the last line
  local name=$1 share=$2
  shift 2
  local limit=$(($(left) * share / 100))
  if [ "$limit" -lt 10 ]; then
    SUMMARY+=("$name: skipped, the budget is spent")
    FAILED=1
    return
  fi
  echo "=== $name (up to ${limit} s)"
  local log
  log=$(mktemp)
  timeout "$limit" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local last
  last=$(grep -v '^\s*$' "$log" | tail -n 1)
  rm -f "$log"
  if [ "$rc" -eq 124 ]; then
    SUMMARY+=("$name: CUT after ${limit} s; last: $last")
    FAILED=1
  elif [ "$rc" -ne 0 ]; then
    SUMMARY+=("$name: FAILED (exit $rc); last: $last")
    FAILED=1
  else
    SUMMARY+=("$name: $last")
  fi
}

missing=$($PY - <<'EOF'
import importlib.util
wanted = {"h5py": "h5py", "lmdb": "lmdb", "PIL": "Pillow", "threadpoolctl": "threadpoolctl",
          "networkx": "networkx", "google.protobuf": "protobuf", "numpy": "numpy", "pytest": "pytest",
          "pytest_timeout": "pytest-timeout", "xdist": "pytest-xdist", "hypothesis": "hypothesis"}
def found(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
print(" ".join(package for module, package in wanted.items() if not found(module)))
EOF
)
if [ -n "$missing" ]; then
  if [ -z "$WHEELS" ]; then
    echo "gpu_check: missing $missing; give a folder of their wheels with --wheels DIR"
    exit 2
  fi
  echo "=== installing $missing from $WHEELS into .gpu-site"
  # shellcheck disable=SC2086
  $PY -m pip install -q --no-index --find-links "$WHEELS" --target "$SITE" $missing || exit 2
fi

if ! $PY -c "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0" 2>/dev/null; then
  echo "gpu_check: no GPU to check here (cupy does not import or sees no CUDA device)"
  exit 2
fi
$PY -c "import cupy; p = cupy.cuda.runtime.getDeviceProperties(0); print('device:', p['name'].decode(), '· cupy', cupy.__version__)"

XDIST=""
$PY -c "import xdist" 2>/dev/null && XDIST="-n $(($(nproc) > 12 ? 12 : $(nproc)))"
PYTEST="$PY -m pytest -q -p no:cacheprovider --continue-on-collection-errors --tb=short $XDIST"
# shellcheck disable=SC2086
stage "engine tests with cupy" 45 $PYTEST tests/engine -k cupy
# shellcheck disable=SC2086
stage "the plain-cupy path (ENGINE_KERNELS=0)" 25 env ENGINE_KERNELS=0 ENGINE_CUDA_GRAPHS=0 \
  $PYTEST tests/engine/test_layer_*.py tests/engine/test_solvers.py -k cupy
stage "training on the GPU (Trainer)" 15 $PY tools/gpu_train.py
stage "dataset, train, classify, evaluate, compare-init on the GPU" 20 $PY tools/gpu_model_use.py
stage "graph capture probe (layers graphs do not take yet)" 10 $PY tools/gpu_graph_probe.py
stage "bench.gpu_nets" 60 $PY -m bench.gpu_nets
for net in lenet cifar10_quick inception; do
  stage "main.py time --gpu $net" 33 $PY tools/gpu_train.py --time "$net"
done

echo
echo "=== summary ($((SECONDS - START)) s)"
printf '%s\n' "${SUMMARY[@]}"
exit $FAILED
