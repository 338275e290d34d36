//! The load: the CRD, namespaces, ConfigMapSets created and deleted at a bounded rate, and a watch that counts
//! how many sets exist and how many are Ready. All of it goes straight to the API server, not through the proxy.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ObjectMeta, Patch, PatchParams, PostParams,
};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

/// Errors of the load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The CRD file could not be read or parsed.
    #[error("reading the CRD {path}")]
    Crd {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An API call failed.
    #[error("{what}")]
    Api {
        /// What was attempted.
        what: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Something did not happen in time.
    #[error("{0}")]
    Timeout(String),
}

type Result<T, E = LoadError> = std::result::Result<T, E>;

fn api_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> LoadError {
    let what = what.into();
    move |source| LoadError::Api { what, source }
}

/// `examples.wasm-reconciler.io/v1alpha1` `ConfigMapSet`.
pub fn set_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("examples.wasm-reconciler.io", "v1alpha1", "ConfigMapSet"),
        "configmapsets",
    )
}

/// Applies the CRD and waits until it is Established.
pub async fn install_crd(client: &Client, path: &Path) -> Result<()> {
    let crd_error = |source: Box<dyn std::error::Error + Send + Sync>| LoadError::Crd {
        path: path.display().to_string(),
        source,
    };
    let text = std::fs::read_to_string(path).map_err(|e| crd_error(Box::new(e)))?;
    let crd: CustomResourceDefinition = serde_saphyr::from_str(&text).map_err(|e| crd_error(Box::new(e)))?;
    let name = crd.name_any();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(&name, &PatchParams::apply("peers-bench").force(), &Patch::Apply(&crd))
        .await
        .map_err(api_error(format!("applying CRD {name}")))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let current = crds
            .get(&name)
            .await
            .map_err(api_error(format!("reading CRD {name}")))?;
        let established = current
            .status
            .and_then(|status| status.conditions)
            .unwrap_or_default()
            .iter()
            .any(|condition| condition.type_ == "Established" && condition.status == "True");
        if established {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(LoadError::Timeout(format!("CRD {name} not Established within 60 s")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates a namespace.
pub async fn create_namespace(client: &Client, name: &str) -> Result<()> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .map_err(api_error(format!("creating namespace {name}")))?;
    Ok(())
}

/// Deletes a namespace and waits until it is gone.
pub async fn delete_namespace(client: &Client, name: &str, timeout: Duration) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    match namespaces.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
        Err(source) => return Err(api_error(format!("deleting namespace {name}"))(source)),
    }
    let deadline = Instant::now() + timeout;
    while namespaces
        .get_opt(name)
        .await
        .map_err(api_error(format!("reading namespace {name}")))?
        .is_some()
    {
        if Instant::now() > deadline {
            return Err(LoadError::Timeout(format!(
                "namespace {name} still there after {timeout:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// The name of set `index`.
pub fn set_name(index: usize) -> String {
    format!("set-{index:05}")
}

/// Creates `count` sets of `replicas` replicas, `in_flight` at a time.
pub async fn create_sets(
    client: &Client,
    namespace: &str,
    count: usize,
    replicas: u32,
    in_flight: usize,
) -> Result<()> {
    let sets: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &set_resource());
    stream::iter(0..count)
        .map(|index| {
            let sets = sets.clone();
            async move {
                let name = set_name(index);
                let mut set = DynamicObject::new(&name, &set_resource()).within(namespace);
                set.data = json!({"spec": {"replicas": replicas, "template": {"data": {"k": "v"}}}});
                sets.create(&PostParams::default(), &set)
                    .await
                    .map_err(api_error(format!("creating ConfigMapSet {name}")))
            }
        })
        .buffer_unordered(in_flight.max(1))
        .try_for_each(|_| async { Ok(()) })
        .await
}

/// Deletes the `count` sets, `in_flight` at a time.
pub async fn delete_sets(client: &Client, namespace: &str, count: usize, in_flight: usize) -> Result<()> {
    let sets: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &set_resource());
    stream::iter(0..count)
        .map(|index| {
            let sets = sets.clone();
            async move {
                let name = set_name(index);
                match sets.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                    Err(source) => Err(api_error(format!("deleting ConfigMapSet {name}"))(source)),
                }
            }
        })
        .buffer_unordered(in_flight.max(1))
        .try_for_each(|()| async { Ok(()) })
        .await
}

/// Removes every finalizer from the sets left in `namespace` (cleaning up after a contender that timed out).
pub async fn strip_finalizers(client: &Client, namespace: &str) -> Result<()> {
    let sets: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &set_resource());
    let list = sets
        .list(&Default::default())
        .await
        .map_err(api_error(format!("listing ConfigMapSets in {namespace}")))?;
    for set in list {
        let name = set.name_any();
        let patch = Patch::Merge(json!({"metadata": {"finalizers": null}}));
        match sets.patch(&name, &PatchParams::default(), &patch).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => return Err(api_error(format!("removing finalizers of {name}"))(source)),
        }
    }
    Ok(())
}

/// Creates the ConfigMaps numbered `indexes`, which look like children (the set label, two labels, five data keys)
/// but belong to no set, so that every contender caches them.
pub async fn create_filler_config_maps(
    client: &Client,
    namespace: &str,
    indexes: std::ops::Range<usize>,
    in_flight: usize,
) -> Result<()> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    stream::iter(indexes)
        .map(|index| {
            let config_maps = config_maps.clone();
            async move {
                let name = format!("filler-{index:05}");
                let config_map = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        labels: Some(BTreeMap::from([
                            ("app".to_owned(), "filler".to_owned()),
                            (
                                "examples.wasm-reconciler.io/configmapset".to_owned(),
                                format!("filler-{}", index / 3),
                            ),
                        ])),
                        ..ObjectMeta::default()
                    },
                    data: Some(
                        (0..5)
                            .map(|key| (format!("key-{key}"), format!("value {key} of configuration {index:05}")))
                            .collect(),
                    ),
                    ..ConfigMap::default()
                };
                config_maps
                    .create(&PostParams::default(), &config_map)
                    .await
                    .map_err(api_error(format!("creating ConfigMap {name}")))
            }
        })
        .buffer_unordered(in_flight.max(1))
        .try_for_each(|_| async { Ok(()) })
        .await
}

/// How many sets exist and how many are Ready, from a watch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Sets that exist.
    pub present: usize,
    /// Sets that are Ready: `Ready=True`, `readyReplicas == replicas` and `observedGeneration == generation`.
    pub ready: usize,
}

/// A watch on the sets of one namespace; stops when dropped.
#[derive(Debug)]
pub struct SetTracker {
    tally: watch::Receiver<Tally>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SetTracker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SetTracker {
    /// Starts watching the sets of `namespace` and waits for the watch's first list.
    pub async fn start(client: &Client, namespace: &str) -> Result<Self> {
        let sets: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &set_resource());
        let (sender, mut tally) = watch::channel(Tally::default());
        let (listed_tx, listed_rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut listed = Some(listed_tx);
            let mut ready: HashMap<String, bool> = HashMap::new();
            let mut initial: HashMap<String, bool> = HashMap::new();
            let mut events = std::pin::pin!(watcher(sets, watcher::Config::default()));
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::Apply(set)) => {
                        ready.insert(set.name_any(), is_ready(&set));
                    }
                    Ok(watcher::Event::Delete(set)) => {
                        ready.remove(&set.name_any());
                    }
                    Ok(watcher::Event::Init) => initial.clear(),
                    Ok(watcher::Event::InitApply(set)) => {
                        initial.insert(set.name_any(), is_ready(&set));
                    }
                    Ok(watcher::Event::InitDone) => {
                        ready = std::mem::take(&mut initial);
                        if let Some(listed) = listed.take() {
                            let _ = listed.send(());
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "watching ConfigMapSets; the watcher retries");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                }
                sender.send_replace(Tally {
                    present: ready.len(),
                    ready: ready.values().filter(|ready| **ready).count(),
                });
            }
        });
        tokio::time::timeout(Duration::from_secs(30), listed_rx)
            .await
            .map_err(|_| LoadError::Timeout("the watch of ConfigMapSets did not list within 30 s".to_owned()))?
            .map_err(|_| LoadError::Timeout("the watch of ConfigMapSets stopped".to_owned()))?;
        tally.mark_changed();
        Ok(Self { tally, task })
    }

    /// The latest tally.
    pub fn tally(&self) -> Tally {
        *self.tally.borrow()
    }

    /// Waits until `done` holds for the tally, or `timeout` passes; returns the tally when it held.
    pub async fn wait_for(&mut self, timeout: Duration, done: impl Fn(&Tally) -> bool) -> Option<Tally> {
        tokio::time::timeout(timeout, self.tally.wait_for(|tally| done(tally)))
            .await
            .ok()
            .and_then(Result::ok)
            .map(|tally| *tally)
    }
}

/// `Ready=True`, `readyReplicas == spec.replicas` and `observedGeneration == metadata.generation`.
pub fn is_ready(set: &DynamicObject) -> bool {
    let status = &set.data["status"];
    let condition_ready = status["conditions"].as_array().is_some_and(|conditions| {
        conditions
            .iter()
            .any(|condition| condition["type"] == "Ready" && condition["status"] == "True")
    });
    let replicas_ready = status["readyReplicas"].as_i64().is_some()
        && status["readyReplicas"].as_i64() == set.data["spec"]["replicas"].as_i64();
    let generation_seen =
        set.metadata.generation.is_some() && status["observedGeneration"].as_i64() == set.metadata.generation;
    condition_ready && replicas_ready && generation_seen
}

/// A kubeconfig pointing at `server` without credentials (the proxy adds the upstream's).
pub fn proxy_kubeconfig(server: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "proxy", "cluster": {"server": server}}],
        "users": [{"name": "proxy", "user": {}}],
        "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy", "namespace": "default"}}],
        "current-context": "proxy",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(status: Value, generation: i64) -> DynamicObject {
        let mut set = DynamicObject::new("s", &set_resource());
        set.metadata.generation = Some(generation);
        set.data = json!({"spec": {"replicas": 3}, "status": status});
        set
    }

    #[test]
    fn a_set_is_ready_only_with_all_three_signs() {
        let ready =
            json!({"readyReplicas": 3, "observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True"}]});
        assert!(is_ready(&set(ready.clone(), 1)));
        assert!(!is_ready(&set(ready, 2)), "an older generation is not Ready");
        let short =
            json!({"readyReplicas": 2, "observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True"}]});
        assert!(!is_ready(&set(short, 1)));
        let not_ready =
            json!({"readyReplicas": 3, "observedGeneration": 1, "conditions": [{"type": "Ready", "status": "False"}]});
        assert!(!is_ready(&set(not_ready, 1)));
    }
}
