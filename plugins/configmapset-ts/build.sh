#!/usr/bin/env bash
# Tests the TypeScript SDK and this plugin, then builds the plugin into OUT_DIR/configmapset-ts.wasm, with the
# tools pinned by the package-lock.json files (`npm ci`). Does nothing when neither the sources nor the locks
# changed since the last build. `make polyglot` runs it.
#
#   plugins/configmapset-ts/build.sh OUT_DIR
set -euo pipefail

out_dir=${1:?usage: build.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=plugins/polyglot-lib.sh
source "$here/../polyglot-lib.sh"
sdk=$(cd "$here/../../guest-sdk-js" && pwd)
component=$out_dir/configmapset-ts.wasm

require_node
mkdir -p "$out_dir"

# Dependencies as the lock files pin them.
npm_ci_locked "$sdk" "$here"

stamp=$( (cd "$sdk" && find src test bin wit package.json package-lock.json tsconfig.json -type f -print0 | sort -z | xargs -0 sha256sum;
          cd "$here" && find src test package.json package-lock.json tsconfig.json -type f -print0 | sort -z | xargs -0 sha256sum;
          cd "$here/../configmapset/fixtures" && sha256sum ./*) | sha256sum | cut -d' ' -f1)
# The component may be cached outside this checkout (CI keeps it with cargo's target directory); the SDK's compiled
# JavaScript, which scaffolded TypeScript projects link to, lives in the checkout and is built here when missing.
if is_current "$component" "$stamp"; then
  if [[ ! -f "$sdk/dist/src/index.js" ]]; then
    echo "typescript: compiling the SDK in $sdk"
    (cd "$sdk" && npm run --silent build)
  fi
  echo "typescript: $component is up to date"
  exit 0
fi

echo "typescript: testing the SDK and the plugin"
(cd "$sdk" && npm test --silent)
(cd "$here" && npm test --silent)

echo "typescript: building $component"
started=$(date +%s.%N)
(cd "$here" && npx --no-install wasm-reconciler-build dist/src/index.js -o "$component.tmp")
mv "$component.tmp" "$component"
awk -v from="$started" -v to="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", to - from }' > "${component%.wasm}.build-seconds"
echo "$stamp" > "$component.stamp"
ls -l "$component"
