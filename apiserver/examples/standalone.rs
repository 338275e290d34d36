//! Run the API server standalone: `cargo run -p wasm-reconciler-apiserver --example standalone -- --port 6443`.

use clap::Parser;
use wasm_reconciler_apiserver::{ApiserverArgs, run_standalone};

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: ApiserverArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    run_standalone(Cli::parse().args).await?;
    Ok(())
}
