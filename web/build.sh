#!/usr/bin/env bash
# Builds every npm package under web/ (the console, the chat widget) into src/heddle/web/static/.
# Never fatal: without npm, or when a build fails, the API still serves and /console says so.
# Usage: web/build.sh STAMP   (touches STAMP when every package built)
set -uo pipefail
stamp="$1"
cd "$(dirname "$0")"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: the console and the chat widget are not built (the API works without them)"
  exit 0
fi
for pkg in */package.json; do
  [ -e "$pkg" ] || continue
  dir="$(dirname "$pkg")"
  echo "building web/$dir"
  if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build); then
    echo "WARNING: building web/$dir failed (see above); the API still serves without it"
    exit 0
  fi
done
mkdir -p "$(dirname "../$stamp")" && touch "../$stamp"
