//! `configmapset-native-host`: the configmapset reconcile logic compiled natively and run by the wasm-reconciler
//! runtime (shared caches, workqueue, server-side apply with pruning, status, events, finalizer), the same path a
//! wasm plugin takes through `wasm-reconciler run` but without the component boundary. It lets the benchmarks in
//! `benches/peers` tell the cost of the sandbox from the cost of the runtime. Reads `KUBECONFIG` (or the
//! in-cluster configuration) and runs until Ctrl-C or SIGTERM.

use anyhow::{Context as _, Result};
use serde_json::json;
use wasm_reconciler::controller::{Controller, ControllerOptions, Logic, Version};
use wasm_reconciler::plugin::{Limits, NativePlugin};
use wasm_reconciler::runtime::Caches;

/// The controller's name, as the wasm plugin's under `wasm-reconciler run` (field manager, events, metrics).
const PLUGIN: &str = "configmapset";

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let client = kube::Client::try_default()
        .await
        .context("connecting to the API server (KUBECONFIG or in-cluster)")?;
    let caches = Caches::new(client);
    let logic = Logic::Native(NativePlugin::new::<configmapset::ConfigMapSetReconciler>(
        Limits::default(),
    ));
    let controller = Controller::start(
        PLUGIN,
        Version::new(logic, &json!({})),
        &caches,
        ControllerOptions::default(),
        None,
    )
    .await
    .context("starting the configmapset controller")?;
    tracing::info!(plugin = PLUGIN, "controller started (native logic)");
    stop_signal().await?;
    controller.stop().await;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stop_signal() -> Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result?,
        _ = terminate.recv() => {}
    }
    Ok(())
}
