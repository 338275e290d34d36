//! Running the host: the plugin manager with its sources, telemetry endpoints, leader election and graceful
//! shutdown — shared by `run` (a cluster) and `dev` (the embedded API server).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::api::Api;
use tokio::sync::watch;

use crate::controller::{Impersonation, Manager};
use crate::delivery::configmap::ConfigMapSource;
use crate::delivery::directory::DirectorySource;
use crate::delivery::referenced::ReferenceContext;
use crate::delivery::registry::{RegistryClient, RegistryError, RegistryOptions};
use crate::delivery::revisions::RevisionStore;
use crate::delivery::signature::{SignatureError, SignaturePolicy};
use crate::lease::{Election, Fence, election};
use crate::plugin::PluginEngine;
use crate::runtime::Caches;
use crate::shard::sharder::{self, ShardedKinds};
use crate::shard::{ShardLabels, Sharding, membership};
use crate::telemetry::plugin_status::StatusWriter;
use crate::telemetry::{Health, Metrics, MetricsServer};

/// Where plugins come from and how the host runs.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// Directory of plugins, watched for changes.
    pub plugins_dir: Option<PathBuf>,
    /// Install each directory plugin's `crd.yaml` (dev).
    pub install_crds: bool,
    /// Namespace whose labelled ConfigMaps are plugins; `None` disables the ConfigMap source.
    pub configmap_namespace: Option<String>,
    /// Compiled-artifact cache directory.
    pub artifact_cache: Option<PathBuf>,
    /// Serve `/metrics`, `/healthz`, `/readyz` here.
    pub metrics_addr: Option<SocketAddr>,
    /// Leader election, when enabled.
    pub leader_election: Option<LeaderElection>,
    /// Sharded mode, when enabled (and leader election is not).
    pub sharding: Option<Sharding>,
    /// This host's name in events and the lease.
    pub identity: String,
    /// How plugin references reach registries (insecure hosts, extra CA).
    pub registry: RegistryOptions,
    /// PEM public keys; when any are given, every plugin must be signed by one of them.
    pub trusted_keys: Vec<PathBuf>,
}

/// Leader election on a Lease.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub lease_name: String,
    /// How long a lease is valid without renewal.
    pub lease_duration: Duration,
    /// How often the holder renews it.
    pub renew_every: Duration,
}

/// Errors of the host's serving loop.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The Kubernetes client could not be made from its configuration.
    #[error("making the Kubernetes client")]
    Client(#[source] kube::Error),
    /// The engine could not start.
    #[error(transparent)]
    Engine(#[from] crate::plugin::EngineError),
    /// The telemetry endpoint could not bind.
    #[error("binding the metrics endpoint {addr}")]
    Metrics {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The registry client could not be set up (CA bundle).
    #[error("setting up the registry client")]
    Registry(#[source] RegistryError),
    /// A trusted key could not be read.
    #[error("reading the trusted signing keys")]
    TrustedKeys(#[source] SignatureError),
}

/// Serves plugins until `shutdown` resolves; with leader election, only while leading. The host's client is made
/// from `config` (see [`host_client`](crate::client::host_client)); a plugin whose settings name a `serviceAccount` gets a
/// client from the same configuration that impersonates that account.
pub async fn serve(
    config: kube::Config,
    options: HostOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let client = crate::client::host_client(config.clone()).map_err(ServeError::Client)?;
    if options.install_crds {
        // `dev`: the WasmPlugin CRD too, so that `kubectl get wasmplugins` works there.
        match crate::delivery::directory::install_crd_documents(
            &client,
            crate::telemetry::plugin_status::CRD,
            "the WasmPlugin CRD",
        )
        .await
        {
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(error = %error, "could not install the WasmPlugin CRD; plugin state is not shown in kubectl")
            }
        }
    }
    let metrics = Metrics::new();
    let health = Health::new();
    health.set_live(true);
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let telemetry = match options.metrics_addr {
        Some(addr) => {
            let server = MetricsServer::bind(addr, metrics.clone(), health.clone())
                .await
                .map_err(|source| ServeError::Metrics { addr, source })?;
            let bound = server
                .local_addr()
                .map_err(|source| ServeError::Metrics { addr, source })?;
            tracing::info!(addr = %bound, "serving /metrics, /healthz and /readyz");
            let mut stop = stop_rx.clone();
            Some(tokio::spawn(server.run(async move {
                let _ = stop.wait_for(|stop| *stop).await;
            })))
        }
        None => None,
    };
    let engine = PluginEngine::new(options.artifact_cache.clone())?;
    let policy = SignaturePolicy::load(&options.trusted_keys).map_err(ServeError::TrustedKeys)?;
    if policy.is_required() {
        tracing::info!(keys = %policy.describe(), "plugins must be signed by one of these keys");
    }
    let references = ReferenceContext {
        registry: Arc::new(
            RegistryClient::new(options.registry.clone(), options.artifact_cache.clone())
                .map_err(ServeError::Registry)?,
        ),
        policy: Arc::new(policy),
        secrets: None,
    };

    let serving = Serving {
        client: client.clone(),
        config,
        options: options.clone(),
        engine,
        references,
        metrics: metrics.clone(),
        health: health.clone(),
    };
    match (&options.leader_election, &options.sharding) {
        (Some(election), _) => {
            health.set_leader_election(true);
            let on_change = |held: bool| {
                metrics.set_leader(held);
                health.set_leader(held);
            };
            let fence = Fence::new("leader", election.lease_duration);
            while_holding(
                &client,
                election,
                &options.identity,
                "leader",
                &fence,
                stop_rx.clone(),
                on_change,
                |term| serving.lead(term, None, fence.clone()),
            )
            .await;
        }
        (None, Some(sharding)) => serving.serve_sharded(sharding, stop_rx.clone()).await,
        (None, None) => {
            health.set_leader(true);
            metrics.set_leader(true);
            serving.lead(stop_rx.clone(), None, Fence::always_open()).await;
        }
    }
    health.set_live(false);
    if let Some(telemetry) = telemetry {
        let _ = telemetry.await;
    }
    Ok(())
}

/// Everything a term of serving needs.
struct Serving {
    client: Client,
    /// What `client` was made from: plugins acting as a ServiceAccount get clients made from it.
    config: kube::Config,
    options: HostOptions,
    engine: PluginEngine,
    references: ReferenceContext,
    metrics: Metrics,
    health: Health,
}

impl Serving {
    /// Sharded mode: holds this replica's membership Lease and reconciles its share while it is a member; competes
    /// for the sharder role meanwhile. On the way out the controllers stop first, then the membership Lease is
    /// released, so the sharder moves this replica's objects only once nothing here works on them.
    async fn serve_sharded(&self, sharding: &Sharding, stop: watch::Receiver<bool>) {
        let identity = &self.options.identity;
        let labels = ShardLabels::new(&sharding.ring, identity);
        self.health.set_leader_election(true);
        self.health.set_sharding(true);
        self.metrics.set_shard_role("member", false);
        self.metrics.set_shard_role("sharder", false);
        let (leave_tx, leave_rx) = watch::channel(false);
        let member_fence = Fence::new("member", sharding.lease_duration);
        let (mut member, member_task) =
            membership::spawn(self.client.clone(), sharding, identity, member_fence.clone(), leave_rx);
        let (kinds_tx, kinds_rx) = watch::channel(Vec::new());
        tracing::info!(ring = %sharding.ring, identity = %identity, selector = %labels.selector(), "sharded mode");

        let sharder_election = LeaderElection {
            namespace: sharding.namespace.clone(),
            lease_name: sharding.sharder_lease(),
            lease_duration: sharding.lease_duration,
            renew_every: sharding.renew_every,
        };
        let sharder_fence = Fence::new("sharder", sharding.lease_duration);
        let sharder_role = async {
            let on_change = |held: bool| self.metrics.set_shard_role("sharder", held);
            while_holding(
                &self.client,
                &sharder_election,
                identity,
                "sharder",
                &sharder_fence,
                stop.clone(),
                on_change,
                |term| {
                    sharder::run(
                        self.client.clone(),
                        sharding.clone(),
                        kinds_rx.clone(),
                        Some(self.metrics.clone()),
                        sharder_fence.clone(),
                        term,
                    )
                },
            )
            .await;
        };
        let mut stop_serving = stop.clone();
        let membership = async {
            let stop = &mut stop_serving;
            loop {
                tokio::select! {
                    () = sharder::turned_true(&mut member) => {}
                    () = sharder::turned_true(stop) => break,
                }
                if *stop.borrow() {
                    break;
                }
                self.metrics.set_shard_role("member", true);
                self.health.set_leader(true);
                let (term_rx, ender) = term_until_lost(member.clone(), stop.clone());
                self.lead(term_rx, Some((&labels, &kinds_tx)), member_fence.clone())
                    .await;
                ender.abort();
                self.metrics.set_shard_role("member", false);
                self.health.set_leader(false);
            }
        };
        tokio::join!(sharder_role, membership);
        let _ = leave_tx.send(true);
        let _ = member_task.await;
    }

    /// One term of serving: runs the manager and the plugin sources until `stop` turns true; every write of the
    /// term is checked against `fence`. In sharded mode the controllers reconcile this replica's share, and the
    /// kinds they declare are published to the sharder.
    async fn lead(
        &self,
        stop: watch::Receiver<bool>,
        shard: Option<(&ShardLabels, &watch::Sender<Vec<ShardedKinds>>)>,
        fence: Fence,
    ) {
        let Self {
            client,
            config,
            options,
            engine,
            references,
            metrics,
            health,
        } = self;
        let caches = Caches::new(client.clone());
        let namespace = options
            .configmap_namespace
            .clone()
            .or_else(|| options.leader_election.as_ref().map(|le| le.namespace.clone()))
            .or_else(|| options.sharding.as_ref().map(|sharding| sharding.namespace.clone()));
        let mut manager = Manager::new(
            engine.clone(),
            caches.clone(),
            Some(metrics.clone()),
            Some(options.identity.clone()),
        )
        .with_fence(fence.clone())
        .with_impersonation(Impersonation::new(config.clone(), client.clone()))
        .with_namespace(namespace.clone())
        // Each plugin's revisions, and the WasmPlugins that pin one, in the host's namespace (`default` for `dev`).
        .with_revisions(RevisionStore::new(
            client.clone(),
            namespace.as_deref().unwrap_or("default"),
            fence.clone(),
        ))
        .with_signature_policy(references.policy.clone());
        if let Some((labels, _)) = shard {
            manager = manager.with_shard(labels.clone());
        }
        let kinds = shard.map(|(_, kinds)| kinds.clone());
        // Each plugin's state for `kubectl get wasmplugins`, in the host's namespace (`default` for `dev`).
        let mut statuses = StatusWriter::new(
            client.clone(),
            namespace.as_deref().unwrap_or("default"),
            &options.identity,
            manager.clone(),
            Some(metrics.clone()),
            fence,
        );
        if shard.is_some() {
            statuses = statuses.sharded();
        }
        let statuses = tokio::spawn(statuses.run(stop.clone()));
        let pins = tokio::spawn({
            let (client, manager, stop) = (client.clone(), manager.clone(), stop.clone());
            let namespace = namespace.clone().unwrap_or_else(|| "default".to_owned());
            async move { crate::controller::pins::watch_pins(client, &namespace, manager, stop).await }
        });
        let until_stopped = |mut stop: watch::Receiver<bool>| async move {
            let _ = stop.wait_for(|stop| *stop).await;
        };
        let mut sources = Vec::new();
        if let Some(dir) = &options.plugins_dir {
            let crds = options.install_crds.then(|| client.clone());
            let source = DirectorySource::new(dir.clone(), crds).with_policy(references.policy.as_ref().clone());
            tracing::info!(dir = %dir.display(), "watching the plugin directory");
            sources.push(tokio::spawn(source.run(manager.clone(), until_stopped(stop.clone()))));
        }
        if let Some(namespace) = &options.configmap_namespace {
            let context = ReferenceContext {
                secrets: Some(Api::namespaced(client.clone(), namespace)),
                ..references.clone()
            };
            let source = ConfigMapSource::new(client.clone(), namespace, Some(options.identity.clone()), context);
            sources.push(tokio::spawn(source.run(manager.clone(), until_stopped(stop.clone()))));
        }
        let readiness = tokio::spawn({
            let manager = manager.clone();
            let health = health.clone();
            let metrics = metrics.clone();
            let caches = caches.clone();
            let mut stop = stop.clone();
            async move {
                let mut ticker = tokio::time::interval(Duration::from_millis(500));
                loop {
                    tokio::select! {
                        _ = ticker.tick() => {}
                        _ = stop.wait_for(|stop| *stop) => return,
                    }
                    health.set_synced(manager.all_running().await);
                    if let Some(kinds) = &kinds {
                        let wanted = manager.sharded_kinds().await;
                        kinds.send_if_modified(|current| {
                            let changed = *current != wanted;
                            if changed {
                                current.clone_from(&wanted);
                            }
                            changed
                        });
                    }
                    let mut per_kind: std::collections::BTreeMap<String, usize> = Default::default();
                    for cache in caches.alive() {
                        *per_kind.entry(cache.gvk().to_string()).or_default() += cache.len();
                    }
                    for (kind, objects) in per_kind {
                        metrics.set_cached_objects(&kind, objects);
                    }
                }
            }
        });
        let mut stop_wait = stop.clone();
        let _ = stop_wait.wait_for(|stop| *stop).await;
        for source in sources {
            let _ = source.await;
        }
        readiness.abort();
        let _ = pins.await;
        let _ = statuses.await;
        manager.shut_down().await;
        health.set_synced(false);
    }
}

/// A term's stop signal: turns true once `held` turns false (the Lease is lost) or `stop` turns true. Abort the
/// task when the term is over.
fn term_until_lost(
    mut held: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
) -> (watch::Receiver<bool>, tokio::task::JoinHandle<()>) {
    let (term_tx, term_rx) = watch::channel(false);
    let ender = tokio::spawn(async move {
        tokio::select! {
            _ = held.wait_for(|held| !*held) => {}
            _ = stop.wait_for(|stop| *stop) => {}
        }
        let _ = term_tx.send(true);
    });
    (term_rx, ender)
}

/// Runs `term` each time this host holds the Lease of `election` (in role `role`, for the logs), until `stop`
/// turns true; the receiver `term` gets turns true when the Lease is lost or the host stops. `fence` opens and closes
/// with the Lease; `on_change` hears whether it is held. On the way out, once the last term has finished, the Lease
/// is released so that a successor takes over at once.
#[allow(clippy::too_many_arguments)]
async fn while_holding<Term: std::future::Future<Output = ()>>(
    client: &Client,
    election: &LeaderElection,
    identity: &str,
    role: &'static str,
    fence: &Fence,
    stop: watch::Receiver<bool>,
    on_change: impl Fn(bool),
    mut term: impl FnMut(watch::Receiver<bool>) -> Term,
) {
    let (leave_tx, leave_rx) = watch::channel(false);
    let (mut held, task) = election::spawn(
        client.clone(),
        Election {
            namespace: election.namespace.clone(),
            lease_name: election.lease_name.clone(),
            identity: identity.to_owned(),
            lease_duration: election.lease_duration,
            renew_every: election.renew_every,
        },
        fence.clone(),
        leave_rx,
    );
    let mut stop = stop;
    tracing::info!(lease = %format!("{}/{}", election.namespace, election.lease_name), identity = %identity, role, "waiting for the Lease");
    loop {
        if *stop.borrow() {
            break;
        }
        if *held.borrow_and_update() {
            tracing::info!(identity = %identity, role, "holding the Lease; started");
            on_change(true);
            let (term_rx, ender) = term_until_lost(held.clone(), stop.clone());
            term(term_rx).await;
            ender.abort();
            on_change(false);
            if !*stop.borrow() {
                tracing::warn!(identity = %identity, role, "lost the Lease; stopped");
            }
            continue;
        }
        tokio::select! {
            changed = held.changed() => if changed.is_err() { break },
            _ = stop.changed() => {}
        }
    }
    let _ = leave_tx.send(true);
    if task.await.is_err() {
        tracing::warn!(role, "the Lease task failed");
    }
}
