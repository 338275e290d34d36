//! Liveness and readiness: the flags the host sets as it starts, syncs, wins or loses the Lease, and stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why the host is not ready; the text is the one-line body `/readyz` answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotReady {
    /// The informer caches have not finished their initial list.
    #[error("caches not synced")]
    CachesNotSynced,
    /// Sharded mode is on and this replica does not hold its membership Lease.
    #[error("not a member of the shard ring")]
    NotMember,
}

/// How a ready host stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Reconciling, its caches synced.
    Serving,
    /// With leader election: another replica holds the Lease; this one is up and takes over when it is released or
    /// lapses. Ready, so that a rollout (`kubectl rollout status`, a PodDisruptionBudget) counts it as available.
    Standby,
}

impl Readiness {
    /// The one-line body `/readyz` answers with.
    pub fn text(self) -> &'static str {
        match self {
            Self::Serving => "ok",
            Self::Standby => "ok: standby, another replica holds the Lease",
        }
    }
}

/// The host's health flags. Cheap to clone: every clone shares the same flags.
///
/// A fresh `Health` is live, not synced, not the leader, with leader election off. Ready means synced when it
/// reconciles; with leader election a standby is ready too; in sharded mode a replica is ready once it holds its
/// membership Lease and its caches are synced.
#[derive(Debug, Clone)]
pub struct Health {
    flags: Arc<HealthFlags>,
}

#[derive(Debug)]
struct HealthFlags {
    live: AtomicBool,
    synced: AtomicBool,
    leader: AtomicBool,
    leader_election: AtomicBool,
    sharding: AtomicBool,
}

impl Default for Health {
    fn default() -> Self {
        Self::new()
    }
}

impl Health {
    /// Live, not yet synced, not the leader, leader election off.
    pub fn new() -> Self {
        Self {
            flags: Arc::new(HealthFlags {
                live: AtomicBool::new(true),
                synced: AtomicBool::new(false),
                leader: AtomicBool::new(false),
                leader_election: AtomicBool::new(false),
                sharding: AtomicBool::new(false),
            }),
        }
    }

    /// Sets liveness; `/healthz` fails while it is false (the host is wedged or shutting down).
    pub fn set_live(&self, live: bool) {
        self.flags.live.store(live, Ordering::Release);
    }

    /// Sets whether the informer caches finished their initial list.
    pub fn set_synced(&self, synced: bool) {
        self.flags.synced.store(synced, Ordering::Release);
    }

    /// Sets whether this replica holds the leader Lease.
    pub fn set_leader(&self, leader: bool) {
        self.flags.leader.store(leader, Ordering::Release);
    }

    /// Sets whether leader election is on; when it is off, readiness does not wait for the Lease.
    pub fn set_leader_election(&self, enabled: bool) {
        self.flags.leader_election.store(enabled, Ordering::Release);
    }

    /// Sets whether sharded mode is on: the Lease readiness waits for (with leader election on) is then this
    /// replica's membership Lease.
    pub fn set_sharding(&self, enabled: bool) {
        self.flags.sharding.store(enabled, Ordering::Release);
    }

    /// Whether the host is live.
    pub fn is_live(&self) -> bool {
        self.flags.live.load(Ordering::Acquire)
    }

    /// Ready (and how), or the first reason it is not: the role is checked before caches, since a standby runs no
    /// caches at all.
    pub fn readiness(&self) -> Result<Readiness, NotReady> {
        let flags = &self.flags;
        if flags.leader_election.load(Ordering::Acquire) && !flags.leader.load(Ordering::Acquire) {
            return if flags.sharding.load(Ordering::Acquire) {
                Err(NotReady::NotMember)
            } else {
                Ok(Readiness::Standby)
            };
        }
        if !flags.synced.load(Ordering::Acquire) {
            return Err(NotReady::CachesNotSynced);
        }
        Ok(Readiness::Serving)
    }

    /// Whether the host is ready.
    pub fn is_ready(&self) -> bool {
        self.readiness().is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_host_is_live_but_not_ready() {
        let health = Health::new();
        assert!(health.is_live());
        assert_eq!(health.readiness(), Err(NotReady::CachesNotSynced));
    }

    #[test]
    fn without_leader_election_synced_means_ready() {
        let health = Health::new();
        health.set_synced(true);
        assert_eq!(health.readiness(), Ok(Readiness::Serving));
    }

    #[test]
    fn with_leader_election_a_standby_is_ready_and_the_leader_once_synced() {
        let health = Health::new();
        health.set_leader_election(true);
        assert_eq!(health.readiness(), Ok(Readiness::Standby));
        health.set_leader(true);
        assert_eq!(health.readiness(), Err(NotReady::CachesNotSynced));
        health.set_synced(true);
        assert_eq!(health.readiness(), Ok(Readiness::Serving));
        health.set_leader(false);
        assert_eq!(health.readiness(), Ok(Readiness::Standby));
    }

    #[test]
    fn in_sharded_mode_a_replica_without_its_membership_lease_is_not_ready() {
        let health = Health::new();
        health.set_leader_election(true);
        health.set_sharding(true);
        health.set_synced(true);
        assert_eq!(health.readiness(), Err(NotReady::NotMember));
        health.set_leader(true);
        assert!(health.is_ready());
        assert_eq!(NotReady::NotMember.to_string(), "not a member of the shard ring");
    }

    #[test]
    fn clones_share_the_flags() {
        let health = Health::new();
        let clone = health.clone();
        clone.set_live(false);
        clone.set_synced(true);
        assert!(!health.is_live());
        assert!(health.is_ready());
    }

    #[test]
    fn reasons_read_as_one_line() {
        assert_eq!(NotReady::CachesNotSynced.to_string(), "caches not synced");
        assert_eq!(
            Readiness::Standby.text(),
            "ok: standby, another replica holds the Lease"
        );
    }
}
