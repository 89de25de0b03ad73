#!/usr/bin/env bash
# Prepare, on this (CPU) machine, what benchmarks/gpu.sh needs on a lent GPU machine that reaches no network and
# takes at most 64 MiB per call (the working tree included): two folders to carry in two consecutive calls.
#
#   bash benchmarks/gpu_pack.sh --data-root DIR --inception FILE [--out .gpu] [--no-wheels] [--target-python 3.12]
#                               [--codecs DIR]
#
#   OUT/a: whl/ (opacus, dp-accounting and dm-tree for the GPU image's Python), inception.pt.part1 (the first
#          48 MiB of the Inception file), inception.pt.sha256
#   OUT/b: whl/, inception.pt.part2 (the rest), inception.pt.sha256, MNIST/raw/*.gz (the four MNIST files, gzipped)
#   OUT/c: whl/ and MNIST/raw/*.gz alone (about 11 MiB): one call for the stages that need no Inception (codecs);
#          with --codecs DIR also codecs/: the DP-SGD codec checkpoints of DIR (private_autoencoder_*.pt, as
#          benchmarks/.cache keeps them after the CPU runs), which gpu.sh --pack hands to its dpsgd stage: carried
#          in a third call after a and b on the same warm machine, so that the stage loads its codecs, not trains them
#   OUT/d: whl/ and FashionMNIST/raw/*.gz (about 30 MiB; only when --data-root holds FashionMNIST): a third call, after a and b on the same warm machine,
#          for the table stage on FashionMNIST (the Inception parts carried by a and b are still there)
# The GPU image has torch, torchvision, torchmetrics, numpy, scipy, pandas, scikit-learn, pluggy, wrapt and pytest,
# but not opacus nor dp-accounting; synthcity is not carried (its stack is far over 64 MiB), so the plugin's CUDA
# test skips there and says why. OUT must be ignored by git (/.gpu/ is), or every call would carry it whole.
# --data-root and --inception default to $DPSWF_DATA and $DPSWF_INCEPTION. See README.md, "The GPU script".
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA="${DPSWF_DATA:-}"
INCEPTION="${DPSWF_INCEPTION:-}"
OUT="$ROOT/.gpu"
WHEELS=1
TARGET_PYTHON=3.12
PART_SIZE=48M
CODECS=""
REQUIREMENTS=(opacus==1.5.3 dp-accounting==0.6.0 dm-tree==0.1.9)

fail() { echo "gpu_pack.sh: $*" >&2; exit 2; }
value() { [[ $# -ge 2 && -n $2 ]] || fail "$1 needs a value (see the comments at the top of benchmarks/gpu_pack.sh)"; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --data-root) value "$@"; DATA=$2; shift 2 ;;
    --inception) value "$@"; INCEPTION=$2; shift 2 ;;
    --out) value "$@"; OUT=$2; shift 2 ;;
    --no-wheels) WHEELS=0; shift ;;
    --target-python) value "$@"; TARGET_PYTHON=$2; shift 2 ;;
    --codecs) value "$@"; CODECS=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown argument '$1' (see --help)" ;;
  esac
done

[[ -d $DATA/MNIST/raw ]] || fail "no MNIST/raw under --data-root '$DATA' (pass the torchvision root, e.g. ../shared/data)"
[[ -f $INCEPTION ]] || fail "no Inception file at --inception '$INCEPTION'"
if [[ -n $CODECS ]]; then
  compgen -G "$CODECS/private_autoencoder_*.pt" >/dev/null \
    || fail "--codecs $CODECS holds no private_autoencoder_*.pt (the checkpoints benchmarks/.cache keeps after a DP-SGD codec run)"
fi
rm -rf "$OUT/a" "$OUT/b" "$OUT/c" "$OUT/d"
mkdir -p "$OUT/a" "$OUT/b/MNIST/raw" "$OUT/c"

split -b "$PART_SIZE" -a 1 --numeric-suffixes=1 "$INCEPTION" "$OUT/a/inception.pt.part"
for part in "$OUT"/a/inception.pt.part*; do
  [[ $part == "$OUT/a/inception.pt.part1" ]] || mv "$part" "$OUT/b/"
done
sha256sum "$INCEPTION" | cut -d' ' -f1 | tee "$OUT/a/inception.pt.sha256" >"$OUT/b/inception.pt.sha256"
for file in "$DATA"/MNIST/raw/*-ubyte; do gzip -9 -c "$file" >"$OUT/b/MNIST/raw/$(basename "$file").gz"; done
if [[ -d $DATA/FashionMNIST/raw ]]; then  # OUT/d only when the root holds FashionMNIST
  mkdir -p "$OUT/d/FashionMNIST/raw"
  for file in "$DATA"/FashionMNIST/raw/*-ubyte; do gzip -9 -c "$file" >"$OUT/d/FashionMNIST/raw/$(basename "$file").gz"; done
fi

if [[ $WHEELS -eq 1 ]]; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$TARGET_PYTHON" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$OUT/a/whl" "${REQUIREMENTS[@]}"
  cp -r "$OUT/a/whl" "$OUT/b/whl"
fi
cp -r "$OUT/b/MNIST" "$OUT/c/MNIST"
if [[ -n $CODECS ]]; then
  mkdir -p "$OUT/c/codecs"
  cp "$CODECS"/private_autoencoder_*.pt "$OUT/c/codecs/"
fi
[[ ! -d $OUT/a/whl ]] || cp -r "$OUT/a/whl" "$OUT/c/whl"
[[ ! -d $OUT/a/whl || ! -d $OUT/d ]] || cp -r "$OUT/a/whl" "$OUT/d/whl"

for half in a b c d; do
  [[ -d $OUT/$half ]] || continue
  size=$(du -sm "$OUT/$half" | cut -f1)
  echo "gpu_pack.sh: $OUT/$half: ${size} MiB"
  [[ $size -le 56 ]] || echo "gpu_pack.sh: warning: $OUT/$half is over 56 MiB; with the working tree it may pass the 64 MiB a call carries" >&2
done
