#!/usr/bin/env bash
# Type-checks and tests the Python outbound test guest, then builds it against contract 0.2 into
# OUT_DIR/outbound-py.wasm, with the tools pinned in guest-sdk-python/requirements.txt installed into a virtual
# environment (VENV). Does nothing when neither the sources nor the pins changed since the last build. `make
# polyglot` runs it, after plugins/configmapset-py/build.sh has tested the SDK itself.
#
#   test-guests/outbound-py/build.sh OUT_DIR VENV
set -euo pipefail

out_dir=${1:?usage: build.sh OUT_DIR VENV}
venv=${2:?usage: build.sh OUT_DIR VENV}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=plugins/polyglot-lib.sh
source "$here/../../plugins/polyglot-lib.sh"
sdk=$(cd "$here/../../guest-sdk-python" && pwd)
python=${PYTHON:-python3}
component=$out_dir/outbound-py.wasm

require_python "$python"
mkdir -p "$out_dir"

python_venv "$python" "$venv" "$sdk/requirements.txt"

# Everything the component and the tests depend on.
stamp=$( (cd "$sdk" && find src pyproject.toml requirements.txt -type f -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum;
          cd "$here" && find . -type f \( -name '*.py' -o -name build.sh \) -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum) \
        | sha256sum | cut -d' ' -f1)
if is_current "$component" "$stamp"; then
  echo "python: $component is up to date"
  exit 0
fi

echo "python: type-checking the outbound guest (against the generated bindings of contract 0.2)"
bindings="$venv/wit-bindings-outbound-py"
rm -rf "$bindings"
(cd "$here" && PYTHONPATH="$sdk/src" "$venv/bin/python" -m wasm_reconciler bindings "$bindings" --contract 0.2 >/dev/null)
(cd "$here" && MYPYPATH="$sdk/src:$bindings" "$venv/bin/python" -m mypy --strict --cache-dir "$venv/mypy-cache-outbound-py" outbound app.py tests)

echo "python: testing the outbound guest"
(cd "$here" && PYTHONPATH="$sdk/src:$here" "$venv/bin/python" -m pytest -q -p no:cacheprovider --doctest-modules outbound tests)

echo "python: building $component"
(cd "$here" && PYTHONPATH="$sdk/src" "$venv/bin/python" -m wasm_reconciler build app --contract 0.2 -p "$here" -o "$component.tmp")
mv "$component.tmp" "$component"
echo "$stamp" > "$component.stamp"
ls -l "$component"
