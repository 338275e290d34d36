//! The fence: whether this replica may write now. A Lease is not a lock — another replica takes it over once it
//! has seen no renewal for a lease duration, whatever this one believes — so every write is checked, just before it
//! is sent, against this replica's own clock: the role must still be held in the term the work started in, and
//! the last successful renewal must be younger than the lease duration minus a safety margin.
//!
//! The clock is `CLOCK_BOOTTIME`, which keeps counting while the process is stopped (SIGSTOP, a long pause) and
//! while the machine is suspended, so a replica that thaws finds its fence closed before it can write from its
//! stale caches.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// A point on the boot-time clock, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct BootInstant(u128);

impl BootInstant {
    /// Now, on the clock that counts stopped and suspended time too.
    pub fn now() -> Self {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
        Self(now.tv_sec as u128 * 1_000_000_000 + now.tv_nsec as u128)
    }

    /// `duration` later.
    pub fn plus(self, duration: Duration) -> Self {
        Self(self.0 + duration.as_nanos())
    }

    /// How long after `earlier` this is (zero if it is not after).
    pub fn since(self, earlier: Self) -> Duration {
        let nanos = self.0.saturating_sub(earlier.0);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// Why a write was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fenced {
    /// The role is not held (not yet, or lost).
    #[error("this replica does not hold its {role} role; nothing was sent")]
    NotHeld {
        /// `leader`, `member`, `sharder`.
        role: &'static str,
    },
    /// The role was lost and taken again since the work began: it belongs to an earlier term.
    #[error("this replica's {role} term changed since the reconcile began; nothing was sent")]
    TermEnded {
        /// `leader`, `member`, `sharder`.
        role: &'static str,
    },
    /// The last successful renewal is too old: another replica may already hold the role.
    #[error("this replica's {role} Lease was last renewed {since:?} ago, past its safe window; nothing was sent")]
    Expired {
        /// `leader`, `member`, `sharder`.
        role: &'static str,
        /// Since the last successful renewal was sent.
        since: Duration,
    },
}

#[derive(Debug)]
struct State {
    /// Incremented each time the role is taken; work carries the term it started in.
    term: u64,
    held: bool,
    /// When the last successful renewal was sent (`None`: never expires — no election).
    renewed: Option<BootInstant>,
}

/// Whether this replica may write in its role; shared by everything that writes in that role. Cloning shares it.
#[derive(Debug, Clone)]
pub struct Fence {
    role: &'static str,
    /// How long after a renewal was sent writes stay allowed: the lease duration minus the safety margin.
    window: Duration,
    state: Arc<Mutex<State>>,
}

impl Fence {
    /// The fence of a role decided by a Lease of `lease_duration`: closed until [`Fence::acquired`]; each renewal
    /// opens it for three quarters of the duration (a quarter is the margin for clock rates and requests in flight).
    pub fn new(role: &'static str, lease_duration: Duration) -> Self {
        Self {
            role,
            window: lease_duration - lease_duration / 4,
            state: Arc::new(Mutex::new(State {
                term: 0,
                held: false,
                renewed: None,
            })),
        }
    }

    /// The fence of a replica that runs alone (no leader election, no sharding): always open.
    pub fn always_open() -> Self {
        Self {
            role: "only",
            window: Duration::MAX,
            state: Arc::new(Mutex::new(State {
                term: 1,
                held: true,
                renewed: None,
            })),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The role was taken with a Lease write sent at `sent`: a new term begins.
    pub fn acquired(&self, sent: BootInstant) {
        let mut state = self.state();
        state.term += 1;
        state.held = true;
        state.renewed = Some(sent);
    }

    /// A renewal sent at `sent` succeeded.
    pub fn renewed(&self, sent: BootInstant) {
        let mut state = self.state();
        if state.held {
            state.renewed = Some(state.renewed.map_or(sent, |last| last.max(sent)));
        }
    }

    /// The role is lost (or released): nothing more is written in this term.
    pub fn lost(&self) {
        self.state().held = false;
    }

    /// When writes stop being allowed unless a renewal succeeds first (`None` when not held or never).
    pub fn closes_at(&self) -> Option<BootInstant> {
        let state = self.state();
        if !state.held {
            return None;
        }
        state.renewed.map(|renewed| renewed.plus(self.window))
    }

    /// Whether a write may be sent now in the current term.
    pub fn check(&self) -> Result<(), Fenced> {
        let state = self.state();
        self.check_state(&state)
    }

    fn check_state(&self, state: &State) -> Result<(), Fenced> {
        if !state.held {
            return Err(Fenced::NotHeld { role: self.role });
        }
        if let Some(renewed) = state.renewed {
            let since = BootInstant::now().since(renewed);
            if since >= self.window {
                return Err(Fenced::Expired { role: self.role, since });
            }
        }
        Ok(())
    }

    /// A ticket for work that begins now: its writes are allowed only in this term.
    pub fn ticket(&self) -> Ticket {
        Ticket {
            term: self.state().term,
            fence: self.clone(),
        }
    }
}

/// The term a unit of work (a reconcile) began in; every write of that work is checked with it.
#[derive(Debug, Clone)]
pub struct Ticket {
    fence: Fence,
    term: u64,
}

impl Ticket {
    /// A ticket that always allows (tests, tools that write on behalf of a user).
    pub fn unfenced() -> Self {
        Fence::always_open().ticket()
    }

    /// Whether a write of this work may be sent now: the role is held, in the same term, renewed recently enough.
    pub fn check(&self) -> Result<(), Fenced> {
        let state = self.fence.state();
        if state.held && state.term != self.term {
            return Err(Fenced::TermEnded { role: self.fence.role });
        }
        self.fence.check_state(&state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_opens_with_the_role_and_closes_with_it() {
        let fence = Fence::new("leader", Duration::from_secs(8));
        assert_eq!(fence.check(), Err(Fenced::NotHeld { role: "leader" }));
        fence.acquired(BootInstant::now());
        assert_eq!(fence.check(), Ok(()));
        let ticket = fence.ticket();
        assert_eq!(ticket.check(), Ok(()));
        fence.lost();
        assert_eq!(ticket.check(), Err(Fenced::NotHeld { role: "leader" }));
        // Taken again: work of the earlier term stays fenced, new work goes ahead.
        fence.acquired(BootInstant::now());
        assert_eq!(ticket.check(), Err(Fenced::TermEnded { role: "leader" }));
        assert_eq!(fence.ticket().check(), Ok(()));
    }

    #[test]
    fn a_renewal_older_than_the_window_closes_the_fence() {
        let fence = Fence::new("member", Duration::from_secs(4));
        // Renewed 3.5 s ago: past the 3 s window (three quarters of 4 s).
        let long_ago = BootInstant(BootInstant::now().0 - 3_500_000_000);
        fence.acquired(long_ago);
        assert!(matches!(fence.check(), Err(Fenced::Expired { role: "member", .. })));
        let ticket = fence.ticket();
        assert!(ticket.check().is_err());
        // A renewal sent now reopens it, in the same term.
        fence.renewed(BootInstant::now());
        assert_eq!(ticket.check(), Ok(()));
        // An older renewal answered late never moves the window back.
        fence.renewed(long_ago);
        assert_eq!(fence.check(), Ok(()));
    }

    #[test]
    fn an_open_fence_never_closes() {
        let ticket = Ticket::unfenced();
        assert_eq!(ticket.check(), Ok(()));
        assert!(Fence::always_open().closes_at().is_none());
    }
}
