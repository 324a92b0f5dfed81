#!/usr/bin/env bash
# Installs what building and testing Talon needs beyond the Rust toolchain:
# Node.js with npm (the build fetches the pinned `quickjs-wasi` package with
# `npm pack` and checks its integrity). Idempotent; quiet when all is there.
set -euo pipefail

need_apt=()
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)

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
