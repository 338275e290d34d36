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
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    // The audit wants INFO spans only; the hint keeps the global maximum level (and with it the `log` crate's, which
    // the code generator logs through at DEBUG and TRACE) at INFO instead of letting everything through.
    let audit = crate::reconcile_audit::AuditLayer.with_filter(
        tracing_subscriber::filter::filter_fn(|metadata| {
            metadata.is_span() && metadata.name() == "reconcile" && metadata.target().starts_with("wasm_reconciler")
        })
        .with_max_level_hint(tracing::Level::INFO),
    );
    let _ = tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_test_writer().with_filter(filter))
        .with(audit)
        .try_init();
}

/// Which API server the end-to-end tests run against, from `E2E_SERVER`: `embedded` (the default; the project's
/// own, in this process) or `real` (kube-apiserver, etcd and kube-controller-manager built by `tests/kube/`, one
/// control plane per test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// The embedded API server.
    Embedded,
    /// A real Kubernetes control plane.
    Real,
}

impl ServerKind {
    /// The kind `E2E_SERVER` asks for.
    pub fn from_environment() -> Self {
        match std::env::var("E2E_SERVER").as_deref() {
            Err(_) | Ok("") | Ok("embedded") => Self::Embedded,
            Ok("real") => Self::Real,
            Ok(other) => panic!("E2E_SERVER must be `embedded` or `real`, not {other:?}"),
        }
    }
}

/// The API server a test drives, with a kubeconfig in a temporary directory: embedded and served over HTTP, or a
/// real control plane.
pub struct Cluster {
    backend: Backend,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub url: String,
}

enum Backend {
    Embedded {
        server: ApiServer,
        serving: Option<ServingHandle>,
    },
    Real(Box<RealCluster>),
}

impl Cluster {
    /// A fresh cluster of the kind `E2E_SERVER` asks for (in-memory when embedded).
    pub async fn start() -> anyhow::Result<Self> {
        match ServerKind::from_environment() {
            ServerKind::Embedded => Self::start_embedded(None).await,
            ServerKind::Real => Self::start_real().await,
        }
    }

    /// An embedded cluster, keeping its state in `data_dir` when given (survives a restart), for tests that need
    /// what only the embedded server offers (fault injection, a restart on another port, a request recorder).
    pub async fn start_embedded(data_dir: Option<PathBuf>) -> anyhow::Result<Self> {
        init_logging();
        let dir = tempfile::tempdir()?;
        let server = ApiServer::builder().data_dir(data_dir).build().await?;
        let serving = server.serve(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let url = serving.url();
        let kubeconfig = dir.path().join("kubeconfig");
        write_kubeconfig(&kubeconfig, &url, None)?;
        Ok(Self {
            backend: Backend::Embedded {
                server,
                serving: Some(serving),
            },
            dir,
            kubeconfig,
            url,
        })
    }

    /// A fresh real control plane (`tests/kube/`), admin credentials in its kubeconfig.
    pub async fn start_real() -> anyhow::Result<Self> {
        Self::start_real_with(&RealOptions::default()).await
    }

    /// A fresh real control plane, with a node when `node` asks for one.
    pub async fn start_real_with(node: &RealOptions) -> anyhow::Result<Self> {
        init_logging();
        let dir = tempfile::tempdir()?;
        let real = RealCluster::start(&dir.path().join("control-plane"), node).await?;
        Ok(Self {
            kubeconfig: real.kubeconfig.clone(),
            url: real.server.clone(),
            backend: Backend::Real(Box::new(real)),
            dir,
        })
    }

    /// A fresh cluster of the kind `E2E_SERVER` asks for; a real one writes an audit log of every write
    /// ([`RealOptions::audit`]).
    pub async fn start_audited() -> anyhow::Result<Self> {
        match ServerKind::from_environment() {
            ServerKind::Embedded => Self::start_embedded(None).await,
            ServerKind::Real => {
                Self::start_real_with(&RealOptions {
                    audit: true,
                    ..RealOptions::default()
                })
                .await
            }
        }
    }

    /// Writes to `path` a kubeconfig for this cluster that authenticates as `user` with bearer `token` (from
    /// [`Cluster::cluster_admin_token`]).
    pub fn token_kubeconfig(&self, path: &Path, user: &str, token: &str) -> anyhow::Result<()> {
        let ca = self.kubectl_ok(&[
            "config",
            "view",
            "--raw",
            "-o",
            "jsonpath={.clusters[0].cluster.certificate-authority-data}",
        ]);
        std::fs::write(
            path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    \
                 certificate-authority-data: {ca}\nusers:\n- name: {user}\n  user:\n    token: {token}\ncontexts:\n\
                 - name: c\n  context:\n    cluster: c\n    user: {user}\ncurrent-context: c\n",
                self.url
            ),
        )?;
        Ok(())
    }

    /// The real control plane, for what only it has (its node, its logs). Panics on the embedded server.
    pub fn real(&self) -> &RealCluster {
        match &self.backend {
            Backend::Real(real) => real,
            Backend::Embedded { .. } => {
                panic!("this test needs a real control plane; start it with Cluster::start_real")
            }
        }
    }

    /// The embedded API server, for fault injection. Panics on a real cluster: tests that need it start with
    /// [`Cluster::start_embedded`].
    pub fn embedded(&self) -> &ApiServer {
        match &self.backend {
            Backend::Embedded { server, .. } => server,
            Backend::Real(_) => {
                panic!("this test needs the embedded API server; start it with Cluster::start_embedded")
            }
        }
    }

    /// Stops the embedded API server, reopens its data directory in a new one and serves it on a new port; the
    /// URL and kubeconfig point to it afterwards.
    pub async fn restart_embedded(&mut self, data_dir: &Path) -> anyhow::Result<()> {
        self.stop().await;
        // Dropping the old server releases the data directory.
        self.backend = Backend::Embedded {
            server: ApiServer::builder().build().await?,
            serving: None,
        };
        let server = wait_for(
            Duration::from_secs(30),
            "the data directory to be released",
            || async move {
                ApiServer::builder()
                    .data_dir(Some(data_dir.to_path_buf()))
                    .build()
                    .await
                    .ok()
            },
        )
        .await;
        let serving = server.serve(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        self.url = serving.url();
        write_kubeconfig(&self.kubeconfig, &self.url, None)?;
        self.backend = Backend::Embedded {
            server,
            serving: Some(serving),
        };
        Ok(())
    }

    /// A kube client over HTTP from the kubeconfig, as a user's program would build it.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        client_from_kubeconfig(&self.kubeconfig).await
    }

    /// Runs `kubectl` against this cluster.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        kubectl(&self.kubeconfig, args)
    }

    /// Like [`Cluster::kubectl`], failing the test on a non-zero exit and returning stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let output = self.kubectl(args);
        assert!(
            output.status.success(),
            "kubectl {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// A token of ServiceAccount `namespace/name`, created and bound to `cluster-admin` (by ClusterRoleBinding
    /// `binding`) with `admin`: a client of its own whose requests the API server's audit log attributes to it.
    pub async fn cluster_admin_token(
        &self,
        admin: &kube::Client,
        namespace: &str,
        name: &str,
        binding: &str,
    ) -> anyhow::Result<String> {
        use k8s_openapi::api::core::v1::ServiceAccount;
        use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
        use kube::api::{Api, PostParams};

        Api::<ServiceAccount>::namespaced(admin.clone(), namespace)
            .create(
                &PostParams::default(),
                &serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))?,
            )
            .await?;
        let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": binding},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        }))?;
        Api::<ClusterRoleBinding>::all(admin.clone())
            .create(&PostParams::default(), &binding)
            .await?;
        let args = ["-n", namespace, "create", "token", name, "--duration=2h"];
        Ok(tokio::task::block_in_place(|| self.kubectl_ok(&args)).trim().to_owned())
    }

    /// Stops serving (the port closes). A real control plane stops for good.
    pub async fn stop(&mut self) {
        match &mut self.backend {
            Backend::Embedded { serving, .. } => {
                if let Some(serving) = serving.take() {
                    serving.shutdown().await;
                }
            }
            Backend::Real(real) => real.stop().await,
        }
    }
}

/// What a real control plane runs besides itself: a node (kubelet, containerd, CNI, kube-proxy, kube-scheduler in a
/// network namespace of its own), the registry the node pulls from, an audit log.
#[derive(Debug, Clone, Default)]
pub struct RealOptions {
    /// Run a node.
    pub node: bool,
    /// The storage of the registry the node serves to its container runtime as `localhost:5000`.
    pub registry_dir: Option<PathBuf>,
    /// Write an audit log of every write (`logs/audit.log`, as a node-mode cluster always does).
    pub audit: bool,
}

/// The audit policy of [`RealOptions::audit`]: every write at `Metadata` level, nothing else.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
";

/// A real control plane run by `kube-harness` (built by `tests/kube/build.sh`) in a directory of its own; stopped
/// when dropped (the launcher's components die with it).
pub struct RealCluster {
    launcher: tokio::process::Child,
    /// Its admin kubeconfig.
    pub kubeconfig: PathBuf,
    /// `https://127.0.0.1:PORT`.
    pub server: String,
    /// The components' logs (`kube-apiserver.log`, `audit.log` with a node, …).
    pub logs: PathBuf,
    /// The node's name, when it runs one.
    pub node: Option<String>,
}

/// How long a control plane may take to come up (it is a few seconds on an idle machine; a node takes longer).
const REAL_CLUSTER_START: Duration = Duration::from_secs(180);

impl RealCluster {
    /// Starts a control plane keeping its state in `dir`, with what `node` asks for.
    pub async fn start(dir: &Path, node: &RealOptions) -> anyhow::Result<Self> {
        let bin = real_cluster_bin_dir()?;
        let mut command = tokio::process::Command::new(bin.join("kube-harness"));
        command.args(["up", "--bin-dir"]).arg(&bin).arg("--dir").arg(dir);
        if node.node {
            command.arg("--node");
        }
        if let Some(registry) = &node.registry_dir {
            command.arg("--registry-dir").arg(registry);
        }
        if node.audit && !node.node {
            std::fs::create_dir_all(dir)?;
            let policy = dir.join("audit-policy.yaml");
            std::fs::write(&policy, AUDIT_POLICY)?;
            command
                .arg(format!("--apiserver-arg=--audit-policy-file={}", policy.display()))
                .arg(format!(
                    "--apiserver-arg=--audit-log-path={}",
                    dir.join("logs/audit.log").display()
                ));
        }
        let mut launcher = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting kube-harness")?;
        let stdout = launcher.stdout.take().context("kube-harness stdout")?;
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
        let ready = tokio::time::timeout(REAL_CLUSTER_START, lines.next_line())
            .await
            .with_context(|| format!("the real control plane in {} did not become ready", dir.display()))??
            .with_context(|| {
                format!(
                    "kube-harness exited before it was ready; see {}",
                    dir.join("logs/kube-harness.log").display()
                )
            })?;
        let field = |name: &str| {
            ready
                .split(' ')
                .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
                .map(str::to_owned)
        };
        let required =
            |name: &str| field(name).with_context(|| format!("kube-harness's ready line {ready:?} has no {name}"));
        Ok(Self {
            kubeconfig: PathBuf::from(required("kubeconfig")?),
            server: required("server")?,
            logs: PathBuf::from(required("logs")?),
            node: field("node"),
            launcher,
        })
    }

    /// Stops the control plane cleanly (SIGTERM) and waits for it.
    pub async fn stop(&mut self) {
        if let Some(pid) = self.launcher.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        if tokio::time::timeout(Duration::from_secs(30), self.launcher.wait())
            .await
            .is_err()
        {
            let _ = self.launcher.start_kill();
        }
    }
}

impl Drop for RealCluster {
    /// Without a node the launcher's components die with it (`kill_on_drop`). A node's containers do not: they
    /// would stay, with the host sysctls the kubelet changed, until the next start sweeps them. So a cluster with a
    /// node is stopped cleanly (SIGTERM, up to 30 s) also when a test ends without [`RealCluster::stop`] or panics.
    fn drop(&mut self) {
        if self.node.is_none() {
            return;
        }
        let Some(pid) = self.launcher.id() else {
            return;
        };
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            match self.launcher.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                Ok(Some(_)) | Err(_) => return,
            }
        }
    }
}

/// The directory holding `kube-harness` and the control-plane binaries; they must have been built
/// (`make kube-harness`, which `make test` runs first).
pub fn real_cluster_bin_dir() -> anyhow::Result<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("kube/build.sh");
    let output = std::process::Command::new(&script)
        .arg("--print-bin-dir")
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    anyhow::ensure!(output.status.success(), "{} --print-bin-dir failed", script.display());
    let bin = PathBuf::from(String::from_utf8(output.stdout)?.trim());
    anyhow::ensure!(
        bin.join("kube-harness").exists() && bin.join("kube-apiserver").exists(),
        "the real control plane is not built in {}: run `make kube-harness` (tests/kube/build.sh) first",
        bin.display()
    );
    Ok(bin)
}

/// The kubectl the tests drive clusters with: the one `tests/kube/build.sh` builds beside the control plane (the
/// server's version), else one on `PATH`.
pub fn kubectl_binary() -> &'static Path {
    static KUBECTL: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    KUBECTL.get_or_init(|| {
        real_cluster_bin_dir()
            .map(|bin| bin.join("kubectl"))
            .ok()
            .filter(|kubectl| kubectl.exists())
            .unwrap_or_else(|| PathBuf::from("kubectl"))
    })
}

/// Runs kubectl with a kubeconfig; a missing kubectl fails the test.
pub fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    match std::process::Command::new(kubectl_binary())
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
    {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            panic!(
                "kubectl is not installed; the end-to-end tests drive clusters with it (`make kube-harness` builds it)"
            )
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
        Ok(Self::start_on(runtime, kubeconfig, options))
    }

    /// Starts a host with `options` on `runtime` (which it owns from then on), its client built from
    /// `kubeconfig`.
    pub fn start_on(runtime: tokio::runtime::Runtime, kubeconfig: &Path, options: HostOptions) -> Self {
        let kubeconfig = kubeconfig.to_path_buf();
        let (stop, mut stopped) = watch::channel(false);
        let task = runtime.spawn(async move {
            // The client is built on the host's runtime: its connection tasks must die with the host.
            let config = config_from_kubeconfig(&kubeconfig).await?;
            serve(config, options, async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            })
            .await
            .map_err(anyhow::Error::from)
        });
        Self {
            runtime: Some(runtime),
            stop,
            task: Some(task),
        }
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
            sharding: None,
            identity: "test-host".into(),
            registry: Default::default(),
            trusted_keys: Vec::new(),
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
            sharding: None,
            identity: identity.into(),
            registry: Default::default(),
            trusted_keys: Vec::new(),
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
    Ok(kube::Client::try_from(config_from_kubeconfig(path).await?)?)
}

/// The client configuration of the kubeconfig at `path`.
pub async fn config_from_kubeconfig(path: &Path) -> anyhow::Result<kube::Config> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
    Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?)
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
