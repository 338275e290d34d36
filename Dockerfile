# syntax=docker/dockerfile:1
#
# The wasm-reconciler host image: one static binary (x86_64-unknown-linux-musl) on an empty base, Debian's CA
# bundle, and the passwd/group entries of the non-root user 65532. No stage pulls an image from anywhere.
#
# `make image` builds it here with buildah and pushes it to the loopback registry (docs/deploy.md, "The image").
# With Docker, stage the build context first, then build from this file:
#
#   make image-context                       # the binary and CA bundle into dist/image/
#   docker build -t registry.example.com/wasm-reconciler:0.1.0 .
#
# The context is the repository root; .dockerignore lets only dist/image/ and deploy/image/ through.
FROM scratch
LABEL org.opencontainers.image.title="wasm-reconciler" \
      org.opencontainers.image.description="Kubernetes controller host that runs reconcile logic compiled to WebAssembly components" \
      org.opencontainers.image.source="https://github.com/wasm-reconciler/wasm-reconciler" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY deploy/image/passwd deploy/image/group /etc/
COPY dist/image/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY dist/image/wasm-reconciler /usr/local/bin/wasm-reconciler
USER 65532:65532
# /metrics, /healthz, /readyz
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/wasm-reconciler"]
CMD ["run"]
