//! A new version on a share of the primaries: the canary. Each primary is served by exactly one version, chosen by
//! a stable hash of its uid, so every replica (leader-elected or sharded) makes the same choice for it, and a primary
//! stays on the canary as its share grows. The canary's failed reconciles are counted for the rollout's analysis.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest as _, Sha256};

use super::{Controller, Shared, Version};
use crate::runtime::{CachedObject, ObjectKey, Source};

/// Buckets of the hash space: a share is a number of them.
pub const BUCKETS: u32 = 10_000;
/// Primaries whose canary failures are named, at most.
const NAMED: usize = 5;

/// The bucket of a primary of uid `uid`: the first 4 bytes of its sha256, modulo [`BUCKETS`]. A primary is on a
/// canary of share `p`% when its bucket is below `p * BUCKETS / 100`.
pub fn bucket(uid: &str) -> u32 {
    let digest = Sha256::digest(uid.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) % BUCKETS
}

/// The new version of a rollout and the share it serves.
pub(super) struct Canary {
    pub(super) version: Arc<Version>,
    /// Buckets below this are the canary's.
    below: std::sync::atomic::AtomicU32,
    failures: AtomicUsize,
    failed: Mutex<Vec<(ObjectKey, &'static str)>>,
}

impl Canary {
    pub(super) fn serves(&self, primary: &CachedObject) -> bool {
        bucket(&primary.meta.uid) < self.below.load(Ordering::Relaxed)
    }

    /// Counts a failed reconcile of `key` on the canary.
    pub(super) fn failed(&self, key: &ObjectKey, reason: &'static str) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        if failed.len() < NAMED && !failed.iter().any(|(k, _)| k == key) {
            failed.push((key.clone(), reason));
        }
    }
}

/// What a canary has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CanaryReport {
    /// Primaries it serves now.
    pub objects: usize,
    /// Its failed reconciles.
    pub failures: usize,
    /// The first primaries it failed on, with the reason.
    pub failed: Vec<(ObjectKey, &'static str)>,
}

fn below(share: u8) -> u32 {
    u32::from(share.min(100)) * BUCKETS / 100
}

impl Controller {
    /// Serves `version` to `share`% of the primaries from now on; the others stay on the serving version. Every
    /// primary moved is reconciled again.
    pub fn start_canary(&self, version: Version, share: u8) {
        let canary = Arc::new(Canary {
            version: Arc::new(version),
            below: below(share).into(),
            failures: AtomicUsize::new(0),
            failed: Mutex::default(),
        });
        *self.shared.canary.write().unwrap_or_else(PoisonError::into_inner) = Some(canary);
        self.shared.enqueue_canary(Source::Change);
    }

    /// Grows the canary's share to `share`%; the primaries it takes are reconciled again.
    pub fn grow_canary(&self, share: u8) {
        if let Some(canary) = self.shared.canary() {
            canary.below.store(below(share), Ordering::Relaxed);
            self.shared.enqueue_canary(Source::Change);
        }
    }

    /// The canary's objects and failures, if one runs.
    pub fn canary_report(&self) -> Option<CanaryReport> {
        let canary = self.shared.canary()?;
        let objects = self
            .shared
            .primary
            .list(None)
            .iter()
            .filter(|primary| canary.serves(primary))
            .count();
        Some(CanaryReport {
            objects,
            failures: canary.failures.load(Ordering::Relaxed),
            failed: canary.failed.lock().unwrap_or_else(PoisonError::into_inner).clone(),
        })
    }

    /// Rolls the canary back: the serving version reconciles its primaries again, restoring their children and
    /// status.
    pub fn abort_canary(&self) {
        let canary = self
            .shared
            .canary
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(canary) = canary {
            self.shared.enqueue_served_by(&canary, Source::Change);
        }
    }

    /// Promotes the canary: its version serves every primary.
    pub fn promote_canary(&self) {
        let canary = self
            .shared
            .canary
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(canary) = canary {
            self.swap((*canary.version).clone());
        }
    }
}

impl Shared {
    pub(super) fn canary(&self) -> Option<Arc<Canary>> {
        self.canary.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Queues every primary the canary serves.
    fn enqueue_canary(&self, source: Source) {
        if let Some(canary) = self.canary() {
            self.enqueue_served_by(&canary, source);
        }
    }

    /// Queues every primary `canary` serves (or served, once taken away).
    fn enqueue_served_by(&self, canary: &Canary, source: Source) {
        for primary in self.primary.list(None) {
            if canary.serves(&primary) && self.wants(&primary.key) {
                self.enqueue(primary.key.clone(), source);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_stable_and_spread() {
        assert_eq!(
            bucket("3f1c0b9e-0000-4000-8000-000000000001"),
            bucket("3f1c0b9e-0000-4000-8000-000000000001")
        );
        let uids: Vec<String> = (0..2000).map(|i| format!("uid-{i}")).collect();
        let in_ten_percent = uids.iter().filter(|uid| bucket(uid) < below(10)).count();
        assert!((140..=260).contains(&in_ten_percent), "{in_ten_percent} of 2000 in 10%");
        // A primary on the canary stays on it as the share grows.
        assert!(
            uids.iter()
                .filter(|uid| bucket(uid) < below(10))
                .all(|uid| bucket(uid) < below(50))
        );
    }
}
