# shellcheck shell=bash
# Sets PYTHON to an interpreter that has verl: $PYTHON if set, else <repo>/.venv-verl/bin/python (found
# from this file, so the scripts work from any directory: through the clone's recipes/ link the repository is
# two folders up, through fgrpo_sim/recipes/ three). Without one: one line naming `make install-verl`,
# exit 2 (not a ModuleNotFoundError traceback from a python without hydra).
if [[ -z "${PYTHON:-}" ]]; then
  _here="$(dirname "${BASH_SOURCE[0]}")"
  PYTHON="$(cd "${_here}/../.." && pwd)/.venv-verl/bin/python"
  [[ -x "${PYTHON}" ]] || PYTHON="$(cd "${_here}/../../.." && pwd)/.venv-verl/bin/python"
  if [[ ! -x "${PYTHON}" ]]; then
    echo "error: no verl environment: ${PYTHON} not found; run \`make install-verl\` in the repository (or set PYTHON=/path/to/python with fgrpo-sim[verl])" >&2
    exit 2
  fi
fi
if ! "${PYTHON}" -c "import importlib.util as u, sys; sys.exit(not (u.find_spec('verl') and u.find_spec('hydra') and u.find_spec('fgrpo_sim')))" 2>/dev/null; then
  echo "error: ${PYTHON} cannot import verl, hydra and fgrpo_sim; run \`make install-verl\` and use .venv-verl/bin/python (or unset PYTHON)" >&2
  exit 2
fi
