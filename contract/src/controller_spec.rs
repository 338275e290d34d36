//! What a plugin reconciles (`record controller-spec`): its primary kind, owned and read kinds, finalizer and
//! resync period.

use std::time::Duration;

use serde::Serialize;

use crate::Gvk;

/// What a plugin reconciles; returned by its `describe` export.
///
/// Built with chained calls; a kind declared twice is kept once.
///
/// ```
/// use std::time::Duration;
/// use wasm_reconciler_contract::{ControllerSpec, Gvk};
///
/// let spec = ControllerSpec::new(Gvk::new("example.com", "v1", "Widget"))
///     .owns(Gvk::new("", "v1", "ConfigMap"))
///     .reads(Gvk::new("", "v1", "Secret"))
///     .finalizer("example.com/cleanup")
///     .resync(Duration::from_secs(300));
/// assert_eq!(spec.owns, [Gvk::new("", "v1", "ConfigMap")]);
/// assert_eq!(spec.finalizer.as_deref(), Some("example.com/cleanup"));
/// assert_eq!(spec.resync_seconds, Some(300));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerSpec {
    /// The kind whose objects are reconciled, one reconcile per object.
    pub primary: Gvk,
    /// Kinds of children the plugin creates and owns.
    pub owns: Vec<Gvk>,
    /// Further kinds the plugin reads with `host.get` and `host.list`.
    pub reads: Vec<Gvk>,
    /// The finalizer the host manages on the plugin's behalf.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finalizer: Option<String>,
    /// Re-reconcile every primary at least this often, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resync_seconds: Option<u32>,
}

impl ControllerSpec {
    /// A spec reconciling objects of `primary`, owning and reading nothing else yet.
    pub fn new(primary: Gvk) -> Self {
        Self {
            primary,
            owns: Vec::new(),
            reads: Vec::new(),
            finalizer: None,
            resync_seconds: None,
        }
    }

    /// Declares a kind of children: the host applies them with a controller ownerReference, prunes the
    /// ones no longer desired, and reconciles the primary again when they change.
    pub fn owns(mut self, kind: Gvk) -> Self {
        if !self.owns.contains(&kind) {
            self.owns.push(kind);
        }
        self
    }

    /// [`owns`](Self::owns) for a k8s-openapi type: `owns_kind::<ConfigMap>()`.
    #[cfg(feature = "k8s-openapi")]
    pub fn owns_kind<K: k8s_openapi::Resource>(self) -> Self {
        self.owns(Gvk::of::<K>())
    }

    /// Declares a kind the plugin reads with `host.get` or `host.list` without owning it.
    pub fn reads(mut self, kind: Gvk) -> Self {
        if !self.reads.contains(&kind) {
            self.reads.push(kind);
        }
        self
    }

    /// [`reads`](Self::reads) for a k8s-openapi type: `reads_kind::<Secret>()`.
    #[cfg(feature = "k8s-openapi")]
    pub fn reads_kind<K: k8s_openapi::Resource>(self) -> Self {
        self.reads(Gvk::of::<K>())
    }

    /// Names a finalizer (`example.com/cleanup`): the host adds it before writing any child and calls the
    /// plugin with a deleting view until the outcome says `finalized`.
    pub fn finalizer(mut self, name: impl Into<String>) -> Self {
        self.finalizer = Some(name.into());
        self
    }

    /// Reconciles every primary at least this often. Rounded up to whole seconds (at least one), capped
    /// at `u32::MAX` seconds.
    pub fn resync(mut self, every: Duration) -> Self {
        let seconds = every.as_secs() + u64::from(every.subsec_nanos() > 0);
        self.resync_seconds = Some(u32::try_from(seconds.max(1)).unwrap_or(u32::MAX));
        self
    }

    /// The resync period, if any.
    pub fn resync_period(&self) -> Option<Duration> {
        self.resync_seconds.map(|seconds| Duration::from_secs(seconds.into()))
    }

    /// Whether the plugin may read objects of `kind` with `get`/`list`: its primary, owned and read kinds.
    pub fn may_read(&self, kind: &Gvk) -> bool {
        &self.primary == kind || self.owns.contains(kind) || self.reads.contains(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget() -> Gvk {
        Gvk::new("example.com", "v1", "Widget")
    }

    #[test]
    fn starts_empty() {
        let spec = ControllerSpec::new(widget());
        assert_eq!(spec.primary, widget());
        assert!(spec.owns.is_empty());
        assert!(spec.reads.is_empty());
        assert_eq!(spec.finalizer, None);
        assert_eq!(spec.resync_seconds, None);
    }

    #[test]
    fn declaring_a_kind_twice_keeps_one() {
        let deployment = Gvk::new("apps", "v1", "Deployment");
        let spec = ControllerSpec::new(widget())
            .owns(deployment.clone())
            .owns(deployment.clone())
            .reads(deployment.clone())
            .reads(deployment);
        assert_eq!(spec.owns.len(), 1);
        assert_eq!(spec.reads.len(), 1);
    }

    #[test]
    fn resync_rounds_up_to_whole_seconds() {
        let resync = |every| ControllerSpec::new(widget()).resync(every).resync_seconds;
        assert_eq!(resync(Duration::from_millis(1500)), Some(2));
        assert_eq!(resync(Duration::ZERO), Some(1));
        assert_eq!(resync(Duration::from_secs(60)), Some(60));
        assert_eq!(resync(Duration::from_secs(u64::MAX)), Some(u32::MAX));
        assert_eq!(
            ControllerSpec::new(widget())
                .resync(Duration::from_secs(60))
                .resync_period(),
            Some(Duration::from_secs(60))
        );
    }

    #[test]
    fn may_read_declared_kinds_only() {
        let spec = ControllerSpec::new(widget())
            .owns(Gvk::new("", "v1", "ConfigMap"))
            .reads(Gvk::new("", "v1", "Secret"));
        assert!(spec.may_read(&widget()));
        assert!(spec.may_read(&Gvk::new("", "v1", "ConfigMap")));
        assert!(spec.may_read(&Gvk::new("", "v1", "Secret")));
        assert!(!spec.may_read(&Gvk::new("", "v1", "Pod")));
    }

    #[cfg(feature = "k8s-openapi")]
    #[test]
    fn typed_kinds_declare_their_gvk() {
        use k8s_openapi::api::apps::v1::Deployment;
        let spec = ControllerSpec::new(widget())
            .owns_kind::<Deployment>()
            .reads_kind::<Deployment>();
        assert_eq!(spec.owns, [Gvk::new("apps", "v1", "Deployment")]);
        assert_eq!(spec.reads, [Gvk::new("apps", "v1", "Deployment")]);
    }
}
