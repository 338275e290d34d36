//! `configmapset-kube-runtime`: runs the kube-runtime peer of the configmapset controller against the cluster
//! of `KUBECONFIG` (or the in-cluster configuration).

use clap::Parser;

/// The configmapset controller, written with kube-runtime.
#[derive(Debug, Parser)]
struct Args {
    /// Reconciles running at once.
    #[arg(long, default_value_t = 4)]
    concurrency: u16,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let client = kube::Client::try_default().await?;
    configmapset_kube_runtime::controller::run(client, args.concurrency).await;
    Ok(())
}
