#!/usr/bin/env bash
# One prepared GPU run: the CUDA tests, the speed table on CUDA and the paper's image protocol at full size (MNIST,
# epsilon 10 and 1, DPSWflow), each stage under its own time limit, everything under one results folder.
#
#   bash benchmarks/gpu.sh [--out DIR] [--data-root DIR] [--inception FILE] [--stages LIST] [--pack DIR] [--archive FILE]
#                          [--table-datasets LIST] [--private-generators LIST] [--dpsgd-validation FILE]
#                          [--dpsgd-codecs DIR]
#   bash benchmarks/gpu.sh --smoke [--out DIR] [--data-root DIR] [--inception FILE]     # CPU, tiny sizes
#
# Stages (--stages, comma-separated; default env,tests,speed,images), limits in seconds for the CUDA run (the default
# stages together under 8 minutes; each stage named only on purpose, with env, within one 600 s device call):
#   env     20   the device: DIR/env.json, DIR/nvidia-smi.txt
#   tests  100   pytest -m cuda on the CUDA tests: DIR/tests.xml (CPU vs CUDA flow and step parity, the DP-SGD
#                baseline, a model and a plugin on device "cuda")
#   speed   90   benchmarks/studies/speed.py --device cuda: the grid, the paper's MNIST row and n = 10^6, L = 1,000
#                against a bare torch.sort (DIR/speed/)
#   images 250   benchmarks/image_runner.py with configs/images/paper_protocol_mnist_full.toml: the paper's latent-8
#                autoencoder, DPSWflow at epsilon 10 and 1, 30,000 private records, 10,000 samples and 10,000 for
#                FID (DIR/images/); needs --data-root and --inception
#   codecs 540   only when named in --stages: the no-public-data codec on MNIST, the flow and the CAS classifiers on
#                CUDA: benchmarks/image_runner.py with configs/images/codecs_mnist_validation.toml (each candidate
#                codec and flow setting at epsilon 10 and 1), then codecs_mnist_test.toml (select_from that
#                validation file: the test set is read for the validation split's choice alone) (DIR/codecs/);
#                needs --data-root
#   table  560   only when named in --stages: the full image table for each of --table-datasets (comma-separated,
#                default mnist), two jobs side by side on the one GPU: (1) benchmarks/image_runner.py with
#                configs/images/full_table_<data>.toml: the package's public-half autoencoder and its refiner,
#                DPSWflow, DPSWflow-r, DPSWgen and the DP-SGD GAN at epsilon 10 and 1 (DIR/table_<data>/);
#                (2) no public data: `dpswf images --codec private-pca` with each generator at epsilon 10 and 1
#                (DPSWflow with the validation split's settings: L = 2,000, G = 32 / 16, 3,000 steps, the codec's K
#                30 for MNIST and 50 for FashionMNIST, each chosen on its own validation split), FID on 10,000
#                vs 10,000 and both CAS (DIR/table_<data>/private/); needs --data-root and --inception. Each job
#                gets half the cores (OMP_NUM_THREADS; TABLE_THREADS overrides)
#   private 400  only when named in --stages: the table stage's no-public-data rows alone, for each of --table-datasets
#                and of --private-generators (comma-separated, default dpswflow_r,dpswgen: the rows the table stage's
#                280 s never reached), every row a job of its own side by side on the one GPU, the same command and
#                settings as the table stage (DIR/table_<data>/private/); needs --data-root and --inception
#   dpsgd  540   only when named in --stages: the DP-SGD codec's test-split rows on MNIST (no public data; the codec
#                trains on the CPU by design, the flows, CAS and FID on CUDA): benchmarks/image_runner.py with
#                configs/images/dpsgd_codec_mnist_test.toml, FID on 10,000 generated vs 10,000 test images
#                (DIR/dpsgd/). Its select_from reads DIR/dpsgd/dpsgd_codec_mnist_validation.json: a copy of
#                --dpsgd-validation, or, without one, the validation grid run first in the same limit (test data
#                never chooses). Then, once that grid has run, the FID rows of the README's table, each a runner call
#                of its own into the same file: dpsgd_codec_mnist_test_fid.toml at epsilon 10 and 5 (DPSWflow, the
#                settings chosen by FID), dpsgd_codec_mnist_test_low.toml at epsilon 1 (DPSWflow) and DPSWflow-r at
#                epsilon 10, 5 and 1. Codecs from --dpsgd-codecs are loaded, not trained; needs --data-root and
#                --inception
# Each stage writes DIR/<stage>.log and a line of DIR/stages.tsv (name, exit status, seconds, limit); a stage that
# fails or overruns does not stop the next. DIR/README.md (benchmarks/gpu_report.py summary) is written at the
# end, whatever happened. Exit status: 0 when every stage that ran passed, 1 otherwise.
#
# Options:
#   --out DIR         results folder (default: benchmarks/results/gpu; with --smoke a temporary folder)
#   --data-root DIR   torchvision root holding MNIST/raw (default: $DPSWF_DATA)
#   --inception FILE  Inception TorchScript for FID (default: $DPSWF_INCEPTION)
#   --python PY       interpreter (default: $DPSWF_PYTHON, else .venv/bin/python if present, else python3)
#   --pack DIR        a folder made by benchmarks/gpu_pack.sh and carried to the GPU machine: installs its wheels
#                     (opacus, dp-accounting) and rebuilds the MNIST files and the Inception file from its parts
#   --image-runs N    generation runs per cell of the images stage (default 1, the config's; N > 1: --set runs=N)
#   --dpsgd-validation FILE  the validation rows the dpsgd stage chooses from (default without --smoke:
#                     benchmarks/results/dpsgd_codec_mnist_validation.json when it exists; with --smoke none, as those
#                     rows are full size: the stage runs the validation grid at its toy sizes first)
#   --dpsgd-codecs DIR  DP-SGD codec checkpoints trained on the CPU (the private_autoencoder_*.pt files that the
#                     image runner leaves in benchmarks/.cache, carried to the GPU machine; default with --pack: the
#                     codecs/ folder gpu_pack.sh --codecs made, where one was carried): copied into the dpsgd
#                     stage's cache, where a run with the same settings, epsilon, delta, adjacency and split loads one
#                     (each file is named by a hash of these, and loading checks them) instead of training it on the
#                     GPU machine's CPU; a codec not among them is trained there as before
#   --archive FILE    also write DIR as one .tar.gz (what comes back from a lent machine)
#   --smoke           CPU, tiny sizes: checks every command line, so that a lent GPU is never spent on a typo
#                     (about 1.5 minutes on 2 cores with the image stage, most of it its three FIDs; 15 s without)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SMOKE=0
OUT=""
DATA="${DPSWF_DATA:-}"
INCEPTION="${DPSWF_INCEPTION:-}"
PY="${DPSWF_PYTHON:-}"
PACK=""
STAGES="env,tests,speed,images"
TABLE_DATASETS=mnist
PRIVATE_GENERATORS=dpswflow_r,dpswgen
IMAGE_RUNS=1
ARCHIVE=""
DPSGD_VALIDATION=""
DPSGD_VALIDATION_SET=0
DPSGD_CODECS=""

fail() { echo "gpu.sh: $*" >&2; exit 2; }
value() { [[ $# -ge 2 && -n $2 ]] || fail "$1 needs a value (see the comments at the top of benchmarks/gpu.sh)"; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) SMOKE=1; shift ;;
    --out) value "$@"; OUT=$2; shift 2 ;;
    --data-root) value "$@"; DATA=$2; shift 2 ;;
    --inception) value "$@"; INCEPTION=$2; shift 2 ;;
    --python) value "$@"; PY=$2; shift 2 ;;
    --pack) value "$@"; PACK=$2; shift 2 ;;
    --stages) value "$@"; STAGES=$2; shift 2 ;;
    --image-runs) value "$@"; IMAGE_RUNS=$2; shift 2 ;;
    --table-datasets) value "$@"; TABLE_DATASETS=$2; shift 2 ;;
    --private-generators) value "$@"; PRIVATE_GENERATORS=$2; shift 2 ;;
    --archive) value "$@"; ARCHIVE=$2; shift 2 ;;
    --dpsgd-validation) value "$@"; DPSGD_VALIDATION=$2; DPSGD_VALIDATION_SET=1; shift 2 ;;
    --dpsgd-codecs) value "$@"; DPSGD_CODECS=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown argument '$1' (see --help)" ;;
  esac
done

for stage in ${STAGES//,/ }; do
  [[ $stage =~ ^(env|tests|speed|images|codecs|table|private|dpsgd)$ ]] \
    || fail "unknown stage '$stage' in --stages: choose from env,tests,speed,images,codecs,table,private,dpsgd"
done
for generator in ${PRIVATE_GENERATORS//,/ }; do
  [[ $generator =~ ^(dpswflow|dpswflow_r|dpswgen)$ ]] \
    || fail "unknown generator '$generator' in --private-generators: choose from dpswflow,dpswflow_r,dpswgen"
done
for dataset in ${TABLE_DATASETS//,/ }; do
  [[ $dataset =~ ^(mnist|fashion_mnist)$ ]] || fail "unknown dataset '$dataset' in --table-datasets: mnist or fashion_mnist"
done
[[ $IMAGE_RUNS =~ ^[1-9][0-9]*$ ]] || fail "--image-runs must be a positive integer, got '$IMAGE_RUNS'"
if [[ $DPSGD_VALIDATION_SET -eq 1 ]]; then
  [[ -f $DPSGD_VALIDATION ]] || fail "--dpsgd-validation $DPSGD_VALIDATION is not a file"
  DPSGD_VALIDATION=$(cd "$(dirname "$DPSGD_VALIDATION")" && pwd)/$(basename "$DPSGD_VALIDATION")
elif [[ $SMOKE -eq 0 && -f $ROOT/benchmarks/results/dpsgd_codec_mnist_validation.json ]]; then
  DPSGD_VALIDATION=$ROOT/benchmarks/results/dpsgd_codec_mnist_validation.json
fi
if [[ -n $DPSGD_CODECS ]]; then
  [[ -d $DPSGD_CODECS ]] || fail "--dpsgd-codecs $DPSGD_CODECS is not a folder"
  compgen -G "$DPSGD_CODECS/private_autoencoder_*.pt" >/dev/null \
    || fail "--dpsgd-codecs $DPSGD_CODECS holds no private_autoencoder_*.pt (the checkpoints benchmarks/.cache keeps)"
  DPSGD_CODECS=$(cd "$DPSGD_CODECS" && pwd)
fi
if [[ -z $PY ]]; then
  if [[ -x $ROOT/.venv/bin/python ]]; then PY=$ROOT/.venv/bin/python; else PY=python3; fi
fi
command -v "$PY" >/dev/null || fail "no Python interpreter '$PY': pass --python or set DPSWF_PYTHON"
if [[ $SMOKE -eq 1 ]]; then
  MODE=smoke DEVICE=cpu
  OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/dpswf_gpu_smoke.XXXXXX")}
else
  MODE=gpu DEVICE=cuda
  OUT=${OUT:-$ROOT/benchmarks/results/gpu}
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/dpswf_gpu_scratch.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
[[ $MODE == gpu ]] || export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}  # a small CPU beside other work: no oversubscription

FAILED=0
wanted() { [[ ",$STAGES," == *",$1,"* ]]; }
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$OUT/stages.tsv"; }

# --pack: the wheels (every stage imports opacus and dp-accounting), and the image stage's files when it runs.
if [[ -n $PACK ]]; then
  [[ -d $PACK ]] || fail "--pack $PACK is not a folder (make it with benchmarks/gpu_pack.sh)"
  for wheels in "$PACK"/*/whl; do
    if compgen -G "$wheels/*.whl" >/dev/null; then
      "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SCRATCH/site" "$wheels"/*.whl \
        || fail "pip could not install the wheels of $wheels with $PY (made for another Python? see gpu_pack.sh --target-python)"
      export PYTHONPATH="$PYTHONPATH:$SCRATCH/site"
      echo "wheels installed from $wheels: $(cd "$wheels" && echo *.whl)" >>"$OUT/pack.log"
      break
    fi
  done
  for dataset in MNIST FashionMNIST; do  # whichever carried folder holds them, from this call or an earlier one
    if (wanted images || wanted codecs || wanted table || wanted private || wanted dpsgd) && compgen -G "$PACK/*/$dataset/raw/*.gz" >/dev/null; then
      mkdir -p "$SCRATCH/data/$dataset/raw"
      for file in "$PACK"/*/$dataset/raw/*.gz; do gunzip -c "$file" >"$SCRATCH/data/$dataset/raw/$(basename "${file%.gz}")"; done
      DATA=$SCRATCH/data
      echo "$dataset rebuilt under $DATA from $(compgen -G "$PACK/*/$dataset/raw/*.gz" | wc -l) gzipped files" >>"$OUT/pack.log"
    fi
  done
  packed_codecs=$(compgen -G "$PACK/*/codecs/private_autoencoder_*.pt" | head -n 1 || true)
  if [[ -z $DPSGD_CODECS && -n $packed_codecs ]]; then
    DPSGD_CODECS=$(dirname "$packed_codecs")
    echo "DP-SGD codec checkpoints found under $DPSGD_CODECS" >>"$OUT/pack.log"
  fi
  checksum=$(compgen -G "$PACK/*/inception.pt.sha256" | head -n 1 || true)
  if (wanted images || wanted table || wanted private || wanted dpsgd) && [[ -n $checksum ]]; then
    expected=$(cut -d' ' -f1 "$checksum")
    : >"$SCRATCH/inception.pt"
    for ((index = 1; ; index++)); do  # parts 1, 2, ... in whichever carried folder each one lies
      part=$(compgen -G "$PACK/*/inception.pt.part$index" | head -n 1 || true)
      [[ -n $part ]] || break
      cat "$part" >>"$SCRATCH/inception.pt"
    done
    if [[ $(sha256sum "$SCRATCH/inception.pt" | cut -d' ' -f1) == "$expected" ]]; then
      INCEPTION=$SCRATCH/inception.pt
      echo "Inception file rebuilt from $((index - 1)) part(s), sha256 $expected matches" >>"$OUT/pack.log"
    else
      echo "gpu.sh: the Inception parts under $PACK do not rebuild the packed file (a part missing: was the machine" \
        "given back between the two carrying calls?); the image stage will be skipped" | tee -a "$OUT/pack.log" >&2
    fi
  fi
fi

# run_stage NAME LIMIT COMMAND...: COMMAND under `timeout`, output to OUT/NAME.log, a line in OUT/stages.tsv.
run_stage() {
  local name=$1 limit=$2 started=$SECONDS status=0
  shift 2
  wanted "$name" || return 0
  echo "gpu.sh: stage $name (limit ${limit} s): $*"
  timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1 || status=$?
  record "$name" "$status" $((SECONDS - started)) "$limit"
  echo "gpu.sh: stage $name: exit $status after $((SECONDS - started)) s"
  if [[ $status -ne 0 ]]; then
    FAILED=1
    tail -n 15 "$OUT/$name.log" | sed 's/^/    /'
  fi
}

skip_stage() {  # skip_stage NAME REASON
  wanted "$1" || return 0
  echo "gpu.sh: stage $1 skipped: $2" | tee "$OUT/$1.log"
  record "$1" skip 0 0
}

if [[ $MODE == gpu ]]; then
  "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
    || fail "torch sees no CUDA device here; run with --smoke on a CPU machine"
  SPEED_ARGS=(--shapes 10000:70 10000:500 100000:70 100000:500 1000000:70 1000000:500 1000000:1000 --budget 1)
  IMAGE_SETS=()  # configs/images/paper_protocol_mnist_full.toml at its own sizes
  CODEC_SETS=()  # the codec grids at their configs' own sizes
  TABLE_RUNNER_SETS=()  # configs/images/full_table_<dataset>.toml at its own sizes
  TABLE_PRIVATE_ARGS=(--samples 10000 --fid-samples 10000)
  TABLE_FLOW_10=(--directions 2000 --bins 32 --steps 3000)
  TABLE_FLOW_1=(--directions 2000 --bins 16 --steps 3000)
  DPSGD_SETS=()  # the DP-SGD codec grids at their configs' own sizes
  DPSGD_TEST_SETS=(--set fid_samples=10000)  # FID on 10,000 generated vs 10,000 test images
  DPSGD_FID_SETS=()  # the FID rows at their configs' own settings
  DPSGD_FID_RUNS=(  # config|epsilons|generators of each runner call (dpsgd_fid_rows)
    'dpsgd_codec_mnist_test_fid.toml|epsilons=[10, 5]|generators=["dpswflow"]'
    'dpsgd_codec_mnist_test_low.toml|epsilons=[1]|generators=["dpswflow"]'
    'dpsgd_codec_mnist_test_low.toml|epsilons=[10, 5, 1]|generators=["dpswflow_r"]'
  )
  LIMITS=(20 100 90 250 540 560 400 540)
else
  SPEED_ARGS=(--shapes 1000:20 4000:50 --budget 0.05)
  IMAGE_SETS=(--set 'codecs=["ae:8:1"]' --set public_images=500 --set private_images=300 --set 'settings=["default:16:5"]'
              --set samples=100 --set fid_samples=10)
  CODEC_SETS=(--set samples=300 --set 'settings=["50:8:5", "100:8:5"]')
  TABLE_RUNNER_SETS=(--set samples=100 --set fid_samples=10 --set 'codecs=["ae:8:1"]' --set refiner_epochs=0
                     --set gan_epochs=0.2 --set 'epsilons=[10]' --set 'settings=["50:8:5"]')
  TABLE_PRIVATE_ARGS=(--samples 200 --fid-samples 20)
  TABLE_FLOW_10=(--directions 50 --bins 32 --steps 5)
  TABLE_FLOW_1=(--directions 50 --bins 16 --steps 5)
  DPSGD_SETTING='directions = 50, bins = 8, steps = 5'  # each --set on one line: the stage's lists travel line by line
  DPSGD_SETS=(--set 'codecs=["dpae:4:4:1"]' --set samples=100 --set private_images=300
              --set "settings=[{$DPSGD_SETTING, codec_share = 0.5}, {$DPSGD_SETTING, codec_share = 0.2}]")
  DPSGD_TEST_SETS=(--set fid_samples=10)
  DPSGD_FID_SETS=(--set 'settings=[{directions = 40, bins = 8, steps = 5, codec_share = 0.5}]')  # rows of their own
  DPSGD_FID_RUNS=(  # both configs' command lines, one epsilon each
    'dpsgd_codec_mnist_test_fid.toml|epsilons=[10]|generators=["dpswflow"]'
    'dpsgd_codec_mnist_test_low.toml|epsilons=[1]|generators=["dpswflow_r"]'
  )
  LIMITS=(60 120 60 120 600 600 300 300)
fi
[[ $IMAGE_RUNS == 1 ]] || IMAGE_SETS+=(--set "runs=$IMAGE_RUNS")

run_stage env "${LIMITS[0]}" "$PY" "$ROOT/benchmarks/gpu_report.py" env --out "$OUT" --mode "$MODE"
run_stage tests "${LIMITS[1]}" "$PY" -m pytest -q -p no:cacheprovider -m cuda --rootdir "$ROOT" --junitxml "$OUT/tests.xml" \
  "$ROOT/tests/math/test_flow.py" "$ROOT/tests/benchmarks/test_dpsgd_gan.py" "$ROOT/tests/test_cuda.py"
run_stage speed "${LIMITS[2]}" "$PY" "$ROOT/benchmarks/studies/speed.py" --device "$DEVICE" --out "$OUT/speed" "${SPEED_ARGS[@]}"
if [[ -z $DATA || ! -d $DATA/MNIST/raw ]]; then
  skip_stage images "no MNIST under '$DATA' (pass --data-root DIR holding MNIST/raw, set DPSWF_DATA, or --pack)"
elif [[ -z $INCEPTION || ! -f $INCEPTION ]]; then
  skip_stage images "no Inception file at '$INCEPTION' (pass --inception FILE, set DPSWF_INCEPTION, or --pack)"
else
  run_stage images "${LIMITS[3]}" "$PY" "$ROOT/benchmarks/image_runner.py" \
    "$ROOT/benchmarks/configs/images/paper_protocol_mnist_full.toml" --device "$DEVICE" --data-root "$DATA" \
    --inception "$INCEPTION" --out "$OUT/images" --cache "$SCRATCH/cache" "${IMAGE_SETS[@]}"
fi

# codecs: the candidate codecs and settings on the validation split, then the test split for the choice alone.
codec_search() {
  local split
  for split in validation test; do
    "$PY" "$ROOT/benchmarks/image_runner.py" "$ROOT/benchmarks/configs/images/codecs_mnist_$split.toml" \
      --data-root "$DATA" --device "$DEVICE" --out "$OUT/codecs" --cache "$SCRATCH/cache" "${CODEC_SETS[@]}" || return
  done
}
if wanted codecs; then
  if [[ -z $DATA || ! -d $DATA/MNIST/raw ]]; then
    skip_stage codecs "no MNIST under '$DATA' (pass --data-root DIR holding MNIST/raw, set DPSWF_DATA, or --pack)"
  else
    export -f codec_search
    export PY ROOT DATA DEVICE OUT SCRATCH
    export CODEC_SETS_LIST="$(printf '%s\n' "${CODEC_SETS[@]}")"
    run_stage codecs "${LIMITS[4]}" bash -c 'CODEC_SETS=(); [[ -z $CODEC_SETS_LIST ]] || mapfile -t CODEC_SETS <<<"$CODEC_SETS_LIST"; codec_search'
  fi
fi

# private_row DATASET GENERATOR EPSILON: one no-public-data row (dpswf images with the private codec), its output in
# DIR/table_<dataset>/private/log_<generator>_eps<epsilon>.txt, its exit status a line of DIR/table_<dataset>/private.log.
# DPSWflow takes the validation split's flow settings; the per-step generators their command's defaults.
private_row() {
  local dataset=$1 generator=$2 epsilon=$3 folder=$OUT/table_$1
  local flow=() components=30  # K chosen on each dataset's validation split (docs/flows.md, facts 49-50)
  if [[ $generator == dpswflow && $epsilon == 10 ]]; then flow=("${TABLE_FLOW_10[@]}"); fi
  if [[ $generator == dpswflow && $epsilon == 1 ]]; then flow=("${TABLE_FLOW_1[@]}"); fi
  if [[ $generator != dpswflow && $MODE == smoke ]]; then flow=(--steps 5); fi
  if [[ $dataset == fashion_mnist ]]; then components=50; fi
  local log=$folder/private/log_${generator}_eps$epsilon.txt status=0
  mkdir -p "$folder/private"
  "$PY" -m synthcity_dpswf.cli images --dataset "$dataset" --codec private-pca --generator "$generator" \
    --epsilon "$epsilon" --data-root "$DATA" --inception "$INCEPTION" --device "$DEVICE" --out "$folder/private" \
    --pca-components "$components" --quiet "${TABLE_PRIVATE_ARGS[@]}" "${flow[@]}" >"$log" 2>&1 || status=$?
  echo "private-pca $generator epsilon $epsilon: exit $status" >>"$folder/private.log"
  return "$status"
}

# table: per dataset, the public-half rows (the image runner's full_table grid) and the no-public-data rows
# (dpswf images, one after the other) side by side.
table_rows() {
  local dataset=$1 epsilon generator status=0
  local folder=$OUT/table_$dataset
  mkdir -p "$folder/private"
  # Two jobs share the machine's cores: each gets half of them (16 threads each on 16 cores stalled both).
  export OMP_NUM_THREADS=${TABLE_THREADS:-$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))}
  "$PY" "$ROOT/benchmarks/image_runner.py" "$ROOT/benchmarks/configs/images/full_table_$dataset.toml" \
    --data-root "$DATA" --inception "$INCEPTION" --device "$DEVICE" --out "$folder" --cache "$SCRATCH/cache" \
    "${TABLE_RUNNER_SETS[@]}" >"$folder/public_half.log" 2>&1 &
  local public_half=$!
  for epsilon in 10 1; do
    for generator in dpswflow dpswflow_r dpswgen; do
      private_row "$dataset" "$generator" "$epsilon" || status=1
    done
  done
  wait "$public_half" || status=1
  return "$status"
}

# private: the no-public-data rows alone, every (dataset, generator, epsilon) a job of its own, the cores shared.
private_rows() {
  local dataset generator epsilon jobs=() status=0 count
  count=$(( $(wc -w <<<"${TABLE_DATASETS//,/ }") * $(wc -w <<<"${PRIVATE_GENERATORS//,/ }") * 2 ))
  export OMP_NUM_THREADS=${TABLE_THREADS:-$(( $(nproc) / count > 0 ? $(nproc) / count : 1 ))}
  for dataset in ${TABLE_DATASETS//,/ }; do
    for generator in ${PRIVATE_GENERATORS//,/ }; do
      for epsilon in 10 1; do
        private_row "$dataset" "$generator" "$epsilon" &
        jobs+=($!)
      done
    done
  done
  for job in "${jobs[@]}"; do wait "$job" || status=1; done
  return "$status"
}
if wanted table; then
  if [[ -z $DATA || -z $INCEPTION || ! -f $INCEPTION ]]; then
    skip_stage table "needs --data-root and --inception (or --pack with both)"
  else
    export -f table_rows private_row
    export PY ROOT DATA DEVICE OUT SCRATCH INCEPTION MODE
    export TABLE_RUNNER_SETS_LIST="$(printf '%s\n' "${TABLE_RUNNER_SETS[@]}")" TABLE_PRIVATE_ARGS_LIST="$(printf '%s\n' "${TABLE_PRIVATE_ARGS[@]}")"
    export TABLE_FLOW_10_LIST="$(printf '%s\n' "${TABLE_FLOW_10[@]}")" TABLE_FLOW_1_LIST="$(printf '%s\n' "${TABLE_FLOW_1[@]}")"
    run_stage table "${LIMITS[5]}" bash -c 'TABLE_RUNNER_SETS=();
      [[ -z $TABLE_RUNNER_SETS_LIST ]] || mapfile -t TABLE_RUNNER_SETS <<<"$TABLE_RUNNER_SETS_LIST";
      mapfile -t TABLE_PRIVATE_ARGS <<<"$TABLE_PRIVATE_ARGS_LIST"; mapfile -t TABLE_FLOW_10 <<<"$TABLE_FLOW_10_LIST";
      mapfile -t TABLE_FLOW_1 <<<"$TABLE_FLOW_1_LIST"; status=0;
      for dataset in '"${TABLE_DATASETS//,/ }"'; do table_rows "$dataset" || status=1; done; exit $status'
  fi
fi

if wanted private; then
  if [[ -z $DATA || -z $INCEPTION || ! -f $INCEPTION ]]; then
    skip_stage private "needs --data-root and --inception (or --pack with both)"
  else
    export -f private_row private_rows
    export PY ROOT DATA DEVICE OUT INCEPTION MODE TABLE_DATASETS PRIVATE_GENERATORS
    export TABLE_PRIVATE_ARGS_LIST="$(printf '%s\n' "${TABLE_PRIVATE_ARGS[@]}")"
    export TABLE_FLOW_10_LIST="$(printf '%s\n' "${TABLE_FLOW_10[@]}")" TABLE_FLOW_1_LIST="$(printf '%s\n' "${TABLE_FLOW_1[@]}")"
    run_stage private "${LIMITS[6]}" bash -c 'mapfile -t TABLE_PRIVATE_ARGS <<<"$TABLE_PRIVATE_ARGS_LIST";
      mapfile -t TABLE_FLOW_10 <<<"$TABLE_FLOW_10_LIST"; mapfile -t TABLE_FLOW_1 <<<"$TABLE_FLOW_1_LIST"; private_rows'
  fi
fi

# dpsgd: the DP-SGD codec's test-split rows, the codec and flow settings chosen on the validation split (select_from
# reads DIR/dpsgd/dpsgd_codec_mnist_validation.json: the rows of --dpsgd-validation, or the validation grid's, run here
# first at the stage's sizes when there are none), then the README's FID rows (dpsgd_fid_rows).
dpsgd_rows() {
  local folder=$OUT/dpsgd configs=$ROOT/benchmarks/configs/images
  mkdir -p "$folder" "$SCRATCH/cache"
  if [[ -n $DPSGD_CODECS ]]; then
    cp "$DPSGD_CODECS"/private_autoencoder_*.pt "$SCRATCH/cache/"
    echo "gpu.sh: $(compgen -G "$SCRATCH/cache/private_autoencoder_*.pt" | wc -l) codec checkpoints copied from $DPSGD_CODECS"
  fi
  if [[ -n $DPSGD_VALIDATION ]]; then
    [[ $DPSGD_VALIDATION -ef $folder/dpsgd_codec_mnist_validation.json ]] \
      || cp "$DPSGD_VALIDATION" "$folder/dpsgd_codec_mnist_validation.json"
    echo "gpu.sh: the validation rows copied from $DPSGD_VALIDATION"
  else
    echo "gpu.sh: no validation rows given: the validation grid first"
    "$PY" "$ROOT/benchmarks/image_runner.py" "$configs/dpsgd_codec_mnist_validation.toml" --data-root "$DATA" \
      --device "$DEVICE" --out "$folder" --cache "$SCRATCH/cache" "${DPSGD_SETS[@]}" || return
  fi
  "$PY" "$ROOT/benchmarks/image_runner.py" "$configs/dpsgd_codec_mnist_test.toml" --data-root "$DATA" \
    --inception "$INCEPTION" --device "$DEVICE" --out "$folder" --cache "$SCRATCH/cache" "${DPSGD_SETS[@]}" "${DPSGD_TEST_SETS[@]}" \
    || return
  dpsgd_fid_rows "$folder" "$configs"
}
# dpsgd_fid_rows FOLDER CONFIGS: the FID rows of the README's DP-SGD codec table (DPSGD_FID_RUNS, the stage's docstring
# above), each call merging its rows into FOLDER/dpsgd_codec_mnist_test.json; a call that fails does not stop the next,
# the stage fails.
dpsgd_fid_rows() {
  local folder=$1 configs=$2 status=0 run config epsilons generators
  for run in "${DPSGD_FID_RUNS[@]}"; do
    IFS='|' read -r config epsilons generators <<<"$run"
    echo "gpu.sh: FID rows: $config with $epsilons, $generators"
    "$PY" "$ROOT/benchmarks/image_runner.py" "$configs/$config" --data-root "$DATA" --inception "$INCEPTION" \
      --device "$DEVICE" --out "$folder" --cache "$SCRATCH/cache" "${DPSGD_SETS[@]}" "${DPSGD_TEST_SETS[@]}" \
      "${DPSGD_FID_SETS[@]}" --set "$epsilons" --set "$generators" || status=1
  done
  return "$status"
}
if wanted dpsgd; then
  if [[ -z $DATA || ! -d $DATA/MNIST/raw || -z $INCEPTION || ! -f $INCEPTION ]]; then
    skip_stage dpsgd "needs --data-root (MNIST/raw) and --inception (or --pack with both)"
  else
    export -f dpsgd_rows dpsgd_fid_rows
    export PY ROOT DATA DEVICE OUT SCRATCH INCEPTION DPSGD_VALIDATION DPSGD_CODECS
    export DPSGD_SETS_LIST="$(printf '%s\n' "${DPSGD_SETS[@]}")" DPSGD_TEST_SETS_LIST="$(printf '%s\n' "${DPSGD_TEST_SETS[@]}")"
    export DPSGD_FID_SETS_LIST="$(printf '%s\n' "${DPSGD_FID_SETS[@]}")" DPSGD_FID_RUNS_LIST="$(printf '%s\n' "${DPSGD_FID_RUNS[@]}")"
    run_stage dpsgd "${LIMITS[7]}" bash -c 'DPSGD_SETS=(); [[ -z $DPSGD_SETS_LIST ]] || mapfile -t DPSGD_SETS <<<"$DPSGD_SETS_LIST";
      DPSGD_FID_SETS=(); [[ -z $DPSGD_FID_SETS_LIST ]] || mapfile -t DPSGD_FID_SETS <<<"$DPSGD_FID_SETS_LIST";
      mapfile -t DPSGD_FID_RUNS <<<"$DPSGD_FID_RUNS_LIST";
      mapfile -t DPSGD_TEST_SETS <<<"$DPSGD_TEST_SETS_LIST"; dpsgd_rows'
  fi
fi

"$PY" "$ROOT/benchmarks/gpu_report.py" summary "$OUT" >/dev/null || FAILED=1
echo "gpu.sh: summary in $OUT/README.md"
if [[ -n $ARCHIVE ]]; then
  tar czf "$ARCHIVE" -C "$OUT" .
  echo "gpu.sh: archive $ARCHIVE"
fi
exit "$FAILED"
