#!/usr/bin/env bash
# One virtual environment per end-to-end DP peer, outside the package's environment (their pins clash with
# synthcity's): benchmarks/.peers/<peer>/ (git-ignored). The table runner calls benchmarks/peers/run_peer.py with
# each environment's python (methods dpmm_* and snsynth_*). Versions are pinned to the releases that resolved when
# the committed results were made; pass another python 3.10-3.11 as PYTHON=... (dpmm requires python < 3.12).
#
#   bash benchmarks/peers/make_envs.sh            # both peers
#   bash benchmarks/peers/make_envs.sh dpmm       # one
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$here/.peers"
PYTHON="${PYTHON:-$(command -v python3.11 || echo /root/.pyenv/versions/3.11.7/bin/python3.11)}"
declare -A PINS=(
  [dpmm]="dpmm==0.1.9"
  [snsynth]="smartnoise-synth==1.0.8"
)
peers=("${@:-dpmm snsynth}")
for peer in ${peers[@]}; do
  [[ -n "${PINS[$peer]:-}" ]] || { echo "unknown peer $peer (choose from ${!PINS[*]})" >&2; exit 2; }
  env="$root/$peer"
  if [[ ! -x "$env/bin/python" ]]; then
    "$PYTHON" -m venv "$env"
  fi
  "$env/bin/python" -m pip install --quiet ${PINS[$peer]}
  "$env/bin/python" -m pip freeze > "$env/freeze.txt"
  echo "$peer: $("$env/bin/python" --version) at $env ($(grep -i -E "^(dpmm|smartnoise-synth|private-pgm|mbi|opendp|numpy|pandas)==" "$env/freeze.txt" | tr '\n' ' '))"
done
