# syntax=docker/dockerfile:1
#
# The wasm-reconciler host image.
#
#   docker build -t ghcr.io/wasm-reconciler/wasm-reconciler:0.1.0 .
#
# The example plugin components can be exported without building the image:
#
#   docker build --target plugins --output type=local,dest=dist/plugins .

# --- toolchain and sources -------------------------------------------------------------------------------------
FROM rust:1.95 AS sources
WORKDIR /src
# rust-toolchain.toml pins the exact toolchain; install it (and the plugins' target) in a layer of its own so it
# stays cached while the sources change.
COPY rust-toolchain.toml ./
RUN rustup toolchain install \
 && rustup target add wasm32-wasip2
COPY . .

# --- the host binary -------------------------------------------------------------------------------------------
FROM sources AS builder
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p wasm-reconciler \
 && install -D -m 0755 target/release/wasm-reconciler /out/wasm-reconciler

# --- the example plugins, as WebAssembly components ------------------------------------------------------------
FROM sources AS plugin-builder
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --locked --lib --target wasm32-wasip2 --profile wasm-release -p configmapset -p webapp \
 && install -D -m 0644 -t /out target/wasm32-wasip2/wasm-release/configmapset.wasm \
      target/wasm32-wasip2/wasm-release/webapp.wasm

FROM scratch AS plugins
COPY --from=plugin-builder /out/ /

# --- runtime: glibc and CA certificates, no shell, non-root (uid 65532) --------------------------------------------
FROM gcr.io/distroless/cc-debian12:nonroot AS runtime
LABEL org.opencontainers.image.title="wasm-reconciler" \
      org.opencontainers.image.description="Kubernetes controller host that runs reconcile logic compiled to WebAssembly components" \
      org.opencontainers.image.source="https://github.com/wasm-reconciler/wasm-reconciler" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /out/wasm-reconciler /usr/local/bin/wasm-reconciler
USER 65532:65532
# /metrics, /healthz, /readyz
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/wasm-reconciler"]
CMD ["run"]
