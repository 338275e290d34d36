//! A plan's stage: its namespace, its hosts as `wasm-reconciler run` processes each behind a fault front, the
//! journal of its objects, and the environment every plan of a run shares (one API server, one PowerDNS, the
//! CRDs).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use super::front::{CrashWhen, Front, WriteLog};
use super::request::WriteId;
use super::story::{POWERDNS_KEY, Scene, Story};
use crate::harness::{Cluster, PluginFiles, ServerKind, wait_for, write_plugin};
use crate::host_process::HostProcess;
use crate::journal::{Action, Journal, count_per_name};
use crate::plugin_configmaps::install_crd;
use crate::powerdns::PowerDns;
use crate::telemetry_probe::http_get;

/// What every plan of one run shares.
pub struct Environment {
    pub server: ServerKind,
    pub cluster: Cluster,
    pub admin: kube::Client,
    pub powerdns: Arc<PowerDns>,
    plans: AtomicUsize,
}

impl Environment {
    /// The API server `E2E_SERVER` asks for (a real one writes an audit log), the stories' CRDs and a PowerDNS.
    pub async fn start() -> anyhow::Result<Self> {
        let server = ServerKind::from_environment();
        let cluster = Cluster::start_audited().await?;
        let admin = cluster.client().await?;
        for story in Story::ALL {
            install_crd(&admin, &story.crd()).await?;
        }
        let powerdns = Arc::new(PowerDns::start(&cluster.dir.path().join("powerdns"), POWERDNS_KEY).await?);
        Ok(Self {
            server,
            cluster,
            admin,
            powerdns,
            plans: AtomicUsize::new(0),
        })
    }

    /// `embedded` or `real`.
    pub fn server_name(&self) -> &'static str {
        match self.server {
            ServerKind::Embedded => "embedded",
            ServerKind::Real => "real",
        }
    }

    /// A client whose requests the API server attributes to `identity`: on a real server a ServiceAccount of that
    /// name bound to `cluster-admin` in `namespace` (its audit log then names it), on the embedded one the admin.
    async fn client_for(&self, namespace: &str, identity: &str) -> anyhow::Result<kube::Client> {
        if self.server == ServerKind::Embedded {
            return upstream_client(&self.cluster.kubeconfig).await;
        }
        let binding = format!("fault-plans-{namespace}-{identity}");
        let token = self
            .cluster
            .cluster_admin_token(&self.admin, namespace, identity, &binding)
            .await?;
        let mut config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(&self.cluster.kubeconfig)?,
            &Default::default(),
        )
        .await?;
        config.auth_info = kube::config::AuthInfo {
            token: Some(token.into()),
            ..Default::default()
        };
        config.default_retry = false;
        Ok(kube::Client::try_from(config)?)
    }
}

/// A client from `kubeconfig` that sends each request once: the front relays the host's requests, and retrying a
/// write on its own would make writes the host never sent.
async fn upstream_client(kubeconfig: &std::path::Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    config.default_retry = false;
    Ok(kube::Client::try_from(config)?)
}

/// One host of a plan: its front, its current process, and how to start it again.
pub struct StagedHost {
    /// The host's identity (`--identity`).
    pub identity: String,
    pub front: Arc<Front>,
    process: Arc<Mutex<Option<HostProcess>>>,
    launch: Arc<Launch>,
}

/// How a staged host's process is started.
struct Launch {
    dir: PathBuf,
    kubeconfig: PathBuf,
    identity: String,
    args: Vec<String>,
}

impl Launch {
    fn start(&self) -> anyhow::Result<HostProcess> {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        HostProcess::start(&self.dir, &self.kubeconfig, &self.identity, &args)
    }
}

impl StagedHost {
    /// Starts (or starts again) the host's process.
    pub fn start(&self) -> anyhow::Result<()> {
        let process = self.launch.start()?;
        *self.process.lock().unwrap_or_else(PoisonError::into_inner) = Some(process);
        Ok(())
    }

    /// Kills the host now (SIGKILL) for good: its front forwards nothing more.
    pub fn kill(&self) {
        self.front.sever();
        if let Some(process) = self.process.lock().unwrap_or_else(PoisonError::into_inner).take() {
            process.kill();
        }
    }

    /// Kills the host right before or right after the first of its writes `at` picks (given the write's identity
    /// and body); with `restart`, starts it again at once.
    pub fn arm_crash(
        &self,
        at: impl Fn(&WriteId, &serde_json::Value) -> bool + Send + 'static,
        when: CrashWhen,
        restart: bool,
    ) {
        let process = self.process.clone();
        self.front.arm_crash(at, when, move || {
            if let Some(process) = process.lock().unwrap_or_else(PoisonError::into_inner).take() {
                process.kill();
            }
        });
        if !restart {
            return;
        }
        let mut crashed = self.front.crashed();
        let front = self.front.clone();
        let process = self.process.clone();
        let launch = self.launch.clone();
        tokio::spawn(async move {
            if crashed.wait_for(|crashed| *crashed).await.is_err() {
                return;
            }
            front.revive();
            match launch.start() {
                Ok(started) => *process.lock().unwrap_or_else(PoisonError::into_inner) = Some(started),
                Err(error) => eprintln!("restarting {}: {error:#}", launch.identity),
            }
        });
    }

    /// Whether the armed crash happened.
    pub fn crashed(&self) -> bool {
        *self.front.crashed().borrow()
    }

    /// The telemetry address of the running process.
    fn telemetry(&self) -> Option<SocketAddr> {
        self.process
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|process| process.telemetry)
    }

    /// Waits until the running process (if any) reconciles: `/readyz` answers `ok`.
    pub async fn wait_ready(&self, timeout: Duration) {
        wait_for(timeout, &format!("{} to be Ready", self.identity), || async {
            let Some(address) = self.telemetry() else {
                return Some(());
            };
            matches!(http_get(address, "/readyz").await, Some((200, body)) if body.trim() == "ok").then_some(())
        })
        .await;
    }

    /// Its log so far (every process's, in order).
    pub fn log_path(&self) -> PathBuf {
        self.launch.dir.join(format!("{}.log", self.identity))
    }
}

impl Drop for StagedHost {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Per object (`<resource> <name>`), how many times it was created and deleted.
pub type Counts = BTreeMap<String, (usize, usize)>;

/// One plan's stage.
pub struct Stage {
    pub scene: Scene,
    pub story: Story,
    pub log: WriteLog,
    pub hosts: Vec<StagedHost>,
    journal: Journal,
}

impl Stage {
    /// A fresh namespace with the story prepared in it, a plugin directory limited to it, and a front for each of
    /// `hosts` (not started yet), each running `run` with `extra_args` besides what the stage sets. With
    /// `accounts` on a real server, each host writes as a ServiceAccount of its own.
    pub async fn new(
        environment: &Environment,
        story: Story,
        hosts: &[&str],
        extra_args: &[String],
        accounts: bool,
    ) -> anyhow::Result<Self> {
        let index = environment.plans.fetch_add(1, Ordering::SeqCst);
        let namespace = format!("fp-{index}");
        let namespaces: Api<Namespace> = Api::all(environment.admin.clone());
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": namespace}}))?,
            )
            .await?;
        let scene = Scene {
            client: environment.admin.clone(),
            namespace: namespace.clone(),
            powerdns: Some(environment.powerdns.clone()),
        };
        story.prepare(&scene).await?;
        let dir = environment.cluster.dir.path().join(&namespace);
        let plugins = dir.join("plugins");
        let plugin = story.plugin(&scene);
        write_plugin(
            &plugins,
            &PluginFiles {
                name: plugin.name,
                wasm: plugin.wasm,
                crd: Some(&plugin.crd),
                config: plugin.config.as_deref(),
                settings: Some(&plugin.settings),
            },
        )?;
        let journal = Journal::start(&environment.admin, &namespace, &story.resources()).await?;
        let log = WriteLog::default();
        let mut staged = Vec::new();
        for host in hosts {
            let identity = format!("{namespace}-{host}");
            let upstream = if accounts {
                environment.client_for(&namespace, &identity).await?
            } else {
                upstream_client(&environment.cluster.kubeconfig).await?
            };
            let front = Arc::new(Front::start(upstream, &identity, log.clone(), &dir).await?);
            let mut args: Vec<String> = [
                "--no-configmaps",
                "--plugins-dir",
                &plugins.display().to_string(),
                "--namespace",
                &namespace,
            ]
            .into_iter()
            .map(str::to_owned)
            .collect();
            args.extend(extra_args.iter().cloned());
            staged.push(StagedHost {
                identity: identity.clone(),
                launch: Arc::new(Launch {
                    dir: dir.clone(),
                    kubeconfig: front.kubeconfig.clone(),
                    identity,
                    args,
                }),
                front,
                process: Arc::default(),
            });
        }
        Ok(Self {
            scene,
            story,
            log,
            hosts: staged,
            journal,
        })
    }

    /// Waits until no host has written for `window`, each running host having become Ready first; fails after
    /// `timeout` with the writes that kept coming.
    pub async fn wait_quiet(&self, window: Duration, timeout: Duration) -> Result<(), String> {
        for host in &self.hosts {
            host.wait_ready(timeout).await;
        }
        let since = Instant::now();
        loop {
            let last = self.log.last_write().map_or(since, |last| last.max(since));
            if last.elapsed() >= window {
                return Ok(());
            }
            if since.elapsed() > timeout {
                let recent: Vec<String> = self
                    .log
                    .writes()
                    .iter()
                    .filter(|w| w.at >= since && !super::request::is_bookkeeping_resource(&w.id.resource))
                    .rev()
                    .take(8)
                    .map(|w| format!("{} ({})", w.id, w.status))
                    .collect();
                return Err(format!(
                    "not quiet: the hosts kept writing for {timeout:?} after the story settled, latest: {recent:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// How many times each of the story's objects was created and deleted so far.
    pub fn counts(&self) -> Counts {
        let entries = self.journal.entries();
        let mut counts = Counts::new();
        for resource in self.story.resources() {
            for (action, added) in [(Action::Added, true), (Action::Deleted, false)] {
                for (name, count) in count_per_name(&entries, &resource.kind, action) {
                    if name == "kube-root-ca.crt" {
                        continue;
                    }
                    let entry = counts.entry(format!("{} {name}", resource.plural)).or_default();
                    if added {
                        entry.0 += count;
                    } else {
                        entry.1 += count;
                    }
                }
            }
        }
        counts
    }

    /// Every oracle violation the fronts saw.
    pub fn violations(&self) -> Vec<String> {
        self.hosts.iter().flat_map(|host| host.front.violations()).collect()
    }

    /// Copies the hosts' logs (every process of each, in order) into `directory`.
    pub fn keep_logs(&self, directory: &std::path::Path) {
        let _ = std::fs::create_dir_all(directory);
        for host in &self.hosts {
            let _ = std::fs::copy(host.log_path(), directory.join(format!("{}.log", host.identity)));
        }
    }

    /// Stops the hosts and deletes the namespace (not waiting for it to go).
    pub async fn tear_down(self) {
        for host in &self.hosts {
            host.kill();
        }
        let namespaces: Api<Namespace> = Api::all(self.scene.client.clone());
        let _ = namespaces.delete(&self.scene.namespace, &DeleteParams::default()).await;
    }
}
