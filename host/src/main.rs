//! The `wasm-reconciler` binary: parses the command line and hands over to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    wasm_reconciler::cli::run(wasm_reconciler::cli::Cli::parse())
}
