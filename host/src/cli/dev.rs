//! `wasm-reconciler dev`: a Kubernetes API server (the embedded one, or a real kube-apiserver with etcd from the
//! project's harness), a kubeconfig for `kubectl`, and the host reconciling the plugins of a directory (CRDs
//! installed, hot reload on change) — a local cluster in one command.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use clap::{Args, ValueEnum};
use tokio::io::{AsyncBufReadExt, BufReader};
use wasm_reconciler_apiserver::{ApiServer, write_kubeconfig};

use super::run::{config, identity, shutdown_signal};
use super::serve::{HostOptions, serve};

/// Which API server `dev` runs the host against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DevServer {
    /// The embedded API server (in memory, or durable with `--data-dir`).
    Embedded,
    /// A real kube-apiserver, etcd and kube-controller-manager started by `kube-harness` (`tests/kube/`).
    Real,
}

/// Arguments of `dev`.
#[derive(Debug, Args)]
pub struct DevArgs {
    /// Plugin directory: one folder per plugin with `plugin.wasm`, optional `crd.yaml`, `config.yaml`,
    /// `settings.yaml`. Watched for changes.
    #[arg(long, value_name = "DIR", default_value = ".dev/plugins")]
    pub plugins_dir: PathBuf,
    /// The API server: `embedded`, or `real` to check a plugin against upstream Kubernetes (kube-apiserver, etcd
    /// and kube-controller-manager built from Go modules by `tests/kube/build.sh`; needs Go unless
    /// `--kube-harness` names a built launcher).
    #[arg(long, value_enum, default_value_t = DevServer::Embedded)]
    pub server: DevServer,
    /// Keep cluster state here across restarts (default: in memory for `embedded`, `.dev/real-cluster` for
    /// `real`).
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
    /// The `kube-harness` launcher for `--server real` (default: built by `tests/kube/build.sh` of the current
    /// directory's checkout).
    #[arg(long, value_name = "FILE", env = "WASM_RECONCILER_KUBE_HARNESS")]
    pub kube_harness: Option<PathBuf>,
}

/// Why the real control plane could not be started.
#[derive(Debug, thiserror::Error)]
pub enum RealServerError {
    /// No launcher was named and there is no checkout to build one from.
    #[error(
        "`dev --server real` needs the kube-harness launcher: run it from a wasm-reconciler checkout (it builds the \
         real control plane with tests/kube/build.sh, which needs Go), or pass --kube-harness FILE"
    )]
    NoLauncher,
    /// `tests/kube/build.sh` failed (for instance, Go is missing).
    #[error(
        "building the real control plane with {script} failed ({status}); it needs Go ≥ 1.26: see docs/real-cluster.md"
    )]
    Build {
        /// The script.
        script: String,
        /// Its exit status.
        status: std::process::ExitStatus,
    },
    /// The launcher could not be run.
    #[error("cannot run {launcher}")]
    Spawn {
        /// The launcher.
        launcher: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The launcher stopped or said something else before it was ready.
    #[error("kube-harness did not become ready: {0}; see {1}")]
    NotReady(String, String),
}

/// The running real control plane: stopped (SIGTERM, then waited for) when `dev` ends.
struct RealControlPlane {
    launcher: tokio::process::Child,
    kubeconfig: PathBuf,
    server: String,
}

/// How long the real control plane may take to come up (5-6 s on an idle machine; the first build is separate).
const REAL_START: Duration = Duration::from_secs(180);

impl RealControlPlane {
    async fn start(args: &DevArgs) -> Result<Self, RealServerError> {
        let launcher = match &args.kube_harness {
            Some(launcher) => launcher.clone(),
            None => build_launcher().await?,
        };
        let dir = args
            .data_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(".dev/real-cluster"));
        let logs = dir.join("logs/kube-harness.log").display().to_string();
        let mut command = tokio::process::Command::new(&launcher);
        command.arg("up").arg("--dir").arg(&dir);
        if args.port != 0 {
            command.arg("--port").arg(args.port.to_string());
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| RealServerError::Spawn {
                launcher: launcher.display().to_string(),
                source,
            })?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| RealServerError::NotReady("no standard output".into(), logs.clone()))?;
        let mut lines = BufReader::new(stdout).lines();
        let ready = match tokio::time::timeout(REAL_START, lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => return Err(RealServerError::NotReady("it exited".into(), logs)),
            Ok(Err(error)) => return Err(RealServerError::NotReady(error.to_string(), logs)),
            Err(_) => {
                return Err(RealServerError::NotReady(
                    format!("not ready after {REAL_START:?}"),
                    logs,
                ));
            }
        };
        let field = |name: &str| {
            ready
                .split(' ')
                .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
                .map(str::to_owned)
        };
        match (ready.starts_with("ready "), field("kubeconfig"), field("server")) {
            (true, Some(kubeconfig), Some(server)) => Ok(Self {
                launcher: child,
                kubeconfig: PathBuf::from(kubeconfig),
                server,
            }),
            _ => Err(RealServerError::NotReady(format!("unexpected line {ready:?}"), logs)),
        }
    }

    /// SIGTERM to the launcher, which stops the controller manager, the API server and etcd in order.
    async fn stop(mut self) {
        if let Some(pid) = self.launcher.id() {
            let _ = tokio::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .await;
        }
        if tokio::time::timeout(Duration::from_secs(90), self.launcher.wait())
            .await
            .is_err()
        {
            let _ = self.launcher.start_kill();
        }
    }
}

/// Builds (or finds, cached) the control plane with the checkout's `tests/kube/build.sh`; returns the launcher.
async fn build_launcher() -> Result<PathBuf, RealServerError> {
    let script = Path::new("tests/kube/build.sh");
    if !script.exists() {
        return Err(RealServerError::NoLauncher);
    }
    tracing::info!(
        "building (or finding) the real control plane with tests/kube/build.sh; the first build takes minutes"
    );
    let output = tokio::process::Command::new(script)
        .stderr(Stdio::inherit())
        .output()
        .await
        .map_err(|source| RealServerError::Spawn {
            launcher: script.display().to_string(),
            source,
        })?;
    if !output.status.success() {
        return Err(RealServerError::Build {
            script: script.display().to_string(),
            status: output.status,
        });
    }
    let bin = String::from_utf8_lossy(&output.stdout).trim().to_string();
    Ok(PathBuf::from(bin).join("kube-harness"))
}

pub(super) async fn run(args: DevArgs) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(parent) = args.kubeconfig_out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let (embedded, real) = match args.server {
        DevServer::Embedded => {
            let server = ApiServer::builder().data_dir(args.data_dir.clone()).build().await?;
            let serving = server.serve(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port))).await?;
            write_kubeconfig(&args.kubeconfig_out, &serving.url(), None)?;
            (Some(serving), None)
        }
        DevServer::Real => {
            let real = RealControlPlane::start(&args).await?;
            // The harness's kubeconfig (client certificate, CA) is copied where `dev` always writes it.
            std::fs::copy(&real.kubeconfig, &args.kubeconfig_out)?;
            (None, Some(real))
        }
    };
    let url = match (&embedded, &real) {
        (Some(serving), _) => serving.url(),
        (_, Some(real)) => real.server.clone(),
        _ => unreachable!("one server is started"),
    };
    let kubeconfig = std::fs::canonicalize(&args.kubeconfig_out)?;
    std::fs::create_dir_all(&args.plugins_dir)?;
    let config = config(Some(&kubeconfig)).await?;
    let label = match args.server {
        DevServer::Embedded => "embedded API server",
        DevServer::Real => "real kube-apiserver",
    };
    tracing::info!(url = %url, kubeconfig = %kubeconfig.display(), server = label, "API server ready");
    println!();
    println!("  Kubernetes API server: {url} ({label})");
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
    println!("    kubectl get wasmplugins                  # each plugin's state");
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
    let served = serve(config, options, shutdown_signal()).await;
    if let Some(serving) = embedded {
        serving.shutdown().await;
    }
    if let Some(real) = real {
        real.stop().await;
    }
    served?;
    Ok(())
}
