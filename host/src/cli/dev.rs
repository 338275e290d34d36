//! `wasm-reconciler dev`: the embedded API server, a kubeconfig for `kubectl`, and the host reconciling the
//! plugins of a directory (CRDs installed, hot reload on change) — a local cluster in one command.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::Args;
use wasm_reconciler_apiserver::{ApiServer, write_kubeconfig};

use super::run::{client, identity, shutdown_signal};
use super::serve::{HostOptions, serve};

/// Arguments of `dev`.
#[derive(Debug, Args)]
pub struct DevArgs {
    /// Plugin directory: one folder per plugin with `plugin.wasm`, optional `crd.yaml`, `config.yaml`,
    /// `settings.yaml`. Watched for changes.
    #[arg(long, value_name = "DIR", default_value = ".dev/plugins")]
    pub plugins_dir: PathBuf,
    /// Keep cluster state here across restarts (default: in memory).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// API server port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Where to write the kubeconfig.
    #[arg(long, value_name = "FILE", default_value = ".dev/kubeconfig")]
    pub kubeconfig_out: PathBuf,
    /// Serve `/metrics`, `/healthz` and `/readyz` on this address.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
}

pub(super) async fn run(args: DevArgs) -> Result<(), Box<dyn std::error::Error>> {
    let server = ApiServer::builder().data_dir(args.data_dir.clone()).build().await?;
    let serving = server.serve(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port))).await?;
    if let Some(parent) = args.kubeconfig_out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    write_kubeconfig(&args.kubeconfig_out, &serving.url(), None)?;
    let kubeconfig = std::fs::canonicalize(&args.kubeconfig_out)?;
    std::fs::create_dir_all(&args.plugins_dir)?;
    let client = client(Some(&kubeconfig)).await?;
    tracing::info!(url = %serving.url(), kubeconfig = %kubeconfig.display(), "embedded API server ready");
    println!();
    println!("  Kubernetes API server: {}", serving.url());
    println!("  kubeconfig:            {}", kubeconfig.display());
    println!(
        "  plugins:               {} (hot reload on change)",
        args.plugins_dir.display()
    );
    println!();
    println!("  Try it:");
    println!("    export KUBECONFIG={}", kubeconfig.display());
    println!("    kubectl apply -f plugins/configmapset/examples/configmapset.yaml");
    println!("    kubectl get configmapsets,configmaps -w");
    println!();

    let options = HostOptions {
        plugins_dir: Some(args.plugins_dir),
        install_crds: true,
        configmap_namespace: None,
        artifact_cache: None,
        metrics_addr: args.metrics_addr,
        leader_election: None,
        sharding: None,
        identity: identity(None),
        registry: Default::default(),
        trusted_keys: Vec::new(),
    };
    serve(client, options, shutdown_signal()).await?;
    serving.shutdown().await;
    Ok(())
}
