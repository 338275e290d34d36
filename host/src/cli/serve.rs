//! Running the host: the plugin manager with its sources, telemetry endpoints, leader election and graceful
//! shutdown — shared by `run` (a cluster) and `dev` (the embedded API server).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::Api;
use tokio::sync::watch;

use crate::controller::Manager;
use crate::delivery::configmap::ConfigMapSource;
use crate::delivery::directory::DirectorySource;
use crate::delivery::referenced::ReferenceContext;
use crate::delivery::registry::{RegistryClient, RegistryError, RegistryOptions};
use crate::delivery::signature::{SignatureError, SignaturePolicy};
use crate::plugin::PluginEngine;
use crate::runtime::Caches;
use crate::shard::sharder::{self, ShardedKinds};
use crate::shard::{ShardLabels, Sharding, membership};
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
    /// Leader election failed to start.
    #[error("starting leader election")]
    Lease(#[source] kube_lease_manager::LeaseManagerError),
    /// The registry client could not be set up (CA bundle).
    #[error("setting up the registry client")]
    Registry(#[source] RegistryError),
    /// A trusted key could not be read.
    #[error("reading the trusted signing keys")]
    TrustedKeys(#[source] SignatureError),
}

/// Serves plugins until `shutdown` resolves; with leader election, only while leading.
pub async fn serve(
    client: Client,
    options: HostOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
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
            while_holding(
                &client,
                election,
                &options.identity,
                "leader",
                stop_rx.clone(),
                on_change,
                |term| serving.lead(term, None),
            )
            .await?;
        }
        (None, Some(sharding)) => serving.serve_sharded(sharding, stop_rx.clone()).await?,
        (None, None) => {
            health.set_leader(true);
            metrics.set_leader(true);
            serving.lead(stop_rx.clone(), None).await;
        }
    }
    health.set_live(false);
    if let Some(telemetry) = telemetry {
        let _ = telemetry.await;
    }
    Ok(())
}

/// How often a standby checks whether the Lease was released.
const LEASE_RETRY: Duration = Duration::from_secs(2);

type LeaseTask =
    tokio::task::JoinHandle<Result<kube_lease_manager::LeaseManager, kube_lease_manager::LeaseManagerError>>;

/// Starts competing for the Lease: the receiver turns true while this host holds it.
async fn start_lease(
    client: &Client,
    election: &LeaderElection,
    identity: &str,
) -> Result<(watch::Receiver<bool>, LeaseTask), ServeError> {
    let manager = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), &election.lease_name)
        .with_namespace(&election.namespace)
        .with_identity(identity)
        .with_duration(election.lease_duration.as_secs())
        .with_grace(
            election
                .lease_duration
                .saturating_sub(election.renew_every)
                .as_secs()
                .max(1),
        )
        .build()
        .await
        .map_err(ServeError::Lease)?;
    Ok(manager.watch().await)
}

/// Whether the Lease has no holder (released, or not created yet). Errors count as held: try again later.
async fn lease_is_free(leases: &Api<Lease>, name: &str) -> bool {
    match leases.get_opt(name).await {
        Ok(None) => true,
        Ok(Some(lease)) => lease
            .spec
            .and_then(|spec| spec.holder_identity)
            .is_none_or(|holder| holder.is_empty()),
        Err(error) => {
            tracing::debug!(error = %crate::error_chain(&error), "could not read the Lease");
            false
        }
    }
}

/// Everything a term of serving needs.
struct Serving {
    client: Client,
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
    async fn serve_sharded(&self, sharding: &Sharding, stop: watch::Receiver<bool>) -> Result<(), ServeError> {
        let identity = &self.options.identity;
        let labels = ShardLabels::new(&sharding.ring, identity);
        self.health.set_leader_election(true);
        self.health.set_sharding(true);
        self.metrics.set_shard_role("member", false);
        self.metrics.set_shard_role("sharder", false);
        let (leave_tx, leave_rx) = watch::channel(false);
        let (mut member, member_task) = membership::spawn(self.client.clone(), sharding, identity, leave_rx);
        let (kinds_tx, kinds_rx) = watch::channel(Vec::new());
        tracing::info!(ring = %sharding.ring, identity = %identity, selector = %labels.selector(), "sharded mode");

        let sharder_election = LeaderElection {
            namespace: sharding.namespace.clone(),
            lease_name: sharding.sharder_lease(),
            lease_duration: sharding.lease_duration,
            renew_every: sharding.renew_every,
        };
        let sharder_role = async {
            let on_change = |held: bool| self.metrics.set_shard_role("sharder", held);
            while_holding(
                &self.client,
                &sharder_election,
                identity,
                "sharder",
                stop.clone(),
                on_change,
                |term| {
                    sharder::run(
                        self.client.clone(),
                        sharding.clone(),
                        kinds_rx.clone(),
                        Some(self.metrics.clone()),
                        term,
                    )
                },
            )
            .await
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
                self.lead(term_rx, Some((&labels, &kinds_tx))).await;
                ender.abort();
                self.metrics.set_shard_role("member", false);
                self.health.set_leader(false);
            }
        };
        let (sharder_result, ()) = tokio::join!(sharder_role, membership);
        let _ = leave_tx.send(true);
        let _ = member_task.await;
        sharder_result
    }

    /// One term of serving: runs the manager and the plugin sources until `stop` turns true. In sharded mode the
    /// controllers reconcile this replica's share, and the kinds they declare are published to the sharder.
    async fn lead(
        &self,
        stop: watch::Receiver<bool>,
        shard: Option<(&ShardLabels, &watch::Sender<Vec<ShardedKinds>>)>,
    ) {
        let Self {
            client,
            options,
            engine,
            references,
            metrics,
            health,
        } = self;
        let caches = Caches::new(client.clone());
        let mut manager = Manager::new(
            engine.clone(),
            caches.clone(),
            Some(metrics.clone()),
            Some(options.identity.clone()),
        );
        if let Some((labels, _)) = shard {
            manager = manager.with_shard(labels.clone());
        }
        let kinds = shard.map(|(_, kinds)| kinds.clone());
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
/// turns true; the receiver `term` gets turns true when the Lease is lost or the host stops. `on_change` hears
/// whether the Lease is held. On the way out the Lease is released so that a successor takes over at once.
async fn while_holding<Term: std::future::Future<Output = ()>>(
    client: &Client,
    election: &LeaderElection,
    identity: &str,
    role: &'static str,
    stop: watch::Receiver<bool>,
    on_change: impl Fn(bool),
    mut term: impl FnMut(watch::Receiver<bool>) -> Term,
) -> Result<(), ServeError> {
    let (mut leading, mut lease_task) = start_lease(client, election, identity).await?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &election.namespace);
    let mut stop = stop;
    tracing::info!(lease = %format!("{}/{}", election.namespace, election.lease_name), identity = %identity, role, "waiting for the Lease");
    loop {
        if *stop.borrow() {
            break;
        }
        if *leading.borrow_and_update() {
            tracing::info!(identity = %identity, role, "holding the Lease; started");
            on_change(true);
            let (term_rx, ender) = term_until_lost(leading.clone(), stop.clone());
            term(term_rx).await;
            ender.abort();
            on_change(false);
            if !*stop.borrow() {
                tracing::warn!(identity = %identity, role, "lost the Lease; stopped");
            }
            continue;
        }
        tokio::select! {
            changed = leading.changed() => if changed.is_err() { break },
            _ = stop.changed() => {}
            () = tokio::time::sleep(LEASE_RETRY) => {
                // The lease manager sleeps until the holder's term would end; a holder that released
                // the Lease on shutdown is replaced now rather than then.
                if lease_is_free(&leases, &election.lease_name).await {
                    tracing::info!(identity = %identity, role, "the Lease was released; taking it over");
                    match start_lease(client, election, identity).await {
                        Ok((fresh, task)) => {
                            // A standby's lease task holds nothing: ending it releases nothing.
                            lease_task.abort();
                            let _ = lease_task.await;
                            (leading, lease_task) = (fresh, task);
                        }
                        Err(error) => {
                            tracing::warn!(error = %crate::error_chain(&error), role, "could not compete for the released Lease; retrying");
                        }
                    }
                }
            }
        }
    }
    // Dropping the receiver makes the lease task release the lease so a successor takes over at once.
    drop(leading);
    match tokio::time::timeout(Duration::from_secs(5), lease_task).await {
        Ok(Ok(Ok(_))) => tracing::info!(role, "lease released"),
        Ok(Ok(Err(error))) => tracing::warn!(role, error = %error, "could not release the lease"),
        _ => tracing::warn!(role, "lease task did not finish"),
    }
    Ok(())
}
