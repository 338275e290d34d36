module wasm-reconciler/apiserver/tools/go-regexp-cases

go 1.26

toolchain go1.26.8
