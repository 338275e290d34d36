//! The preview gate: before a new version of a plugin serves, it and the serving version run side by side on the
//! world view of each primary the controller caches, and the host counts the primaries the new version fails on
//! where the serving one succeeds. Nothing is written; neither version is given its grants, so no outbound request
//! is sent and no variable read (a plugin that needs them fails alike in both, which is not a new failure).

use std::hash::{Hash as _, Hasher as _};
use std::sync::Arc;

use super::{Controller, Logic, Shared, Version};
use crate::delivery::Tolerance;
use crate::plugin::{ClusterReader, Grants};
use crate::runtime::{CacheReader, CachedObject, ObjectKey, world_view};
use crate::shard::Standing;

/// New failures named in a message, at most.
const NAMED: usize = 3;

/// What the preview of a new version found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preview {
    /// Primaries the controller reconciles (in sharded mode, this replica's share).
    pub primaries: usize,
    /// Primaries previewed: all of them, or an even sample of the settings' `objects`.
    pub previewed: usize,
    /// The primaries the new version fails on and the serving one does not, with the new version's error.
    pub new_failures: Vec<(ObjectKey, String)>,
    /// Primaries both versions fail on.
    pub both_fail: usize,
}

impl Preview {
    /// Whether the new version may serve: its new failures are within `tolerance`.
    pub fn passes(&self, tolerance: Tolerance) -> bool {
        tolerance.allows(self.new_failures.len(), self.previewed)
    }

    /// Why a version that did not pass is held, naming a few of the primaries.
    pub fn held_because(&self, tolerance: Tolerance) -> String {
        let named: Vec<String> = self
            .new_failures
            .iter()
            .take(NAMED)
            .map(|(key, error)| format!("{key}: {error}"))
            .collect();
        let more = self.new_failures.len().saturating_sub(NAMED);
        format!(
            "the new version fails on {} of {} primaries previewed where the serving version succeeds (preview.maxNewFailures \
             is {tolerance}); the serving version goes on serving. {}{}",
            self.new_failures.len(),
            self.previewed,
            named.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        )
    }
}

impl Version {
    /// The same logic and configuration without grants: no outbound request, no variable.
    fn ungranted(&self) -> Version {
        let logic = match &self.logic {
            Logic::Wasm(plugin) => Logic::Wasm(plugin.clone().with_grants(Grants::default())),
            Logic::Native(plugin) => Logic::Native(plugin.clone()),
        };
        Version {
            logic,
            config: self.config.clone(),
        }
    }
}

impl Controller {
    /// Runs the serving version and `candidate` on the world view of the primaries this controller reconciles (at
    /// most `objects` of them, spread evenly by uid), off the async runtime; writes nothing.
    pub fn preview(&self, candidate: &Version, objects: usize) -> impl Future<Output = Preview> + Send + 'static {
        let shared = self.shared.clone();
        let candidate = candidate.ungranted();
        async move {
            tokio::task::spawn_blocking(move || shared.preview(&candidate, objects))
                .await
                .unwrap_or_default()
        }
    }
}

impl Shared {
    /// See [`Controller::preview`]; blocking.
    fn preview(&self, candidate: &Version, objects: usize) -> Preview {
        let serving = self
            .version
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .ungranted();
        let mut primaries: Vec<(u64, Arc<CachedObject>)> = self
            .primary
            .list(None)
            .into_iter()
            .filter(|primary| self.wants(&primary.key))
            .filter(|primary| {
                self.options
                    .shard
                    .as_ref()
                    .is_none_or(|shard| matches!(shard.standing(primary), Standing::Mine))
            })
            .map(|primary| {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                primary.meta.uid.hash(&mut hasher);
                (hasher.finish(), primary)
            })
            .collect();
        let mut preview = Preview {
            primaries: primaries.len(),
            ..Preview::default()
        };
        primaries.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.key.cmp(&b.1.key)));
        primaries.truncate(objects);
        for (_, primary) in &primaries {
            let children = world_view::children(primary, &self.owned);
            let run = |version: &Version| {
                let view = world_view::of(primary, &children, &version.config, primary.meta.deleting, 0);
                let reader = Arc::new(CacheReader::new(self.caches.clone()));
                let call_reader: Arc<dyn ClusterReader> = reader.clone();
                let result = version.logic.call(view, call_reader);
                (result, reader.incomplete())
            };
            let (before, before_incomplete) = run(&serving);
            let (after, after_incomplete) = run(candidate);
            if before_incomplete || after_incomplete {
                // A read kind still loading: this primary tells nothing yet.
                continue;
            }
            preview.previewed += 1;
            match (before, after) {
                (Ok(_), Err(error)) => preview
                    .new_failures
                    .push((primary.key.clone(), crate::error_chain(&error))),
                (Err(_), Err(_)) => preview.both_fail += 1,
                _ => {}
            }
        }
        preview
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preview(new_failures: usize, previewed: usize) -> Preview {
        Preview {
            primaries: previewed,
            previewed,
            new_failures: (0..new_failures)
                .map(|i| {
                    (
                        ObjectKey::new(Some("default"), &format!("p{i}")),
                        "plugin error: no".to_owned(),
                    )
                })
                .collect(),
            both_fail: 0,
        }
    }

    #[test]
    fn a_version_passes_within_its_tolerance_only() {
        assert!(preview(0, 10).passes(Tolerance::Count(0)));
        assert!(!preview(1, 10).passes(Tolerance::Count(0)));
        assert!(preview(1, 10).passes(Tolerance::Percent(10)));
        assert!(!preview(2, 10).passes(Tolerance::Percent(10)));
        assert!(preview(10, 10).passes(Tolerance::Percent(100)));
        assert!(
            preview(0, 0).passes(Tolerance::Count(0)),
            "nothing previewed holds nothing"
        );
    }

    #[test]
    fn the_reason_names_a_few_primaries_and_counts_the_rest() {
        let message = preview(5, 8).held_because(Tolerance::Count(0));
        assert!(
            message.starts_with("the new version fails on 5 of 8 primaries previewed"),
            "{message}"
        );
        assert!(message.contains("(preview.maxNewFailures is 0)"), "{message}");
        assert!(
            message.contains("default/p0: plugin error: no; default/p1"),
            "{message}"
        );
        assert!(!message.contains("default/p3"), "{message}");
        assert!(message.ends_with("; and 2 more"), "{message}");
    }
}
