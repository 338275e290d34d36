//! Horizontal sharding: every replica active on its own share of the primaries.
//!
//! - **Membership**: each replica holds a Lease of its own, `<ring>-shard-<identity>`, labelled
//!   `sharding.wasm-reconciler.io/ring=<ring>`, and renews it ([`membership`]). A replica whose renewals fail
//!   stops reconciling before its Lease can expire, so that no other replica is handed its objects while it still
//!   works on them.
//! - **Assignment**: one replica at a time, holder of the Lease `<ring>-sharder`, runs the [`sharder`]. It watches
//!   the metadata of every plugin's primary and owned kinds, places each primary on a consistent-hash [`ring`] of
//!   the live replicas, and writes the result as the label `shard.wasm-reconciler.io/<ring>=<identity>`. Children
//!   (objects whose controller is a primary) get their owner's label.
//! - **Share**: each replica's caches of a plugin's primary and owned kinds watch with the selector
//!   `shard.wasm-reconciler.io/<ring>=<identity>`, so it holds and reconciles only its share; the host labels the
//!   children it applies with their owner's shard.
//! - **Moves**: a primary leaves a live replica only through the drain handshake. The sharder sets
//!   `drain.wasm-reconciler.io/<ring>`; the owning replica, in the primary's own workqueue slot (so after any
//!   reconcile of it in flight), removes both labels; only then does the sharder label the children and the
//!   primary for the new replica. The primaries of a replica whose Lease expired move at once.

pub mod membership;
pub mod ring;
pub mod sharder;

use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

use crate::runtime::CachedObject;

/// Label key prefix of the shard assignment; the ring name completes the key.
pub const SHARD_LABEL_PREFIX: &str = "shard.wasm-reconciler.io/";
/// Label key prefix of the drain request.
pub const DRAIN_LABEL_PREFIX: &str = "drain.wasm-reconciler.io/";
/// Label on membership Leases naming their ring.
pub const RING_LABEL: &str = "sharding.wasm-reconciler.io/ring";

/// Sharded mode of a host.
#[derive(Debug, Clone)]
pub struct Sharding {
    /// Namespace of the membership and sharder Leases.
    pub namespace: String,
    /// Name of the ring: replicas of one deployment share it; it names the Leases and the labels.
    pub ring: String,
    /// How long a Lease is valid without renewal: a crashed replica's objects move after about this long.
    pub lease_duration: Duration,
    /// How often Leases are renewed.
    pub renew_every: Duration,
}

impl Sharding {
    /// The membership Lease of replica `identity`.
    pub fn member_lease(&self, identity: &str) -> String {
        format!("{}-shard-{identity}", self.ring)
    }

    /// The Lease of the sharder role.
    pub fn sharder_lease(&self) -> String {
        format!("{}-sharder", self.ring)
    }
}

/// The labels of a ring, and which replica this is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardLabels {
    /// `shard.wasm-reconciler.io/<ring>`: the replica an object is assigned to.
    pub shard_key: String,
    /// `drain.wasm-reconciler.io/<ring>`: the sharder asks the assigned replica to let the object go.
    pub drain_key: String,
    /// This replica's identity: the value of the shard label on its share.
    pub identity: String,
}

impl ShardLabels {
    /// The labels of `ring` for replica `identity`.
    pub fn new(ring: &str, identity: &str) -> Self {
        Self {
            shard_key: format!("{SHARD_LABEL_PREFIX}{ring}"),
            drain_key: format!("{DRAIN_LABEL_PREFIX}{ring}"),
            identity: identity.to_owned(),
        }
    }

    /// The label selector of this replica's share.
    pub fn selector(&self) -> String {
        format!("{}={}", self.shard_key, self.identity)
    }

    /// Where `object` stands for this replica.
    pub fn standing(&self, object: &CachedObject) -> Standing {
        if object.meta.labels.get(&self.shard_key) != Some(self.identity.as_str()) {
            Standing::NotMine
        } else if object.meta.labels.get(&self.drain_key).is_some() {
            Standing::Draining
        } else {
            Standing::Mine
        }
    }
}

/// Where an object stands for one replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Assigned to this replica: reconcile it.
    Mine,
    /// Assigned to this replica, which the sharder asks to let it go: acknowledge, do not reconcile.
    Draining,
    /// Assigned elsewhere, or not yet: leave it alone.
    NotMine,
}

/// Field manager of the labels the sharder and the drain acknowledgements write.
pub const FIELD_MANAGER: &str = "wasm-reconciler-sharder";

/// Acknowledges a drain: removes the shard and drain labels of `object`, provided it is still the version the
/// replica saw (a concurrent change fails the write with a conflict; the caller retries on the next event).
/// Returns the object as written.
pub async fn acknowledge_drain(
    api: &Api<DynamicObject>,
    labels: &ShardLabels,
    object: &CachedObject,
) -> Result<DynamicObject, kube::Error> {
    let patch = json!({
        "metadata": {
            "resourceVersion": object.meta.resource_version.to_string(),
            "labels": {labels.shard_key.as_str(): null, labels.drain_key.as_str(): null},
        }
    });
    api.patch(&object.key.name, &patch_params(), &Patch::Merge(&patch))
        .await
}

/// Merge patches under [`FIELD_MANAGER`].
pub(crate) fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::Gvk;

    fn object(labels: serde_json::Value) -> CachedObject {
        CachedObject::from_json(
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "a", "namespace": "default", "uid": "u", "resourceVersion": "7", "labels": labels}}),
            &Gvk::new("", "v1", "ConfigMap"),
        )
        .expect("a valid object")
    }

    #[test]
    fn labels_and_selector_name_the_ring_and_the_replica() {
        let labels = ShardLabels::new("wasm-reconciler", "host-a");
        assert_eq!(labels.shard_key, "shard.wasm-reconciler.io/wasm-reconciler");
        assert_eq!(labels.drain_key, "drain.wasm-reconciler.io/wasm-reconciler");
        assert_eq!(labels.selector(), "shard.wasm-reconciler.io/wasm-reconciler=host-a");
        let sharding = Sharding {
            namespace: "ns".into(),
            ring: "wr".into(),
            lease_duration: Duration::from_secs(15),
            renew_every: Duration::from_secs(5),
        };
        assert_eq!(sharding.member_lease("host-a"), "wr-shard-host-a");
        assert_eq!(sharding.sharder_lease(), "wr-sharder");
    }

    #[test]
    fn standing_reads_the_shard_and_drain_labels() {
        let labels = ShardLabels::new("r", "host-a");
        assert_eq!(
            labels.standing(&object(json!({"shard.wasm-reconciler.io/r": "host-a"}))),
            Standing::Mine
        );
        assert_eq!(
            labels.standing(&object(
                json!({"shard.wasm-reconciler.io/r": "host-a", "drain.wasm-reconciler.io/r": "true"})
            )),
            Standing::Draining
        );
        assert_eq!(
            labels.standing(&object(json!({"shard.wasm-reconciler.io/r": "host-b"}))),
            Standing::NotMine
        );
        assert_eq!(labels.standing(&object(json!({}))), Standing::NotMine);
        // Another ring's labels are not ours.
        assert_eq!(
            labels.standing(&object(json!({"shard.wasm-reconciler.io/x": "host-a"}))),
            Standing::NotMine
        );
    }
}
