# Sourced by the build scripts of the Python and TypeScript components that `make polyglot` builds
# (plugins/configmapset-{py,ts}/build.sh, test-guests/outbound-{py,ts}/build.sh): the tool checks, the pinned
# dependencies installed again only when their pins change, and the stamp check that skips an up-to-date build.

# require_python PYTHON: PYTHON is 3.11 or newer with the venv module, or the script stops saying so.
require_python() {
  command -v "$1" >/dev/null || { echo "error: $1 is required to build Python plugins (3.11 or newer)" >&2; exit 1; }
  "$1" -c 'import sys, venv; sys.exit(sys.version_info < (3, 11))' \
    || { echo "error: $1 must be Python 3.11 or newer with the venv module" >&2; exit 1; }
}

# python_venv PYTHON VENV REQUIREMENTS: the virtual environment VENV with the pinned REQUIREMENTS, made again
# whenever the pins change.
python_venv() {
  local python=$1 venv=$2 requirements=$3 pins
  pins=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [[ "$(cat "$venv/.pins" 2>/dev/null)" != "$pins" ]]; then
    echo "python: installing $(grep -v '^#' "$requirements" | tr '\n' ' ')into $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    echo "$pins" > "$venv/.pins"
  fi
}

# require_node: node 20 or newer and npm, or the script stops saying so.
require_node() {
  command -v node >/dev/null || { echo "error: node (20 or newer) is required to build TypeScript plugins" >&2; exit 1; }
  command -v npm >/dev/null || { echo "error: npm is required to build TypeScript plugins" >&2; exit 1; }
  node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
    || { echo "error: node 20 or newer is required, found $(node --version)" >&2; exit 1; }
}

# npm_ci_locked DIR...: `npm ci` in each DIR whose package-lock.json changed since its last install there.
npm_ci_locked() {
  local project lock
  for project in "$@"; do
    lock=$(sha256sum "$project/package-lock.json" | cut -d' ' -f1)
    if [[ "$(cat "$project/node_modules/.lock-sha256" 2>/dev/null)" != "$lock" ]]; then
      echo "typescript: npm ci in $project"
      (cd "$project" && npm ci --no-audit --no-fund --loglevel=error)
      echo "$lock" > "$project/node_modules/.lock-sha256"
    fi
  done
}

# is_current COMPONENT STAMP: whether COMPONENT was built from sources whose digest is STAMP.
is_current() {
  [[ -f "$1" && "$(cat "$1.stamp" 2>/dev/null)" == "$2" ]]
}
