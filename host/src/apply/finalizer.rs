//! The plugin's finalizer as one state machine: add → apply → cleanup → remove, as kube-runtime's `finalizer`
//! helper runs it, except that adding the finalizer and the first apply share one reconcile (the add is guarded by
//! the resourceVersion the plugin then sees, so nothing is skipped and no second reconcile is needed).

use crate::runtime::Meta;

/// Where a primary stands with respect to the plugin's finalizer; decides what one reconcile does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalizerState {
    /// Not being deleted, and the plugin names a finalizer the object lacks: this reconcile adds it before the
    /// plugin runs, so nothing the plugin does can escape its cleanup, then goes on as in [`Apply`](Self::Apply)
    /// with the updated object.
    Add,
    /// Not being deleted, finalizer in place (or none declared): the plugin runs and its outcome is applied.
    Apply,
    /// Being deleted, our finalizer still on it: the plugin runs with `deleting = true` and its outcome is
    /// applied; once it answers `finalized`, the finalizer is removed and the object can go.
    Cleanup,
    /// Being deleted without our finalizer (never declared, or already removed): nothing of ours holds the object;
    /// garbage collection takes the children.
    Released,
}

impl FinalizerState {
    /// The state of an object with metadata `meta`, for a plugin declaring `finalizer`.
    pub fn of(meta: &Meta, finalizer: Option<&str>) -> Self {
        let holds = finalizer.is_some_and(|finalizer| meta.finalizers.iter().any(|f| &**f == finalizer));
        match (meta.deleting, holds) {
            (false, false) if finalizer.is_some() => Self::Add,
            (false, _) => Self::Apply,
            (true, true) => Self::Cleanup,
            (true, false) => Self::Released,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ResourceVersion;

    fn meta(deleting: bool, finalizers: &[&str]) -> Meta {
        Meta {
            uid: "u".into(),
            resource_version: ResourceVersion::Integer(1),
            generation: Some(1),
            deleting,
            finalizers: finalizers.iter().map(|f| (*f).into()).collect(),
            labels: Default::default(),
            controller: None,
        }
    }

    const OURS: Option<&str> = Some("ex.io/drain");

    #[test]
    fn a_live_object_gets_the_finalizer_before_the_plugin_runs() {
        assert_eq!(FinalizerState::of(&meta(false, &[]), OURS), FinalizerState::Add);
        assert_eq!(
            FinalizerState::of(&meta(false, &["other.io/x"]), OURS),
            FinalizerState::Add
        );
    }

    #[test]
    fn a_live_object_with_the_finalizer_or_without_one_declared_is_applied() {
        assert_eq!(
            FinalizerState::of(&meta(false, &["ex.io/drain"]), OURS),
            FinalizerState::Apply
        );
        assert_eq!(FinalizerState::of(&meta(false, &[]), None), FinalizerState::Apply);
    }

    #[test]
    fn a_deleted_object_holding_our_finalizer_is_cleaned_up() {
        assert_eq!(
            FinalizerState::of(&meta(true, &["other.io/x", "ex.io/drain"]), OURS),
            FinalizerState::Cleanup
        );
    }

    #[test]
    fn a_deleted_object_without_our_finalizer_is_left_to_garbage_collection() {
        assert_eq!(FinalizerState::of(&meta(true, &[]), OURS), FinalizerState::Released);
        assert_eq!(
            FinalizerState::of(&meta(true, &["other.io/x"]), OURS),
            FinalizerState::Released
        );
        assert_eq!(
            FinalizerState::of(&meta(true, &["ex.io/drain"]), None),
            FinalizerState::Released
        );
    }
}
