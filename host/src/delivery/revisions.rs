//! Each plugin's history, kept in the cluster: every version the host accepts becomes a numbered, immutable
//! revision, an `apps/v1` ControllerRevision in the host's namespace (as StatefulSets and DaemonSets keep theirs),
//! so that a rollback needs neither the old ConfigMap nor a rebuild, and survives restarts and leader changes.
//!
//! A revision is named `<plugin>-<hash>`, the hash of what makes a version: the component's sha256, the
//! configuration and the settings. Its `data` holds them all, with the source the version came from and when it was
//! accepted. Revisions are numbered from 1 per plugin; a version that comes back (a ConfigMap reverted to earlier
//! content) keeps its object and is given the next number, as a Deployment's rollback renumbers its ReplicaSet. The
//! newest revisions of a plugin are kept, as many as its settings' `revisionHistoryLimit` (10 by default).
//!
//! The component is kept in the cluster, never by reference alone: a registry may have lost the artifact, a tag
//! moved, and a directory has no history. Compressed, a component of up to [`INLINE_BYTES`] is stored inside its
//! revision; a larger one (a Python plugin is 19 MB, 6.5 MB compressed: docs/benchmarks/polyglot.md) is split over
//! part objects, ControllerRevisions `<revision>-part-<i>` owned by their revision, so the garbage collector removes
//! them with it. Every load is hashed again and must match the revision's sha256: a damaged revision is refused, never
//! served.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::Arc;

use base64::Engine as _;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions};
use serde_json::{Value, json};

use super::package::{PackageError, PluginPackage};
use crate::lease::Fence;

/// The label naming a revision's plugin.
pub const PLUGIN_LABEL: &str = "wasm-reconciler.io/plugin";
/// The label naming the revision a part object belongs to.
pub const PART_OF_LABEL: &str = "wasm-reconciler.io/revision-part-of";
/// The label on every object the host writes.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "wasm-reconciler");
/// Largest compressed component stored inside its revision, and the size of each part of a larger one: about
/// 700 KB once base64-encoded, well under the API server's object limit (1.5 MiB in etcd).
pub const INLINE_BYTES: usize = 512 * 1024;

/// One revision of a plugin, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// Its ControllerRevision's name.
    pub name: String,
    /// Its number, from 1.
    pub number: i64,
    /// sha256 of the component, `sha256:<hex>`.
    pub sha256: String,
    /// Where the version came from when it was accepted.
    pub source: String,
    /// When it was (last) accepted, RFC 3339.
    pub accepted: String,
}

/// Why a revision could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    /// No revision with that number.
    #[error("plugin {plugin} has no revision {number} in namespace {namespace}{}", known_list(.known))]
    NotFound {
        /// The plugin.
        plugin: String,
        /// The number asked for.
        number: i64,
        /// The host's namespace.
        namespace: String,
        /// The numbers there are.
        known: Vec<i64>,
    },
    /// The revision's object is not what the host writes, or its component does not match its digest.
    #[error("revision {name} is damaged: {reason}")]
    Damaged {
        /// The ControllerRevision.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The revision's package does not decode.
    #[error("revision {name} does not decode")]
    Package {
        /// The ControllerRevision.
        name: String,
        /// Why.
        #[source]
        source: PackageError,
    },
    /// This host may not write (its lease or shard term is over).
    #[error(transparent)]
    Fenced(#[from] crate::lease::Fenced),
    /// The API server refused or could not be reached.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

fn known_list(known: &[i64]) -> String {
    if known.is_empty() {
        " (it has none yet)".into()
    } else {
        let numbers: Vec<String> = known.iter().map(i64::to_string).collect();
        format!(" (it has {})", numbers.join(", "))
    }
}

/// The revisions of every plugin in one namespace. Cheap to clone; recording is serialised per store.
#[derive(Clone)]
pub struct RevisionStore {
    api: Api<ControllerRevision>,
    namespace: String,
    fence: Fence,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for RevisionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RevisionStore")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl RevisionStore {
    /// The store in `namespace`; every write is checked against `fence`.
    pub fn new(client: kube::Client, namespace: &str, fence: Fence) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            fence,
            lock: Arc::default(),
        }
    }

    /// The namespace the revisions are kept in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Records `package` (whose component's sha256 is `sha256`, hex) as the newest revision of `plugin`, from
    /// `source`, and returns its number. A version recorded before keeps its object and is renumbered if a later
    /// one came since; the oldest revisions beyond the package's `revisionHistoryLimit` are deleted.
    pub async fn record(
        &self,
        plugin: &str,
        package: &PluginPackage,
        sha256: &str,
        source: &str,
    ) -> Result<i64, RevisionError> {
        let _serialised = self.lock.lock().await;
        let name = revision_name(plugin, &version_hash(sha256, &package.config, &package.settings_text));
        let existing = self.revisions(plugin).await?;
        let newest = existing.iter().map(|(revision, _)| revision.number).max().unwrap_or(0);
        let number = match existing.iter().find(|(revision, _)| revision.name == name) {
            Some((revision, object)) => {
                self.complete_parts(object, &package.wasm, None).await?;
                if revision.number == newest {
                    return Ok(revision.number);
                }
                self.fence.check()?;
                // `data` is immutable; the number is not. The uid and resourceVersion read make it conditional: a
                // revision changed or replaced since is a conflict, never overwritten.
                let patch = json!({
                    "metadata": {"uid": object.metadata.uid, "resourceVersion": object.metadata.resource_version},
                    "revision": newest + 1,
                });
                self.api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                tracing::info!(plugin, revision = newest + 1, name = %name, "a former version is accepted again; its revision renumbered");
                newest + 1
            }
            None => {
                let number = newest + 1;
                self.create(plugin, &name, number, package, sha256, source).await?;
                tracing::info!(plugin, revision = number, name = %name, "new revision recorded");
                number
            }
        };
        self.prune(plugin, &existing, &name, package.settings.revision_history_limit)
            .await?;
        Ok(number)
    }

    /// The revisions of `plugin`, oldest first.
    pub async fn list(&self, plugin: &str) -> Result<Vec<Revision>, RevisionError> {
        let mut revisions: Vec<Revision> = self.revisions(plugin).await?.into_iter().map(|(r, _)| r).collect();
        revisions.sort_by_key(|revision| revision.number);
        Ok(revisions)
    }

    /// Revision `number` of `plugin` as a package ready to install, its component checked against its digest.
    pub async fn load(&self, plugin: &str, number: i64) -> Result<(PluginPackage, Revision), RevisionError> {
        let revisions = self.revisions(plugin).await?;
        let Some((revision, object)) = revisions.iter().find(|(revision, _)| revision.number == number) else {
            let mut known: Vec<i64> = revisions.iter().map(|(revision, _)| revision.number).collect();
            known.sort_unstable();
            return Err(RevisionError::NotFound {
                plugin: plugin.to_owned(),
                number,
                namespace: self.namespace.clone(),
                known,
            });
        };
        let damaged = |reason: String| RevisionError::Damaged {
            name: revision.name.clone(),
            reason,
        };
        let data = data_of(object);
        let compressed = match &data["component"] {
            Value::Object(component) if component.contains_key("gzip") => {
                decode_base64(&component["gzip"]).map_err(|e| damaged(format!("component: {e}")))?
            }
            Value::Object(component) if component.contains_key("parts") => {
                let parts = component["parts"]
                    .as_u64()
                    .ok_or_else(|| damaged("component.parts is not a number".into()))?;
                let mut compressed = Vec::new();
                for index in 0..parts {
                    let part_name = part_name(&revision.name, index);
                    let part = self
                        .api
                        .get_opt(&part_name)
                        .await?
                        .ok_or_else(|| damaged(format!("its part {part_name} is missing")))?;
                    let bytes = decode_base64(&data_of(&part)["gzip"])
                        .map_err(|e| damaged(format!("part {part_name}: {e}")))?;
                    compressed.extend_from_slice(&bytes);
                }
                compressed
            }
            _ => return Err(damaged("it holds no component".into())),
        };
        let config = data["config"].to_string();
        let settings = data["settings"].as_str().unwrap_or_default();
        let package = PluginPackage::decode(
            None,
            Some(&compressed),
            Some(&config),
            Some(settings),
            Some(&revision.sha256),
        )
        .map(|package| PluginPackage {
            origin: Some(revision.source.clone()),
            detached_signature: data["signature"].as_str().map(str::to_owned),
            ..package
        })
        .map_err(|source| match source {
            PackageError::DigestMismatch { pinned, actual } => damaged(format!(
                "its component's sha256 is {actual}, not the {pinned} it records"
            )),
            source => RevisionError::Package {
                name: revision.name.clone(),
                source,
            },
        })?;
        Ok((package, revision.clone()))
    }

    /// The revisions of `plugin` with their objects (part objects excluded).
    async fn revisions(&self, plugin: &str) -> Result<Vec<(Revision, ControllerRevision)>, RevisionError> {
        let params = ListParams::default().labels(&format!("{PLUGIN_LABEL}={plugin}"));
        let list = self.api.list(&params).await?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|object| {
                let data = data_of(&object);
                let revision = Revision {
                    name: object.metadata.name.clone()?,
                    number: object.revision,
                    sha256: data["sha256"].as_str()?.to_owned(),
                    source: data["source"].as_str().unwrap_or_default().to_owned(),
                    accepted: data["accepted"].as_str().unwrap_or_default().to_owned(),
                };
                Some((revision, object))
            })
            .collect())
    }

    async fn create(
        &self,
        plugin: &str,
        name: &str,
        number: i64,
        package: &PluginPackage,
        sha256: &str,
        source: &str,
    ) -> Result<(), RevisionError> {
        let compressed = gzip(&package.wasm);
        let component = if compressed.len() <= INLINE_BYTES {
            json!({"gzip": base64::engine::general_purpose::STANDARD.encode(&compressed)})
        } else {
            json!({"parts": compressed.len().div_ceil(INLINE_BYTES), "gzipBytes": compressed.len()})
        };
        let data = json!({
            "plugin": plugin,
            "sha256": format!("sha256:{sha256}"),
            "source": source,
            "accepted": now(),
            "config": package.config,
            "settings": package.settings_text,
            "signature": package.detached_signature,
            "component": component,
        });
        let object = ControllerRevision {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(self.namespace.clone()),
                labels: Some(BTreeMap::from([
                    (PLUGIN_LABEL.to_owned(), plugin.to_owned()),
                    (MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned()),
                ])),
                ..ObjectMeta::default()
            },
            data: Some(RawExtension(data)),
            revision: number,
        };
        self.fence.check()?;
        let created = match self.api.create(&PostParams::default(), &object).await {
            Ok(created) => created,
            // Another replica recorded the same version a moment ago (sharded hosts all load every plugin).
            Err(kube::Error::Api(status)) if status.code == 409 => self.api.get(name).await?,
            Err(error) => return Err(error.into()),
        };
        self.complete_parts(&created, &package.wasm, Some(compressed)).await
    }

    /// Writes the part objects of a split revision that are missing (a crash between the revision and its parts),
    /// from `compressed`, or from `wasm` compressed again only when a part is missing.
    async fn complete_parts(
        &self,
        revision: &ControllerRevision,
        wasm: &[u8],
        compressed: Option<Vec<u8>>,
    ) -> Result<(), RevisionError> {
        let Some(parts) = data_of(revision)["component"]["parts"].as_u64() else {
            return Ok(());
        };
        let name = revision.metadata.name.clone().unwrap_or_default();
        let mut missing = Vec::new();
        for index in 0..parts {
            if self.api.get_opt(&part_name(&name, index)).await?.is_none() {
                missing.push(index);
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let compressed = compressed.unwrap_or_else(|| gzip(wasm));
        let chunks: Vec<&[u8]> = compressed.chunks(INLINE_BYTES).collect();
        for index in missing {
            let Some(chunk) = usize::try_from(index).ok().and_then(|i| chunks.get(i)) else {
                break;
            };
            let part = ControllerRevision {
                metadata: ObjectMeta {
                    name: Some(part_name(&name, index)),
                    namespace: Some(self.namespace.clone()),
                    labels: Some(BTreeMap::from([
                        (PART_OF_LABEL.to_owned(), name.clone()),
                        (MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned()),
                    ])),
                    owner_references: Some(vec![OwnerReference {
                        api_version: "apps/v1".into(),
                        kind: "ControllerRevision".into(),
                        name: name.clone(),
                        uid: revision.metadata.uid.clone().unwrap_or_default(),
                        ..OwnerReference::default()
                    }]),
                    ..ObjectMeta::default()
                },
                data: Some(RawExtension(json!({
                    "index": index,
                    "gzip": base64::engine::general_purpose::STANDARD.encode(chunk),
                }))),
                revision: revision.revision,
            };
            self.fence.check()?;
            match self.api.create(&PostParams::default(), &part).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }

    /// Deletes the oldest of the `existing` revisions of `plugin` (as listed before `keep`, the newest, was
    /// recorded) so that `limit` remain with `keep`.
    async fn prune(
        &self,
        plugin: &str,
        existing: &[(Revision, ControllerRevision)],
        keep: &str,
        limit: usize,
    ) -> Result<(), RevisionError> {
        let mut others: Vec<&(Revision, ControllerRevision)> =
            existing.iter().filter(|(revision, _)| revision.name != keep).collect();
        others.sort_by_key(|(revision, _)| std::cmp::Reverse(revision.number));
        for (old, object) in others.into_iter().skip(limit.max(1) - 1) {
            self.fence.check()?;
            // Its parts go with it: the garbage collector removes what it owns. Only the revision as listed: one
            // renumbered or replaced since is a conflict, left for the next record.
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: object.metadata.uid.clone(),
                    resource_version: object.metadata.resource_version.clone(),
                }),
                ..DeleteParams::background()
            };
            match self.api.delete(&old.name, &params).await {
                Ok(_) => tracing::info!(plugin, revision = old.number, name = %old.name, "old revision removed"),
                Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }
}

/// Now, to the second (RFC 3339).
fn now() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    k8s_openapi::jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

fn data_of(object: &ControllerRevision) -> &Value {
    static NULL: Value = Value::Null;
    object.data.as_ref().map_or(&NULL, |data| &data.0)
}

fn decode_base64(value: &Value) -> Result<Vec<u8>, String> {
    let text = value.as_str().ok_or("not a string")?;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| e.to_string())
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).expect("writing to memory");
    encoder.finish().expect("writing to memory")
}

/// The hash naming a version: its component, configuration and settings (ten hex digits, as a Deployment's
/// pod-template-hash is short).
fn version_hash(sha256: &str, config: &Value, settings_text: &str) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    hasher.update(sha256.as_bytes());
    hasher.update(b"\n");
    hasher.update(canonical(config).to_string().as_bytes());
    hasher.update(b"\n");
    hasher.update(settings_text.trim().as_bytes());
    hex::encode(hasher.finalize())[..10].to_owned()
}

/// `value` with every object's keys sorted, so that the same configuration hashes alike however it was written.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> = map.iter().map(|(key, value)| (key, canonical(value))).collect();
            Value::Object(sorted.into_iter().map(|(key, value)| (key.clone(), value)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// `<plugin>-<hash>`, the plugin's part cut so that the name and its parts' names stay within 253 characters.
fn revision_name(plugin: &str, hash: &str) -> String {
    let plugin: String = plugin.chars().take(200).collect();
    format!("{}-{hash}", plugin.trim_end_matches(['-', '.']))
}

fn part_name(revision: &str, index: u64) -> String {
    format!("{revision}-part-{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_depends_on_component_configuration_and_settings_not_key_order() {
        let a = version_hash("ab", &json!({"x": 1, "y": {"b": 2, "a": 3}}), "concurrency: 2\n");
        let b = version_hash("ab", &json!({"y": {"a": 3, "b": 2}, "x": 1}), "concurrency: 2");
        assert_eq!(a, b);
        assert_ne!(
            a,
            version_hash("ac", &json!({"x": 1, "y": {"b": 2, "a": 3}}), "concurrency: 2")
        );
        assert_ne!(
            a,
            version_hash("ab", &json!({"x": 2, "y": {"b": 2, "a": 3}}), "concurrency: 2")
        );
        assert_ne!(
            a,
            version_hash("ab", &json!({"x": 1, "y": {"b": 2, "a": 3}}), "concurrency: 3")
        );
        assert_eq!(revision_name("certs", &a).len(), "certs".len() + 11);
        assert!(part_name(&revision_name(&"p".repeat(253), &a), 99).len() <= 253);
    }
}
