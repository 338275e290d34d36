//! Time a call spends blocked on I/O (waiting for a response, reading a body, a variable's Secret): measured so
//! that it does not count against the plugin's deadline, and bounded by its own budget.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The trap that ends a call whose blocked time ran past its budget; classified as a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the plugin spent its outbound I/O budget of {budget:?} waiting")]
pub(crate) struct IoBudgetExhausted {
    /// The budget in force.
    pub(crate) budget: Duration,
}

/// Blocked time of one call, shared by everything that waits on its behalf. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct IoClock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    budget: Duration,
    waited_nanos: AtomicU64,
}

impl IoClock {
    /// A clock with `budget` of blocked time to spend.
    pub(crate) fn new(budget: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                budget,
                waited_nanos: AtomicU64::new(0),
            }),
        }
    }

    /// Time spent blocked so far.
    pub(crate) fn waited(&self) -> Duration {
        Duration::from_nanos(self.inner.waited_nanos.load(Ordering::Relaxed))
    }

    /// The budget in force.
    pub(crate) fn budget(&self) -> Duration {
        self.inner.budget
    }

    /// Blocked time still allowed.
    pub(crate) fn remaining(&self) -> Duration {
        self.inner.budget.saturating_sub(self.waited())
    }

    fn add(&self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.inner.waited_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Runs `work`, which blocks the plugin on the host's I/O (reading a Secret), counting the time it takes.
    pub(crate) fn measure<T>(&self, work: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let result = work();
        self.add(started.elapsed());
        result
    }

    /// Runs `wait` (a future that blocks the plugin) on the async runtime, counting the time it takes and cutting
    /// it off when the budget runs out.
    pub(crate) fn block_on<F: Future>(&self, wait: F) -> Result<F::Output, IoBudgetExhausted> {
        let remaining = self.remaining();
        let started = Instant::now();
        let result = wasmtime_wasi::runtime::in_tokio(async { tokio::time::timeout(remaining, wait).await });
        self.add(started.elapsed());
        result.map_err(|_| IoBudgetExhausted {
            budget: self.inner.budget,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_counted_and_cut_at_the_budget() {
        let clock = IoClock::new(Duration::from_millis(200));
        assert_eq!(clock.block_on(async { 7 }), Ok(7));
        // Timers are made inside the wait: the clock provides the runtime they need.
        clock
            .block_on(async { tokio::time::sleep(Duration::from_millis(50)).await })
            .expect("within the budget");
        assert!(clock.waited() >= Duration::from_millis(50), "{:?}", clock.waited());
        let cut = clock.block_on(async { tokio::time::sleep(Duration::from_secs(60)).await });
        assert_eq!(
            cut,
            Err(IoBudgetExhausted {
                budget: Duration::from_millis(200)
            })
        );
        assert!(clock.remaining().is_zero());
        assert!(clock.waited() < Duration::from_secs(5), "cut off, not waited out");
    }
}
