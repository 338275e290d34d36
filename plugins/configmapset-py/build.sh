#!/usr/bin/env bash
# Tests the Python SDK and this plugin, then builds the plugin into OUT_DIR/configmapset-py.wasm, with the tools
# pinned in guest-sdk-python/requirements.txt installed into a virtual environment (VENV). Does nothing when
# neither the sources nor the pins changed since the last build. `make polyglot` runs it.
#
#   plugins/configmapset-py/build.sh OUT_DIR VENV
set -euo pipefail

out_dir=${1:?usage: build.sh OUT_DIR VENV}
venv=${2:?usage: build.sh OUT_DIR VENV}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=plugins/polyglot-lib.sh
source "$here/../polyglot-lib.sh"
sdk=$(cd "$here/../../guest-sdk-python" && pwd)
python=${PYTHON:-python3}
component=$out_dir/configmapset-py.wasm

require_python "$python"
mkdir -p "$out_dir"

python_venv "$python" "$venv" "$sdk/requirements.txt"

# Everything the component and the tests depend on.
stamp=$( (cd "$sdk" && find src tests pyproject.toml requirements.txt -type f -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum;
          cd "$here" && find . -type f \( -name '*.py' -o -name '*.yaml' \) -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum;
          cd "$here/../configmapset/fixtures" && sha256sum ./*) | sha256sum | cut -d' ' -f1)
if is_current "$component" "$stamp"; then
  echo "python: $component is up to date"
  exit 0
fi

echo "python: type-checking the SDK (against the generated bindings of both contracts) and the plugin"
# The SDK against each world's bindings: the 0.1 world has no variables or wasi:http, so the module using them
# (imported by name only in a 0.2 component) is checked against the 0.2 bindings alone.
bindings="$venv/wit-bindings"
bindings_v0_2="$venv/wit-bindings-v0.2"
rm -rf "$bindings" "$bindings_v0_2"
(cd "$sdk" && PYTHONPATH=src "$venv/bin/python" -m wasm_reconciler bindings "$bindings" >/dev/null)
(cd "$sdk" && PYTHONPATH=src "$venv/bin/python" -m wasm_reconciler bindings "$bindings_v0_2" --contract 0.2 >/dev/null)
(cd "$sdk" && MYPYPATH="$bindings" "$venv/bin/python" -m mypy --strict --cache-dir "$venv/mypy-cache" \
  --exclude '/_bindings_v0_2\.py$' src/wasm_reconciler)
(cd "$sdk" && MYPYPATH="$bindings_v0_2" "$venv/bin/python" -m mypy --strict --cache-dir "$venv/mypy-cache-v0.2" src/wasm_reconciler)
(cd "$here" && MYPYPATH="$sdk/src:$bindings" "$venv/bin/python" -m mypy --strict --cache-dir "$venv/mypy-cache" configmapset app.py)

echo "python: testing the SDK and the plugin"
(cd "$sdk" && "$venv/bin/python" -m pytest -q -p no:cacheprovider)
(cd "$here" && PYTHONPATH="$sdk/src:$here" "$venv/bin/python" -m pytest -q -p no:cacheprovider tests)

echo "python: building $component"
started=$(date +%s.%N)
(cd "$here" && PYTHONPATH="$sdk/src" "$venv/bin/python" -m wasm_reconciler build app -p "$here" -o "$component.tmp")
mv "$component.tmp" "$component"
awk -v from="$started" -v to="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", to - from }' > "${component%.wasm}.build-seconds"
echo "$stamp" > "$component.stamp"
ls -l "$component"
