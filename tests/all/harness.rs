//! The test cluster: an embedded API server on loopback, a kubeconfig, kube clients over HTTP, `kubectl`, plugin
//! directories, and hosts started and stopped at will.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::Value;
use tokio::sync::watch;
use wasm_reconciler::cli::serve::{HostOptions, LeaderElection, serve};
use wasm_reconciler_apiserver::{ApiServer, ServingHandle, write_kubeconfig};

/// Installs a log subscriber once (set `RUST_LOG` to see host logs of a failing test).
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_test_writer()
        .try_init();
}

/// An embedded API server served over HTTP, with a kubeconfig in a temporary directory.
pub struct Cluster {
    pub server: ApiServer,
    serving: Option<ServingHandle>,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub url: String,
}

impl Cluster {
    /// An in-memory cluster.
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_with(None).await
    }

    /// A cluster keeping its state in `data_dir` (survives [`Cluster::restart`]).
    pub async fn start_with(data_dir: Option<PathBuf>) -> anyhow::Result<Self> {
        init_logging();
        let dir = tempfile::tempdir()?;
        let server = ApiServer::builder().data_dir(data_dir).build().await?;
        let serving = server.serve(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let url = serving.url();
        let kubeconfig = dir.path().join("kubeconfig");
        write_kubeconfig(&kubeconfig, &url, None)?;
        Ok(Self {
            server,
            serving: Some(serving),
            dir,
            kubeconfig,
            url,
        })
    }

    /// A kube client over HTTP from the kubeconfig, as a user's program would build it.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        client_from_kubeconfig(&self.kubeconfig).await
    }

    /// Runs `kubectl` against this cluster. `None` (with a printed reason) when kubectl is not installed.
    pub fn kubectl(&self, args: &[&str]) -> Option<Output> {
        kubectl(&self.kubeconfig, args)
    }

    /// Like [`Cluster::kubectl`], failing the test on a non-zero exit and returning stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> Option<String> {
        let output = self.kubectl(args)?;
        assert!(
            output.status.success(),
            "kubectl {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        Some(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Stops serving (the port closes).
    pub async fn stop(&mut self) {
        if let Some(serving) = self.serving.take() {
            serving.shutdown().await;
        }
    }
}

/// Runs kubectl with a kubeconfig; `None` with a printed reason when kubectl is missing.
pub fn kubectl(kubeconfig: &Path, args: &[&str]) -> Option<Output> {
    match std::process::Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
    {
        Ok(output) => Some(output),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            println!("skipping kubectl step: kubectl is not installed");
            None
        }
        Err(error) => panic!("running kubectl: {error}"),
    }
}

/// A plugin laid out as the directory source expects.
pub struct PluginFiles<'a> {
    pub name: &'a str,
    pub wasm: &'a str,
    pub crd: Option<&'a str>,
    pub config: Option<&'a str>,
    pub settings: Option<&'a str>,
}

/// Writes (or rewrites) a plugin into `dir/<name>/`. The component is replaced atomically.
pub fn write_plugin(dir: &Path, plugin: &PluginFiles<'_>) -> anyhow::Result<PathBuf> {
    let folder = dir.join(plugin.name);
    std::fs::create_dir_all(&folder)?;
    if let Some(crd) = plugin.crd {
        std::fs::copy(crd, folder.join("crd.yaml")).with_context(|| format!("copying {crd}"))?;
    }
    for (file, text) in [("config.yaml", plugin.config), ("settings.yaml", plugin.settings)] {
        match text {
            Some(text) => std::fs::write(folder.join(file), text)?,
            None => {
                let _ = std::fs::remove_file(folder.join(file));
            }
        }
    }
    let temporary = folder.join("plugin.wasm.tmp");
    std::fs::copy(plugin.wasm, &temporary).with_context(|| format!("copying {}", plugin.wasm))?;
    std::fs::rename(&temporary, folder.join("plugin.wasm"))?;
    Ok(folder)
}

/// The CRD file of an example plugin.
pub fn example_crd(plugin: &str) -> String {
    format!("{}/../plugins/{plugin}/crd.yaml", env!("CARGO_MANIFEST_DIR"))
}

/// A host running in this process until stopped, on a runtime of its own so that [`Host::kill`] ends every task
/// it started (informers, workers, the lease renewal, the telemetry server) at once, as a crash would.
pub struct Host {
    runtime: Option<tokio::runtime::Runtime>,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl Host {
    /// Starts a host with `options` against the cluster.
    pub async fn start(cluster: &Cluster, options: HostOptions) -> anyhow::Result<Self> {
        Self::start_with_kubeconfig(&cluster.kubeconfig, options).await
    }

    /// Starts a host with `options`, its client built from `kubeconfig` (an API server of the test's choosing).
    pub async fn start_with_kubeconfig(kubeconfig: &Path, options: HostOptions) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-host")
            .enable_all()
            .build()?;
        let kubeconfig = kubeconfig.to_path_buf();
        let (stop, mut stopped) = watch::channel(false);
        let task = runtime.spawn(async move {
            // Built on the host's runtime: the client's connection tasks must die with the host.
            let client = client_from_kubeconfig(&kubeconfig).await?;
            serve(client, options, async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            })
            .await
            .map_err(anyhow::Error::from)
        });
        Ok(Self {
            runtime: Some(runtime),
            stop,
            task: Some(task),
        })
    }

    /// Options for a host reconciling the plugins of `plugins_dir` (CRDs installed), without leader election.
    pub fn dev_options(plugins_dir: &Path) -> HostOptions {
        HostOptions {
            plugins_dir: Some(plugins_dir.to_path_buf()),
            install_crds: true,
            configmap_namespace: None,
            artifact_cache: None,
            metrics_addr: None,
            leader_election: None,
            identity: "test-host".into(),
        }
    }

    /// Options for a cluster-style host: plugins from ConfigMaps in `namespace`, leader election on a Lease there.
    pub fn cluster_options(namespace: &str, identity: &str, metrics_addr: Option<SocketAddr>) -> HostOptions {
        HostOptions {
            plugins_dir: None,
            install_crds: false,
            configmap_namespace: Some(namespace.into()),
            artifact_cache: None,
            metrics_addr,
            leader_election: Some(LeaderElection {
                namespace: namespace.into(),
                lease_name: "wasm-reconciler".into(),
                lease_duration: Duration::from_secs(15),
                renew_every: Duration::from_secs(10),
            }),
            identity: identity.into(),
        }
    }

    /// Stops the host gracefully (workers finish, lease released) and waits for it.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let _ = self.stop.send(true);
        let task = self.task.take().context("the host task is started with the host")?;
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .context("host did not stop within 30s")??
    }

    /// Stops the host abruptly, as a crash would: every task it started ends where it is, its connections
    /// close, nothing is released.
    pub fn kill(self) {
        drop(self);
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A kube client over HTTP from a kubeconfig file.
pub async fn client_from_kubeconfig(path: &Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

/// Polls `check` every 50 ms until it returns `Some`, failing with `what` after `timeout`.
pub async fn wait_for<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The status of a condition type on an object, e.g. `Some("True")`.
pub fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a str> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?["status"]
        .as_str()
}

/// A condition object by type.
pub fn condition_object<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}
