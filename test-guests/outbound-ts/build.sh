#!/usr/bin/env bash
# Tests the TypeScript outbound test guest, then builds it against contract 0.2 into OUT_DIR/outbound-ts.wasm, with
# the tools pinned by the package-lock.json files (`npm ci`). Does nothing when neither the sources nor the locks
# changed since the last build. `make polyglot` runs it, after plugins/configmapset-ts/build.sh has tested the SDK
# itself.
#
# The guest sends HTTP requests, so it is built with StarlingMonkey (`--engine starlingmonkey`, componentize-js):
# componentize-qjs cannot build a component that imports wasi:http.
#
#   test-guests/outbound-ts/build.sh OUT_DIR
set -euo pipefail

out_dir=${1:?usage: build.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=plugins/polyglot-lib.sh
source "$here/../../plugins/polyglot-lib.sh"
sdk=$(cd "$here/../../guest-sdk-js" && pwd)
component=$out_dir/outbound-ts.wasm

require_node
mkdir -p "$out_dir"

# Dependencies as the lock files pin them.
npm_ci_locked "$sdk" "$here"

# Everything the component and the tests depend on.
stamp=$( (cd "$sdk" && find src test bin wit wit-v0.2 package.json package-lock.json tsconfig.json -type f -print0 | sort -z | xargs -0 sha256sum;
          cd "$here" && find src test package.json package-lock.json tsconfig.json build.sh -type f -print0 | sort -z | xargs -0 sha256sum) \
        | sha256sum | cut -d' ' -f1)
# The component may be cached outside this checkout (CI keeps it with cargo's target directory); the SDK's compiled
# JavaScript, which this guest links to, lives in the checkout and is built here when missing.
if is_current "$component" "$stamp"; then
  if [[ ! -f "$sdk/dist/src/index.js" ]]; then
    echo "typescript: compiling the SDK in $sdk"
    (cd "$sdk" && npm run --silent build)
  fi
  echo "typescript: $component is up to date"
  exit 0
fi

echo "typescript: compiling the SDK and testing the outbound guest"
(cd "$sdk" && npm run --silent build)
(cd "$here" && npm test --silent)

echo "typescript: building $component (contract 0.2, StarlingMonkey)"
(cd "$here" && npx --no-install wasm-reconciler-build dist/src/index.js --contract 0.2 --engine starlingmonkey -o "$component.tmp")
mv "$component.tmp" "$component"
echo "$stamp" > "$component.stamp"
ls -l "$component"
