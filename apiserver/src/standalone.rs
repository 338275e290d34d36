//! `wasm-reconciler apiserver`: run the server standalone until Ctrl-C or SIGTERM.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use crate::{ApiServer, Error, write_kubeconfig};

/// Command-line options of the standalone server.
#[derive(Debug, Clone, clap::Args)]
pub struct ApiserverArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    pub port: u16,
    /// Keep objects durably in this directory (default: in memory).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Write a kubeconfig for this server here (context `wasm-reconciler`).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig_out: Option<PathBuf>,
    /// Require this bearer token.
    #[arg(long, env = "WASM_RECONCILER_APISERVER_TOKEN")]
    pub token: Option<String>,
}

/// Serve until Ctrl-C or SIGTERM, printing the URL and how to use it.
pub async fn run_standalone(args: ApiserverArgs) -> Result<(), Error> {
    let server = ApiServer::builder()
        .data_dir(args.data_dir.clone())
        .bearer_token(args.token.clone())
        .build()
        .await?;
    let serving = server.serve(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port))).await?;
    let url = serving.url();
    println!("Kubernetes API server listening on {url}");
    match &args.data_dir {
        Some(dir) => println!("Objects are stored durably in {}", dir.display()),
        None => println!("Objects are kept in memory (use --data-dir to keep them)"),
    }
    if let Some(path) = &args.kubeconfig_out {
        write_kubeconfig(path, &url, args.token.as_deref())?;
        println!("Wrote kubeconfig {}", path.display());
        println!("  export KUBECONFIG={}", path.display());
        println!("  kubectl get namespaces");
    } else {
        println!("  kubectl --server {url} get namespaces");
    }
    wait_for_signal().await?;
    println!("Shutting down");
    serving.shutdown().await;
    Ok(())
}

#[cfg(unix)]
async fn wait_for_signal() -> Result<(), Error> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).map_err(Error::Signal)?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result.map_err(Error::Signal),
        _ = terminate.recv() => Ok(()),
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() -> Result<(), Error> {
    tokio::signal::ctrl_c().await.map_err(Error::Signal)
}
