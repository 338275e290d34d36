//! `wasm-reconciler run`: the host against a cluster (kubeconfig or in-cluster), plugins from ConfigMaps and/or
//! a directory, with optional leader election or sharding.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::serve::{HostOptions, LeaderElection, serve};
use crate::delivery::RegistryOptions;
use crate::shard::Sharding;

/// Arguments of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Kubeconfig to use (default: `KUBECONFIG`, then the Pod's in-cluster service account, then
    /// `~/.kube/config`).
    #[arg(long, env = "KUBECONFIG", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The host's namespace: plugin ConfigMaps and the leader Lease live here.
    #[arg(long, env = "POD_NAMESPACE", default_value = "wasm-reconciler")]
    pub namespace: String,
    /// Do not load plugins from ConfigMaps.
    #[arg(long)]
    pub no_configmaps: bool,
    /// Also load plugins from this directory (watched for changes).
    #[arg(long, value_name = "DIR")]
    pub plugins_dir: Option<PathBuf>,
    /// Elect a leader on a Lease; only the leader reconciles.
    #[arg(long, conflicts_with = "sharding")]
    pub leader_elect: bool,
    /// Sharded mode: every replica reconciles its own share of the primaries (a membership Lease per replica, a
    /// sharder assigning primaries with a shard label, label-selected caches). See docs/deploy.md.
    #[arg(long)]
    pub sharding: bool,
    /// Name of the leader Lease; in sharded mode, the ring's name, which prefixes its Leases
    /// (`<name>-shard-<identity>`, `<name>-sharder`) and completes its labels (`shard.wasm-reconciler.io/<name>`).
    #[arg(long, default_value = "wasm-reconciler")]
    pub lease_name: String,
    /// Lease duration in seconds.
    #[arg(long, default_value_t = 15)]
    pub lease_duration_seconds: u64,
    /// Lease renewal period in seconds.
    #[arg(long, default_value_t = 10)]
    pub lease_renew_seconds: u64,
    /// Serve `/metrics`, `/healthz` and `/readyz` on this address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9090")]
    pub metrics_addr: SocketAddr,
    /// Keep compiled plugins in this directory.
    #[arg(long, value_name = "DIR")]
    pub artifact_cache: Option<PathBuf>,
    /// This host's identity in the Lease and in events (default: `POD_NAME`, then the host name).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Refuse every plugin not signed by this public key (PEM, ECDSA P-256, e.g. cosign.pub); repeat for several
    /// keys, any of which may sign. Artifacts need a cosign signature in their registry, inline components a
    /// `plugin.wasm.sig`.
    #[arg(
        long = "trusted-key",
        value_name = "FILE",
        env = "WASM_RECONCILER_TRUSTED_KEYS",
        value_delimiter = ','
    )]
    pub trusted_keys: Vec<PathBuf>,
}

/// How plugin references reach registries: shared by `run` and the `plugin push`/`sign`/`verify` commands.
#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    /// A registry (`host` or `host:port`) that may be reached over plain HTTP; loopback registries always may.
    /// Repeat for several.
    #[arg(long = "insecure-registry", value_name = "HOST[:PORT]")]
    pub insecure_registries: Vec<String>,
    /// PEM bundle of CA certificates trusted for registries besides the system roots.
    #[arg(long = "registry-ca", value_name = "FILE")]
    pub ca_bundle: Option<PathBuf>,
}

impl RegistryArgs {
    /// The registry options these flags describe.
    pub fn options(&self) -> RegistryOptions {
        RegistryOptions {
            insecure_registries: self.insecure_registries.clone(),
            ca_bundle: self.ca_bundle.clone(),
        }
    }
}

/// The identity of this host: the given one, or the host name.
pub(crate) fn identity(given: Option<String>) -> String {
    given.unwrap_or_else(|| {
        std::fs::read_to_string("/etc/hostname")
            .ok()
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| format!("wasm-reconciler-{}", std::process::id()))
    })
}

/// The client configuration from a kubeconfig file; without one, from the Pod's service account (in-cluster: the
/// token and CA the kubelet mounts, `KUBERNETES_SERVICE_HOST`/`_PORT`), else from `~/.kube/config`. Logs which it
/// used.
pub(crate) async fn config(kubeconfig: Option<&std::path::Path>) -> Result<kube::Config, Box<dyn std::error::Error>> {
    let (config, source) = match kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| format!("reading kubeconfig {}: {}", path.display(), crate::error_chain(&e)))?;
            let config =
                kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default()).await?;
            (config, format!("kubeconfig {}", path.display()))
        }
        None if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() => {
            let config = kube::Config::incluster()
                .map_err(|e| format!("reading the in-cluster configuration: {}", crate::error_chain(&e)))?;
            (config, "in-cluster service account".to_owned())
        }
        None => (kube::Config::infer().await?, "~/.kube/config".to_owned()),
    };
    tracing::info!(server = %config.cluster_url, credentials = %source, "connecting to the API server");
    Ok(config)
}

/// Resolves on Ctrl-C or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("shutting down");
}

pub(super) async fn run(args: RunArgs) -> Result<(), Box<dyn std::error::Error>> {
    if args.lease_renew_seconds == 0 || args.lease_renew_seconds >= args.lease_duration_seconds {
        return Err(format!(
            "--lease-renew-seconds ({}) must be at least 1 and less than --lease-duration-seconds ({})",
            args.lease_renew_seconds, args.lease_duration_seconds
        )
        .into());
    }
    let config = config(args.kubeconfig.as_deref()).await?;
    let identity = identity(args.identity);
    let options = HostOptions {
        plugins_dir: args.plugins_dir,
        install_crds: false,
        configmap_namespace: (!args.no_configmaps).then(|| args.namespace.clone()),
        artifact_cache: args.artifact_cache,
        metrics_addr: Some(args.metrics_addr),
        leader_election: args.leader_elect.then(|| LeaderElection {
            namespace: args.namespace.clone(),
            lease_name: args.lease_name.clone(),
            lease_duration: Duration::from_secs(args.lease_duration_seconds),
            renew_every: Duration::from_secs(args.lease_renew_seconds),
        }),
        sharding: args.sharding.then(|| Sharding {
            namespace: args.namespace.clone(),
            ring: args.lease_name.clone(),
            lease_duration: Duration::from_secs(args.lease_duration_seconds),
            renew_every: Duration::from_secs(args.lease_renew_seconds),
        }),
        identity,
        registry: args.registry.options(),
        trusted_keys: args.trusted_keys,
    };
    serve(config, options, shutdown_signal()).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Command {
        #[command(flatten)]
        run: RunArgs,
    }

    #[test]
    fn registry_and_signature_flags() {
        let parsed = Command::try_parse_from([
            "run",
            "--trusted-key",
            "a.pub",
            "--trusted-key",
            "b.pub",
            "--insecure-registry",
            "registry.lan:5000",
            "--registry-ca",
            "ca.pem",
        ])
        .expect("parses");
        assert_eq!(
            parsed.run.trusted_keys,
            [PathBuf::from("a.pub"), PathBuf::from("b.pub")]
        );
        let options = parsed.run.registry.options();
        assert_eq!(options.insecure_registries, ["registry.lan:5000"]);
        assert_eq!(options.ca_bundle, Some(PathBuf::from("ca.pem")));
        assert!(options.allows_plain_http("registry.lan:5000"));

        let sharded = Command::try_parse_from(["run", "--sharding", "--lease-name", "ring"]).expect("parses");
        assert!(sharded.run.sharding && !sharded.run.leader_elect);
        assert!(
            Command::try_parse_from(["run", "--sharding", "--leader-elect"]).is_err(),
            "sharding and leader election exclude each other"
        );

        let plain = Command::try_parse_from(["run"]).expect("parses");
        assert!(plain.run.trusted_keys.is_empty(), "signatures are opt-in");
        assert_eq!(plain.run.registry.options(), RegistryOptions::default());
    }
}
