//! What a plugin reconciles: its primary kind, owned and read kinds, finalizer and resync period.

use std::time::Duration;

use crate::Gvk;

/// What a plugin reconciles; returned by [`Reconciler::describe`](crate::Reconciler::describe).
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// use wasm_reconciler_sdk::{ControllerSpec, Gvk};
///
/// let spec = ControllerSpec::new(Gvk::new("example.com", "v1", "Widget"))
///     .owns_kind::<ConfigMap>()
///     .reads_kind::<Secret>()
///     .finalizer("example.com/cleanup")
///     .resync(Duration::from_secs(300));
/// assert_eq!(spec.owned_kinds(), [Gvk::new("", "v1", "ConfigMap")]);
/// assert_eq!(spec.finalizer_name(), Some("example.com/cleanup"));
/// assert_eq!(spec.resync_seconds(), Some(300));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerSpec {
    primary: Gvk,
    owns: Vec<Gvk>,
    reads: Vec<Gvk>,
    finalizer: Option<String>,
    resync_seconds: Option<u32>,
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
    pub fn owns_kind<K: k8s_openapi::Resource>(self) -> Self {
        self.owns(Gvk::of::<K>())
    }

    /// Declares a kind the plugin reads with [`host::get`](crate::host::get) or
    /// [`host::list`](crate::host::list) without owning it.
    pub fn reads(mut self, kind: Gvk) -> Self {
        if !self.reads.contains(&kind) {
            self.reads.push(kind);
        }
        self
    }

    /// [`reads`](Self::reads) for a k8s-openapi type: `reads_kind::<Secret>()`.
    pub fn reads_kind<K: k8s_openapi::Resource>(self) -> Self {
        self.reads(Gvk::of::<K>())
    }

    /// Names a finalizer (`example.com/cleanup`): the host adds it before writing any child and calls the
    /// plugin with a deleting view until the outcome says [`finalized`](crate::Outcome::finalized).
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

    /// The kind this plugin reconciles.
    pub fn primary(&self) -> &Gvk {
        &self.primary
    }

    /// The declared child kinds.
    pub fn owned_kinds(&self) -> &[Gvk] {
        &self.owns
    }

    /// The declared read-only kinds.
    pub fn read_kinds(&self) -> &[Gvk] {
        &self.reads
    }

    /// The finalizer, if any.
    pub fn finalizer_name(&self) -> Option<&str> {
        self.finalizer.as_deref()
    }

    /// The resync period in seconds, if any.
    pub fn resync_seconds(&self) -> Option<u32> {
        self.resync_seconds
    }

    pub(crate) fn into_parts(self) -> (Gvk, Vec<Gvk>, Vec<Gvk>, Option<String>, Option<u32>) {
        (self.primary, self.owns, self.reads, self.finalizer, self.resync_seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;

    fn widget() -> Gvk {
        Gvk::new("example.com", "v1", "Widget")
    }

    #[test]
    fn starts_empty() {
        let spec = ControllerSpec::new(widget());
        assert_eq!(spec.primary(), &widget());
        assert!(spec.owned_kinds().is_empty());
        assert!(spec.read_kinds().is_empty());
        assert_eq!(spec.finalizer_name(), None);
        assert_eq!(spec.resync_seconds(), None);
    }

    #[test]
    fn declaring_a_kind_twice_keeps_one() {
        let spec = ControllerSpec::new(widget())
            .owns_kind::<Deployment>()
            .owns(Gvk::new("apps", "v1", "Deployment"))
            .reads_kind::<Deployment>()
            .reads_kind::<Deployment>();
        assert_eq!(spec.owned_kinds().len(), 1);
        assert_eq!(spec.read_kinds().len(), 1);
    }

    #[test]
    fn resync_rounds_up_to_whole_seconds() {
        let resync = |every| ControllerSpec::new(widget()).resync(every).resync_seconds();
        assert_eq!(resync(Duration::from_millis(1500)), Some(2));
        assert_eq!(resync(Duration::ZERO), Some(1));
        assert_eq!(resync(Duration::from_secs(60)), Some(60));
        assert_eq!(resync(Duration::from_secs(u64::MAX)), Some(u32::MAX));
    }
}
