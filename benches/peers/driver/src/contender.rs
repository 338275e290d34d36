//! The four contenders and how each is started: the wasm plugin under `wasm-reconciler run`, and the peers
//! written with kube-runtime, controller-runtime and Kopf.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use tokio::process::Command;

use crate::process::{ProcessError, Running};

/// Errors of preparing a contender.
#[derive(Debug, thiserror::Error)]
pub enum ContenderError {
    /// Something a contender needs has not been built.
    #[error("{what} not found at {path}: {hint}")]
    Missing {
        /// What is missing.
        what: &'static str,
        /// Where it was looked for.
        path: PathBuf,
        /// How to build it.
        hint: &'static str,
    },
    /// The plugin directory could not be written.
    #[error("preparing the plugin directory {path}")]
    PluginDir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The process could not start.
    #[error(transparent)]
    Process(#[from] ProcessError),
}

type Result<T, E = ContenderError> = std::result::Result<T, E>;

/// One implementation of the configmapset controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum)]
pub enum Contender {
    /// The `configmapset` wasm component under `wasm-reconciler run`.
    Wasm,
    /// The same logic compiled natively into the host's runtime (`benches/peers/native-host`).
    Native,
    /// `benches/peers/kube-runtime`.
    KubeRuntime,
    /// `benches/peers/controller-runtime`.
    ControllerRuntime,
    /// `benches/peers/kopf`.
    Kopf,
}

impl Contender {
    /// The contenders of the peer benchmark, in report order.
    pub const ALL: [Contender; 4] = [Self::Wasm, Self::KubeRuntime, Self::ControllerRuntime, Self::Kopf];

    /// The contenders of the capacity benchmark, in report order.
    pub const CAPACITY: [Contender; 5] = [
        Self::Wasm,
        Self::Native,
        Self::KubeRuntime,
        Self::ControllerRuntime,
        Self::Kopf,
    ];

    /// Its name in the report.
    pub fn label(self) -> &'static str {
        match self {
            Self::Wasm => "wasm-reconciler",
            Self::Native => "wasm-reconciler (native)",
            Self::KubeRuntime => "kube-runtime",
            Self::ControllerRuntime => "controller-runtime",
            Self::Kopf => "Kopf",
        }
    }

    /// Resources it watches once started: everyone watches ConfigMapSets; all but Kopf cache ConfigMaps too
    /// (the Kopf peer lists a set's ConfigMaps from the API server in each round).
    pub fn watched(self) -> &'static [&'static str] {
        match self {
            Self::Kopf => &["configmapsets"],
            _ => &["configmapsets", "configmaps"],
        }
    }

    /// Its name in namespaces and file names.
    pub fn slug(self) -> &'static str {
        match self {
            Self::Wasm => "wasm",
            Self::Native => "native",
            Self::KubeRuntime => "kube-runtime",
            Self::ControllerRuntime => "controller-runtime",
            Self::Kopf => "kopf",
        }
    }
}

/// Where the contenders' programs are.
#[derive(Debug, Clone)]
pub struct Programs {
    /// `wasm-reconciler` (release build).
    pub host: PathBuf,
    /// `configmapset-native-host` (release build).
    pub native_host: PathBuf,
    /// The `configmapset` component.
    pub plugin: PathBuf,
    /// `configmapset-kube-runtime` (release build).
    pub kube_runtime: PathBuf,
    /// `configmapset-controller-runtime`.
    pub controller_runtime: PathBuf,
    /// The Python of the venv with Kopf installed.
    pub python: PathBuf,
    /// `benches/peers/kopf`.
    pub kopf_dir: PathBuf,
}

impl Programs {
    /// Checks that everything `contenders` need exists, naming what builds a missing piece.
    pub fn check(&self, contenders: &[Contender]) -> Result<()> {
        let need = |what, path: &Path, hint| {
            if path.exists() {
                Ok(())
            } else {
                Err(ContenderError::Missing {
                    what,
                    path: path.to_owned(),
                    hint,
                })
            }
        };
        need(
            "wasm-reconciler (release)",
            &self.host,
            "cargo build --release -p wasm-reconciler",
        )?;
        for contender in contenders {
            match contender {
                Contender::Wasm => need("the configmapset component", &self.plugin, "make plugins")?,
                Contender::Native => need(
                    "configmapset-native-host (release)",
                    &self.native_host,
                    "cargo build --release -p configmapset-native-host",
                )?,
                Contender::KubeRuntime => need(
                    "configmapset-kube-runtime (release)",
                    &self.kube_runtime,
                    "cargo build --release -p configmapset-kube-runtime",
                )?,
                Contender::ControllerRuntime => need(
                    "configmapset-controller-runtime",
                    &self.controller_runtime,
                    "go (https://go.dev) builds it: make bench-peers",
                )?,
                Contender::Kopf => {
                    need(
                        "the Python of the Kopf venv",
                        &self.python,
                        "python3 with venv builds it: make bench-peers",
                    )?;
                    need(
                        "the Kopf operator",
                        &self.kopf_dir.join("configmapset_operator.py"),
                        "it is benches/peers/kopf/configmapset_operator.py in the repository",
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Writes `<work_dir>/plugins/configmapset/plugin.wasm` for `wasm-reconciler run --plugins-dir`.
    pub fn prepare_plugin_dir(&self, work_dir: &Path) -> Result<PathBuf> {
        let dir = work_dir.join("plugins");
        let plugin_dir = dir.join("configmapset");
        std::fs::create_dir_all(&plugin_dir)
            .and_then(|()| std::fs::copy(&self.plugin, plugin_dir.join("plugin.wasm")))
            .map_err(|source| ContenderError::PluginDir {
                path: plugin_dir.clone(),
                source,
            })?;
        Ok(dir)
    }

    /// Starts one replica of `wasm-reconciler run --sharding` with the wasm plugin, its Leases in `namespace`.
    pub fn start_sharded(
        &self,
        kubeconfig: &Path,
        plugins_dir: &Path,
        namespace: &str,
        identity: &str,
        log: &Path,
    ) -> Result<Running> {
        let mut command = Command::new(&self.host);
        command
            .args(["run", "--no-configmaps", "--sharding", "--metrics-addr", "127.0.0.1:0"])
            .args(["--namespace", namespace, "--identity", identity, "--plugins-dir"])
            .arg(plugins_dir)
            .env("KUBECONFIG", kubeconfig)
            .env_remove("RUST_LOG")
            .env_remove("POD_NAME")
            .env_remove("WASM_RECONCILER_LOG_FORMAT");
        Ok(Running::spawn(&format!("wasm-reconciler {identity}"), command, log)?)
    }

    /// Starts `contender` against the cluster of `kubeconfig`, logging to `log`.
    pub fn start(&self, contender: Contender, kubeconfig: &Path, plugins_dir: &Path, log: &Path) -> Result<Running> {
        let mut command = match contender {
            Contender::Wasm => {
                let mut command = Command::new(&self.host);
                command
                    .args([
                        "run",
                        "--no-configmaps",
                        "--metrics-addr",
                        "127.0.0.1:0",
                        "--plugins-dir",
                    ])
                    .arg(plugins_dir);
                command
            }
            Contender::Native => Command::new(&self.native_host),
            Contender::KubeRuntime => Command::new(&self.kube_runtime),
            Contender::ControllerRuntime => {
                let mut command = Command::new(&self.controller_runtime);
                command.args([
                    "--metrics-bind-address",
                    "127.0.0.1:0",
                    "--health-probe-bind-address",
                    "127.0.0.1:0",
                ]);
                command
            }
            Contender::Kopf => {
                let mut command = Command::new(&self.python);
                command
                    .args(["-m", "kopf", "run", "--standalone", "--all-namespaces"])
                    .arg(self.kopf_dir.join("configmapset_operator.py"))
                    .current_dir(&self.kopf_dir);
                command
            }
        };
        // Every contender finds the cluster the same way, and logs at its framework's default level.
        command
            .env("KUBECONFIG", kubeconfig)
            .env_remove("RUST_LOG")
            .env_remove("POD_NAME")
            .env_remove("WASM_RECONCILER_LOG_FORMAT");
        Ok(Running::spawn(contender.label(), command, log)?)
    }
}
