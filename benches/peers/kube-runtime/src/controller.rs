//! The kube-runtime `Controller`: ConfigMapSets and the ConfigMaps they own, the `finalizer()` helper,
//! server-side apply of children, status and events.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::try_join_all;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions, PropagationPolicy};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};

use crate::replicas::{self, REQUEUE_WHILE_CONVERGING, Round};
use crate::resource::{ConfigMapSet, FINALIZER};
use crate::status::{Reconciled, desired_status};

/// Field manager of the children and name of the event reporter.
pub const MANAGER: &str = "configmapset-kube-runtime";

/// How long a failed reconcile waits before it is retried.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(1);

/// Errors of one reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The object has no namespace.
    #[error("the ConfigMapSet has no namespace")]
    NoNamespace,
    /// A child write failed.
    #[error("writing ConfigMap {name}")]
    Child {
        /// The child.
        name: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// The ConfigMap cache stopped before it was filled.
    #[error("the ConfigMap cache stopped before its first list")]
    CacheStopped,
    /// The status write failed.
    #[error("writing the status")]
    Status(#[source] kube::Error),
    /// Children remain: the finalizer stays until a later round has deleted them.
    #[error("{remaining} ConfigMap(s) still to drain")]
    Draining {
        /// Children still observed.
        remaining: i32,
    },
}

type Result<T, E = Error> = std::result::Result<T, E>;

/// What every reconcile shares: the client, the ConfigMap cache and the event recorder.
#[derive(Clone)]
pub struct Context {
    client: Client,
    children: Store<ConfigMap>,
    recorder: Recorder,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").finish_non_exhaustive()
    }
}

/// Runs the controller with `concurrency` reconciles at once until SIGTERM or Ctrl-C.
pub async fn run(client: Client, concurrency: u16) {
    let (children, writer) = reflector::store();
    let child_events = watcher(Api::<ConfigMap>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .touched_objects();
    let context = Arc::new(Context {
        client: client.clone(),
        children,
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: MANAGER.to_owned(),
                instance: std::env::var("POD_NAME").ok(),
            },
        ),
    });
    let controller = Controller::new(Api::<ConfigMapSet>::all(client), watcher::Config::default())
        .owns_stream(child_events)
        .with_config(controller::Config::default().concurrency(concurrency))
        .shutdown_on_signal();
    tracing::info!(concurrency, "starting the configmapset controller");
    controller
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                log_error(&error);
            }
        })
        .await;
}

fn log_error<E: std::error::Error>(error: &E) {
    let mut chain = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    if chain.contains("still to drain") {
        tracing::debug!(error = %chain, "reconcile requeued");
    } else {
        tracing::warn!(error = %chain, "reconcile failed");
    }
}

async fn reconcile(set: Arc<ConfigMapSet>, context: Arc<Context>) -> Result<Action, finalizer::Error<Error>> {
    let namespace = set
        .namespace()
        .ok_or(finalizer::Error::ApplyFailed(Error::NoNamespace))?;
    let sets: Api<ConfigMapSet> = Api::namespaced(context.client.clone(), &namespace);
    // A child cache that has not listed yet would show no children: wait for its first list.
    context
        .children
        .wait_until_ready()
        .await
        .map_err(|_| finalizer::Error::ApplyFailed(Error::CacheStopped))?;
    // kube-runtime enters a "reconciling object" span with the object reference around this call.
    finalizer(&sets, FINALIZER, set, move |event| async move {
        match event {
            finalizer::Event::Apply(set) => context.converge(&set, &namespace).await,
            finalizer::Event::Cleanup(set) => context.drain(&set, &namespace).await,
        }
    })
    .await
}

fn error_policy(_set: Arc<ConfigMapSet>, error: &finalizer::Error<Error>, _context: Arc<Context>) -> Action {
    match error {
        finalizer::Error::CleanupFailed(Error::Draining { .. }) => Action::requeue(REQUEUE_WHILE_CONVERGING),
        _ => Action::requeue(RETRY_AFTER_ERROR),
    }
}

impl Context {
    /// One round of a live set: write missing and drifted children, delete excess ones, report.
    async fn converge(&self, set: &ConfigMapSet, namespace: &str) -> Result<Action> {
        let observed = self.observed_children(set, namespace);
        let observed: Vec<&ConfigMap> = observed.iter().map(AsRef::as_ref).collect();
        let round = replicas::converge(&set.name_any(), &set.spec, &observed);
        self.act(set, namespace, &round).await?;
        Ok(if round.requeue {
            Action::requeue(REQUEUE_WHILE_CONVERGING)
        } else {
            Action::await_change()
        })
    }

    /// One round of a set being deleted; succeeds (and so lets the finalizer go) only once no child is left.
    async fn drain(&self, set: &ConfigMapSet, namespace: &str) -> Result<Action> {
        let observed = self.observed_children(set, namespace);
        let observed: Vec<&ConfigMap> = observed.iter().map(AsRef::as_ref).collect();
        let round = replicas::drain(&set.name_any(), &set.spec, &observed);
        self.act(set, namespace, &round).await?;
        if round.finalized {
            Ok(Action::await_change())
        } else {
            Err(Error::Draining {
                remaining: round.replicas,
            })
        }
    }

    /// ConfigMaps in the set's namespace whose controller is this set, from the cache.
    fn observed_children(&self, set: &ConfigMapSet, namespace: &str) -> Vec<Arc<ConfigMap>> {
        let uid = set.uid();
        self.children.state_filter(|child| {
            child.metadata.namespace.as_deref() == Some(namespace)
                && child
                    .owner_references()
                    .iter()
                    .any(|owner| owner.controller == Some(true) && Some(&owner.uid) == uid.as_ref())
        })
    }

    /// Writes the round: children (applies, then deletions), events, then the status if it changed.
    async fn act(&self, set: &ConfigMapSet, namespace: &str, round: &Round) -> Result<()> {
        let written = self.write_children(set, namespace, round).await;
        let reconciled = match &written {
            Ok(()) => Reconciled::succeeded(),
            Err(error) => Reconciled::apply_failed(format!("{error}: {}", error_source(error))),
        };
        if written.is_ok() {
            let reference = set.object_ref(&());
            for announcement in &round.events {
                let event = Event {
                    type_: EventType::Normal,
                    reason: announcement.reason.to_owned(),
                    note: Some(announcement.note.clone()),
                    action: "Reconcile".to_owned(),
                    secondary: None,
                };
                if let Err(error) = self.recorder.publish(&event, &reference).await {
                    tracing::warn!(error = %error, reason = announcement.reason, "publishing an event failed");
                }
            }
        }
        let now = Time(Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_else(|_| Timestamp::now()));
        let status = desired_status(set.status.as_ref(), round, &reconciled, set.metadata.generation, &now);
        if set.status.as_ref() != Some(&status) {
            let sets: Api<ConfigMapSet> = Api::namespaced(self.client.clone(), namespace);
            sets.patch_status(
                &set.name_any(),
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({ "status": status })),
            )
            .await
            .map_err(Error::Status)?;
        }
        written
    }

    async fn write_children(&self, set: &ConfigMapSet, namespace: &str, round: &Round) -> Result<()> {
        let config_maps: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let owner = set.controller_owner_ref(&());
        let apply = PatchParams::apply(MANAGER).force();
        try_join_all(round.apply.iter().map(|child| {
            let mut child = child.clone();
            child.metadata.namespace = Some(namespace.to_owned());
            child.metadata.owner_references = owner.clone().map(|owner| vec![owner]);
            let (config_maps, apply) = (&config_maps, &apply);
            async move {
                let name = child.name_any();
                config_maps
                    .patch(&name, apply, &Patch::Apply(&child))
                    .await
                    .map_err(|source| Error::Child { name, source })
            }
        }))
        .await?;
        try_join_all(round.delete.iter().map(|(name, uid)| {
            let params = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Background),
                preconditions: Some(Preconditions {
                    uid: uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            let config_maps = &config_maps;
            async move {
                match config_maps.delete(name, &params).await {
                    Ok(_) => Ok(()),
                    // Already gone: the cache had not seen the deletion yet.
                    Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                    Err(source) => Err(Error::Child {
                        name: name.clone(),
                        source,
                    }),
                }
            }
        }))
        .await?;
        Ok(())
    }
}

fn error_source(error: &Error) -> String {
    std::error::Error::source(error).map_or_else(String::new, ToString::to_string)
}
