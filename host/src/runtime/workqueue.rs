//! Controller workqueue: deduplicated keys, change-first priority, per-key exponential backoff and delayed requeues.
//!
//! This is the queue between informers and reconcile workers, with the semantics of client-go's workqueue and
//! rate limiter and kube-runtime's scheduler. A [`WorkQueue`] is a cheap [`Clone`] handle on shared state; many
//! producers call [`WorkQueue::add`] / [`WorkQueue::add_after`] and many workers loop on [`WorkQueue::next`] and
//! [`WorkQueue::done`].
//!
//! Guarantees:
//!
//! - **Deduplication.** A key is at most once in the ready set and has at most one scheduled deadline; a key is
//!   never both ready and scheduled. Adding a ready key again changes nothing, except that a [`Source::Change`]
//!   upgrades a low-priority ready key to high priority (it moves to the back of the high-priority line).
//! - **Priority: direct changes first.** [`Source::Change`] (a watch event of the object or of a child it
//!   controls: someone changed it) is high priority. Work that arrives in bulk is low priority: what a (re)list
//!   surfaced ([`Source::Relist`]), the fan-out of a read object's change ([`Source::FanOut`]), a new plugin
//!   version or settings ([`Source::Reload`]), and [`Source::Resync`], [`Source::Requeue`] and [`Source::Retry`].
//!   Ready keys are handed out high priority first and first-in first-out within a priority, so an edit is not
//!   stuck behind the re-list or resync of 100,000 objects. Priority is strict, as in controller-runtime's
//!   priority queue: low-priority keys wait only while high-priority ones are ready, and since a key is at most
//!   once in the high line and never handed out twice at a time, they wait only as long as the workers are busy
//!   with distinct directly changed objects.
//! - **No concurrent handout.** A key handed out by [`WorkQueue::next`] is *in flight* until [`WorkQueue::done`];
//!   it is not handed out again meanwhile. An add of an in-flight key (any source, any number of times, also a
//!   scheduled deadline falling due) marks it *dirty*; after `done` it becomes ready again exactly once, with the
//!   highest priority among those adds.
//! - **Backoff.** [`Completion::Failure`] counts consecutive failures `n` per key and schedules a
//!   [`Source::Retry`] after `min(backoff_base * 2^(n-1), backoff_max)` (5 ms, 10 ms, 20 ms, … 1000 s by
//!   default). [`Completion::Success`] resets the count. While a key waits for its retry, a resync, requeue or
//!   retry is absorbed by that retry (a resync does not bypass backoff); an add that reports a change of the
//!   key's world — `Change`, `Relist`, `FanOut`, `Reload` ([`Source::cuts_backoff`]) — makes it ready at once,
//!   at its own priority. The failure
//!   count keeps counting until a success, and every handout reports it as [`Item::attempt`].
//! - **Conflicts are quiet.** [`Completion::Conflict`] (HTTP 409 from optimistic concurrency) makes the key ready
//!   again as a low-priority [`Source::Requeue`] after `backoff_base`, without touching the failure count.
//! - **Delays.** [`WorkQueue::add_after`] keeps the earlier deadline when a key is already scheduled and does
//!   nothing when it is already ready; a key that becomes ready drops its scheduled deadline, since the reconcile
//!   that follows returns its own requeue request. A low-priority delayed add never shortens a backoff wait.
//! - **Shutdown.** After [`WorkQueue::shut_down`], [`WorkQueue::next`] returns `None` at once in every worker
//!   (waiting ones are woken), even if keys are still ready or scheduled: no new reconcile starts. Later adds are
//!   ignored; `done` is still accepted for keys in flight so callers can finish cleanly.
//! - **Cost.** One mutex, one [`Notify`], no task or timer per key. Scheduling is `O(log n)` on a binary heap of
//!   deadlines with lazy invalidation (superseded entries are skipped, and compacted when they pile up); handing
//!   out is amortised `O(1)`. Idle keys with no failures hold no memory. Waiting workers sleep until the earliest
//!   deadline or a notification; [`WorkQueue::next`] is cancel safe.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::ops::{Deref, DerefMut};
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How far in the future a deadline lands when `now + delay` does not fit in an [`Instant`].
const FAR_FUTURE: Duration = Duration::from_secs(60 * 60 * 24 * 365 * 30);

/// Superseded heap and ready-line entries are compacted once they outnumber the live ones by this much.
const COMPACTION_SLACK: usize = 1024;

/// Backoff settings of a [`WorkQueue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    /// Delay before the first retry of a failed key, and the delay of a conflict requeue.
    pub backoff_base: Duration,
    /// Upper bound of the retry delay.
    pub backoff_max: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            backoff_base: Duration::from_millis(5),
            backoff_max: Duration::from_secs(1000),
        }
    }
}

impl QueueConfig {
    /// The retry delay after `failures` consecutive failures: `min(backoff_base * 2^(failures-1), backoff_max)`,
    /// and zero for zero failures.
    pub fn backoff_for(&self, failures: u32) -> Duration {
        let Some(exponent) = failures.checked_sub(1) else {
            return Duration::ZERO;
        };
        1u32.checked_shl(exponent)
            .and_then(|factor| self.backoff_base.checked_mul(factor))
            .map_or(self.backoff_max, |delay| delay.min(self.backoff_max))
    }
}

/// Why a key was added; decides its priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// A watch event of the object or of a child it controls — someone changed it: high priority.
    Change,
    /// A change a (re)list surfaced rather than a watch event: the first list a controller starts on, a re-list
    /// after its watch failed or expired (410 Gone), a kind that became watchable. Low priority; cuts a backoff
    /// wait short.
    Relist,
    /// An object the key's last reconcile read changed (dependency fan-out): low priority; cuts a backoff wait
    /// short.
    FanOut,
    /// The plugin's logic or settings changed, so every key is reconciled again: low priority; cuts a backoff wait
    /// short.
    Reload,
    /// A periodic resync: low priority.
    Resync,
    /// A requeue the reconcile asked for (requeue-after, conflict), now due: low priority.
    Requeue,
    /// A backoff retry after a failure, now due: low priority.
    Retry,
}

impl Source {
    /// Lower-case name, for logs: `change`, `relist`, `fan-out`, `reload`, `resync`, `requeue`, `retry`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Change => "change",
            Self::Relist => "relist",
            Self::FanOut => "fan-out",
            Self::Reload => "reload",
            Self::Resync => "resync",
            Self::Requeue => "requeue",
            Self::Retry => "retry",
        }
    }

    /// Whether keys added with this source are handed out before low-priority ones: only a [`Source::Change`].
    pub fn is_high_priority(self) -> bool {
        matches!(self, Source::Change)
    }

    /// Whether the add reports a change of what the key's reconcile is given, so that a key waiting for its
    /// backoff retry is made ready at once: everything but a resync, a requeue and a retry.
    pub fn cuts_backoff(self) -> bool {
        !matches!(self, Source::Resync | Source::Requeue | Source::Retry)
    }

    /// High priority first, then the low-priority sources that cut backoff short, then the rest.
    fn rank(self) -> u8 {
        u8::from(self.is_high_priority()) + u8::from(self.cuts_backoff())
    }

    /// The source a key keeps when two adds meet: the later one if it ranks higher, otherwise the earlier one.
    fn merged_with(self, later: Source) -> Source {
        if later.rank() > self.rank() { later } else { self }
    }
}

/// How the processing of a handed-out key ended: the one result of a reconcile, passed to [`WorkQueue::done`] and
/// recorded in the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Reconciled: the failure count resets; with `requeue_after` the key comes back as a [`Source::Requeue`].
    Success {
        /// Reconcile again after this delay (earlier deadlines already scheduled win).
        requeue_after: Option<Duration>,
    },
    /// Failed: the failure count grows and the key comes back as a [`Source::Retry`] after the backoff delay.
    Failure {
        /// CamelCase reason, the one reported on the object's `Reconciled` condition (`PluginError`, `Timeout`, …).
        reason: &'static str,
    },
    /// Lost an optimistic-concurrency race (HTTP 409): back as a [`Source::Requeue`] after `backoff_base`, with
    /// the failure count unchanged.
    Conflict,
    /// Not done, and no failure of the object: its writes were fenced (this replica may have lost its role), or its
    /// view could not be completed yet. Back as a [`Source::Requeue`] after `after`, the failure count unchanged.
    Deferred {
        /// When to try again (an earlier change still wins).
        after: Duration,
        /// CamelCase: `Fenced`, `ViewIncomplete`.
        reason: &'static str,
    },
}

impl Completion {
    /// A success with no requeue.
    pub const DONE: Self = Self::Success { requeue_after: None };

    /// The `result` label of the reconcile metrics: `success`, `error`, `conflict` or `deferred`.
    pub fn result(&self) -> &'static str {
        match self {
            Self::Success { .. } => "success",
            Self::Failure { .. } => "error",
            Self::Conflict => "conflict",
            Self::Deferred { .. } => "deferred",
        }
    }

    /// The failure reason, for failures.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            Self::Failure { reason } => Some(reason),
            Self::Success { .. } | Self::Conflict | Self::Deferred { .. } => None,
        }
    }
}

/// Where a queue reports its depth and counters (Prometheus series, typically one per plugin). Clones share the
/// series; the default is a set of fresh, unregistered ones.
#[derive(Debug, Clone, Default)]
pub struct QueueMetrics {
    /// Ready plus scheduled keys, kept current on every change.
    pub depth: Gauge,
    /// Accepted `add` and `add_after` calls, counted before deduplication.
    pub adds: Counter,
    /// Failures, each of which scheduled a backoff retry.
    pub retries: Counter,
}

/// A key handed out by [`WorkQueue::next`]; it stays in flight until [`WorkQueue::done`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item<K> {
    /// The key to reconcile.
    pub key: K,
    /// Consecutive failures of this key so far (0 on a first try or after a success).
    pub attempt: u32,
    /// Why the key is ready: the highest-priority add since it became ready.
    pub source: Source,
    /// How long the key was ready before it was handed out (queue latency).
    pub waited: Duration,
}

/// A snapshot of the queue's gauges and counters, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Keys ready to be handed out.
    pub ready: usize,
    /// Keys waiting for a deadline (requeue-after, backoff retry, delayed add).
    pub scheduled: usize,
    /// Keys handed out and not yet done.
    pub in_flight: usize,
    /// Accepted `add` and `add_after` calls, counted before deduplication.
    pub adds_total: u64,
    /// Failures, each of which scheduled a backoff retry.
    pub retries_total: u64,
    /// Conflicts, each of which requeued its key quietly.
    pub conflicts_total: u64,
}

/// The controller workqueue; see the module documentation for its guarantees.
pub struct WorkQueue<K> {
    shared: Arc<Shared<K>>,
}

struct Shared<K> {
    state: Mutex<State<K>>,
    /// Wakes waiting workers: `notify_one` when work appears or the earliest deadline moves earlier,
    /// `notify_waiters` on shutdown.
    wake: Notify,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K> fmt::Debug for WorkQueue<K> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock().unwrap_or_else(PoisonError::into_inner);
        formatter
            .debug_struct("WorkQueue")
            .field("config", &state.config)
            .field("stats", &state.stats())
            .field("shut_down", &state.shut_down)
            .finish()
    }
}

impl<K> WorkQueue<K>
where
    K: Clone + Eq + Hash + fmt::Debug,
{
    /// Creates an empty queue.
    pub fn new(config: QueueConfig) -> Self {
        Self::with_metrics(config, QueueMetrics::default())
    }

    /// Creates an empty queue that reports to `metrics`.
    pub fn with_metrics(config: QueueConfig, metrics: QueueMetrics) -> Self {
        let state = State {
            config,
            keys: HashMap::new(),
            ready_high: VecDeque::new(),
            ready_low: VecDeque::new(),
            deadlines: BinaryHeap::new(),
            next_ticket: 0,
            ready: 0,
            scheduled: 0,
            in_flight: 0,
            metrics,
            conflicts_total: 0,
            shut_down: false,
        };
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                wake: Notify::new(),
            }),
        }
    }

    /// Makes `key` ready now (or marks it dirty when in flight). Ignored after shutdown.
    pub fn add(&self, key: K, source: Source) {
        let mut state = self.lock();
        if state.shut_down {
            return;
        }
        state.metrics.adds.inc();
        let wake = state.add_now(&key, source, Instant::now());
        drop(state);
        if wake {
            self.shared.wake.notify_one();
        }
    }

    /// Makes `key` ready after `delay`; an earlier deadline already scheduled wins, a ready key stays as it is.
    /// A zero delay is an [`add`](Self::add). Ignored after shutdown.
    pub fn add_after(&self, key: K, delay: Duration, source: Source) {
        let mut state = self.lock();
        if state.shut_down {
            return;
        }
        state.metrics.adds.inc();
        let now = Instant::now();
        let wake = state.add_at(&key, deadline_after(now, delay), source, now);
        drop(state);
        if wake {
            self.shared.wake.notify_one();
        }
    }

    /// Waits for a ready key that is not in flight, marks it in flight and returns it; `None` once shut down.
    ///
    /// Cancel safe: dropping the future before it completes hands out nothing.
    pub async fn next(&self) -> Option<Item<K>> {
        loop {
            // Register for wake-ups before looking at the state, so a notification between the look and the
            // wait is not lost.
            let mut notified = pin!(self.shared.wake.notified());
            notified.as_mut().enable();
            let earliest = match self.take_ready() {
                Handout::Item(item) => return Some(item),
                Handout::Closed => return None,
                Handout::Wait(earliest) => earliest,
            };
            match earliest {
                Some(deadline) => {
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Hands out a ready key like [`next`](Self::next) without waiting; `None` when nothing is ready or the queue
    /// is shut down.
    pub fn try_next(&self) -> Option<Item<K>> {
        match self.take_ready() {
            Handout::Item(item) => Some(item),
            Handout::Closed | Handout::Wait(_) => None,
        }
    }

    /// Ends the processing of an in-flight key and applies `completion` (see [`Completion`]); a key added while
    /// in flight becomes ready again once. A key that is not in flight is ignored with a warning.
    pub fn done(&self, key: &K, completion: Completion) {
        let mut state = self.lock();
        let wake = state.complete(key, completion, Instant::now());
        let shut_down = state.shut_down;
        drop(state);
        if wake && !shut_down {
            self.shared.wake.notify_one();
        }
    }

    /// Forgets a key whose object is gone: drops its failure count and any scheduled deadline. A ready entry
    /// stays (the add that made it ready still asks for a reconcile), and so does an in-flight handout.
    pub fn forget(&self, key: &K) {
        let mut state = self.lock();
        state.forget(key);
    }

    /// The key's consecutive failures so far.
    pub fn attempts(&self, key: &K) -> u32 {
        self.lock().keys.get(key).map_or(0, |entry| entry.failures)
    }

    /// Queue depth: ready plus scheduled keys (in-flight keys are not counted).
    pub fn len(&self) -> usize {
        let state = self.lock();
        state.ready + state.scheduled
    }

    /// Whether no key is ready or scheduled.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys handed out and not yet done.
    pub fn in_flight(&self) -> usize {
        self.lock().in_flight
    }

    /// Accepted `add` and `add_after` calls, counted before deduplication.
    pub fn adds_total(&self) -> u64 {
        self.lock().metrics.adds.get()
    }

    /// Failures, each of which scheduled a backoff retry.
    pub fn retries_total(&self) -> u64 {
        self.lock().metrics.retries.get()
    }

    /// All gauges and counters at once.
    pub fn stats(&self) -> QueueStats {
        self.lock().stats()
    }

    /// Stops handing out keys and wakes every waiting worker; [`next`](Self::next) returns `None` from now on.
    pub fn shut_down(&self) {
        self.lock().shut_down = true;
        self.shared.wake.notify_waiters();
    }

    /// Whether [`shut_down`](Self::shut_down) was called.
    pub fn is_shut_down(&self) -> bool {
        self.lock().shut_down
    }

    fn take_ready(&self) -> Handout<K> {
        let now = Instant::now();
        let mut state = self.lock();
        if state.shut_down {
            return Handout::Closed;
        }
        state.promote_due(now);
        match state.pop_ready(now) {
            Some(item) => {
                let more_ready = state.ready > 0;
                drop(state);
                // Deadlines that fell due together, or adds that raced with this handout, may have left more
                // ready keys: pass the baton so an idle worker picks them up.
                if more_ready {
                    self.shared.wake.notify_one();
                }
                Handout::Item(item)
            }
            None => Handout::Wait(state.earliest_deadline()),
        }
    }

    fn lock(&self) -> StateGuard<'_, K> {
        // The state is updated without panicking code between invariant-breaking steps, so a poisoned lock
        // still holds consistent data.
        StateGuard(self.shared.state.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The locked state; publishes the depth when released, so every change reaches the gauge.
struct StateGuard<'a, K>(MutexGuard<'a, State<K>>);

impl<K> Deref for StateGuard<'_, K> {
    type Target = State<K>;

    fn deref(&self) -> &State<K> {
        &self.0
    }
}

impl<K> DerefMut for StateGuard<'_, K> {
    fn deref_mut(&mut self) -> &mut State<K> {
        &mut self.0
    }
}

impl<K> Drop for StateGuard<'_, K> {
    fn drop(&mut self) {
        let depth = self.0.ready + self.0.scheduled;
        self.0.metrics.depth.set(i64::try_from(depth).unwrap_or(i64::MAX));
    }
}

enum Handout<K> {
    Item(Item<K>),
    Closed,
    Wait(Option<Instant>),
}

struct State<K> {
    config: QueueConfig,
    keys: HashMap<K, KeyState>,
    /// Ready `Change` keys in FIFO order; entries whose ticket no longer matches the key's ready mark are stale.
    ready_high: VecDeque<Ticketed<K>>,
    /// Ready low-priority keys in FIFO order, with the same lazy invalidation.
    ready_low: VecDeque<Ticketed<K>>,
    /// Min-heap of deadlines; entries whose ticket no longer matches the key's scheduled mark are stale.
    deadlines: BinaryHeap<Reverse<Deadline<K>>>,
    next_ticket: u64,
    ready: usize,
    scheduled: usize,
    in_flight: usize,
    metrics: QueueMetrics,
    conflicts_total: u64,
    shut_down: bool,
}

/// Everything the queue knows about one key; removed once the key is idle with no failures.
#[derive(Debug, Default)]
struct KeyState {
    failures: u32,
    in_flight: bool,
    /// Set only while in flight: the highest-priority add that arrived during processing.
    dirty: Option<Source>,
    /// Set only while not in flight; never together with `scheduled`.
    ready: Option<ReadyMark>,
    /// May be set while in flight (a delayed add during processing); never together with `ready`.
    scheduled: Option<ScheduledMark>,
}

impl KeyState {
    fn is_idle(&self) -> bool {
        self.failures == 0
            && !self.in_flight
            && self.dirty.is_none()
            && self.ready.is_none()
            && self.scheduled.is_none()
    }
}

#[derive(Debug, Clone, Copy)]
struct ReadyMark {
    ticket: u64,
    source: Source,
    since: Instant,
}

#[derive(Debug, Clone, Copy)]
struct ScheduledMark {
    ticket: u64,
    at: Instant,
    source: Source,
    /// A backoff wait: low-priority adds do not cut it short.
    backoff: bool,
}

struct Ticketed<K> {
    key: K,
    ticket: u64,
}

struct Deadline<K> {
    at: Instant,
    ticket: u64,
    key: K,
}

impl<K> PartialEq for Deadline<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<K> Eq for Deadline<K> {}

impl<K> PartialOrd for Deadline<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Deadline<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.ticket).cmp(&(other.at, other.ticket))
    }
}

impl<K> State<K> {
    fn stats(&self) -> QueueStats {
        QueueStats {
            ready: self.ready,
            scheduled: self.scheduled,
            in_flight: self.in_flight,
            adds_total: self.metrics.adds.get(),
            retries_total: self.metrics.retries.get(),
            conflicts_total: self.conflicts_total,
        }
    }
}

impl<K> State<K>
where
    K: Clone + Eq + Hash + fmt::Debug,
{
    fn take_ticket(&mut self) -> u64 {
        self.next_ticket += 1;
        self.next_ticket
    }

    /// Applies an immediate add; returns whether a new ready key appeared.
    fn add_now(&mut self, key: &K, source: Source, now: Instant) -> bool {
        let entry = self.keys.entry(key.clone()).or_default();
        if entry.in_flight {
            entry.dirty = Some(entry.dirty.map_or(source, |dirty| dirty.merged_with(source)));
            return false;
        }
        if let Some(scheduled) = entry.scheduled
            && scheduled.backoff
        {
            if !source.cuts_backoff() {
                return false;
            }
            tracing::debug!(
                key = ?key,
                failures = entry.failures,
                source = source.as_str(),
                "change cuts a backoff wait short"
            );
        }
        self.make_ready(key, source, now)
    }

    /// Applies a delayed add; returns whether waiting workers must look again (new ready key or earlier deadline).
    fn add_at(&mut self, key: &K, at: Instant, source: Source, now: Instant) -> bool {
        if at <= now {
            return self.add_now(key, source, now);
        }
        let entry = self.keys.entry(key.clone()).or_default();
        if entry.ready.is_some() {
            return false;
        }
        if let Some(existing) = entry.scheduled
            && (existing.at <= at || (existing.backoff && !source.cuts_backoff()))
        {
            return false;
        }
        self.schedule(key, at, source, false)
    }

    /// Puts a key that is not in flight into the ready set (or upgrades its priority); drops its deadline.
    /// Returns whether a new ready key appeared.
    fn make_ready(&mut self, key: &K, source: Source, now: Instant) -> bool {
        let ticket = self.take_ticket();
        let entry = self.keys.entry(key.clone()).or_default();
        if let Some(mark) = entry.ready.as_mut() {
            if source.is_high_priority() && !mark.source.is_high_priority() {
                mark.source = source;
                mark.ticket = ticket;
                self.ready_high.push_back(Ticketed {
                    key: key.clone(),
                    ticket,
                });
                self.compact_ready_low();
            } else {
                // Same line, same place; only the reported reason may change (a relist over a resync, say).
                mark.source = mark.source.merged_with(source);
            }
            return false;
        }
        if entry.scheduled.take().is_some() {
            self.scheduled -= 1;
        }
        entry.ready = Some(ReadyMark {
            ticket,
            source,
            since: now,
        });
        self.ready += 1;
        let line = if source.is_high_priority() {
            &mut self.ready_high
        } else {
            &mut self.ready_low
        };
        line.push_back(Ticketed {
            key: key.clone(),
            ticket,
        });
        true
    }

    /// Sets the key's one deadline; returns whether it is earlier than every deadline before it.
    fn schedule(&mut self, key: &K, at: Instant, source: Source, backoff: bool) -> bool {
        let ticket = self.take_ticket();
        let entry = self.keys.entry(key.clone()).or_default();
        if entry
            .scheduled
            .replace(ScheduledMark {
                ticket,
                at,
                source,
                backoff,
            })
            .is_none()
        {
            self.scheduled += 1;
        }
        let earliest = self.deadlines.peek().is_none_or(|Reverse(first)| at < first.at);
        self.deadlines.push(Reverse(Deadline {
            at,
            ticket,
            key: key.clone(),
        }));
        self.compact_deadlines();
        earliest
    }

    /// Moves every due deadline into the ready set (or marks its in-flight key dirty).
    fn promote_due(&mut self, now: Instant) {
        while let Some(Reverse(first)) = self.deadlines.peek() {
            if first.at > now {
                break;
            }
            let Some(Reverse(due)) = self.deadlines.pop() else {
                break;
            };
            let Some(entry) = self.keys.get_mut(&due.key) else {
                continue;
            };
            let Some(mark) = entry.scheduled.filter(|mark| mark.ticket == due.ticket) else {
                continue;
            };
            entry.scheduled = None;
            self.scheduled -= 1;
            if entry.in_flight {
                entry.dirty = Some(entry.dirty.map_or(mark.source, |dirty| dirty.merged_with(mark.source)));
            } else {
                self.make_ready(&due.key, mark.source, now);
            }
        }
    }

    /// Hands out the first ready key, high priority first.
    fn pop_ready(&mut self, now: Instant) -> Option<Item<K>> {
        loop {
            let candidate = self.ready_high.pop_front().or_else(|| self.ready_low.pop_front())?;
            let Some(entry) = self.keys.get_mut(&candidate.key) else {
                continue;
            };
            let Some(mark) = entry.ready.filter(|mark| mark.ticket == candidate.ticket) else {
                continue;
            };
            entry.ready = None;
            entry.in_flight = true;
            self.ready -= 1;
            self.in_flight += 1;
            return Some(Item {
                key: candidate.key,
                attempt: entry.failures,
                source: mark.source,
                waited: now.saturating_duration_since(mark.since),
            });
        }
    }

    /// The earliest live deadline, dropping superseded ones on the way.
    fn earliest_deadline(&mut self) -> Option<Instant> {
        while let Some(Reverse(first)) = self.deadlines.peek() {
            if deadline_is_live(&self.keys, first) {
                return Some(first.at);
            }
            self.deadlines.pop();
        }
        None
    }

    /// Ends an in-flight handout; returns whether waiting workers must look again.
    fn complete(&mut self, key: &K, completion: Completion, now: Instant) -> bool {
        let Some(entry) = self.keys.get_mut(key).filter(|entry| entry.in_flight) else {
            tracing::warn!(key = ?key, ?completion, "done called for a key that is not in flight; ignored");
            return false;
        };
        entry.in_flight = false;
        self.in_flight -= 1;
        let dirty = entry.dirty.take();
        let mut wake = false;
        match completion {
            Completion::Success { requeue_after } => {
                entry.failures = 0;
                if let Some(delay) = requeue_after {
                    wake |= self.add_at(key, deadline_after(now, delay), Source::Requeue, now);
                }
            }
            Completion::Failure { .. } => {
                entry.failures = entry.failures.saturating_add(1);
                let failures = entry.failures;
                let delay = self.config.backoff_for(failures);
                let at = deadline_after(now, delay);
                self.metrics.retries.inc();
                tracing::debug!(
                    key = ?key,
                    failures,
                    delay_ms = delay.as_millis(),
                    "reconcile failed; retry scheduled"
                );
                // A delayed change already due before the retry keeps its place: changes are not held back.
                let earlier_change = entry
                    .scheduled
                    .is_some_and(|mark| mark.source.cuts_backoff() && mark.at <= at);
                if !earlier_change {
                    wake |= self.schedule(key, at, Source::Retry, true);
                }
            }
            Completion::Conflict => {
                self.conflicts_total += 1;
                tracing::debug!(key = ?key, "conflict; requeued without backoff");
                let at = deadline_after(now, self.config.backoff_base);
                wake |= self.add_at(key, at, Source::Requeue, now);
            }
            Completion::Deferred { after, reason } => {
                tracing::debug!(key = ?key, reason, after_ms = after.as_millis(), "deferred");
                wake |= self.add_at(key, deadline_after(now, after), Source::Requeue, now);
            }
        }
        if let Some(source) = dirty {
            wake |= self.add_now(key, source, now);
        }
        self.remove_if_idle(key);
        wake
    }

    fn forget(&mut self, key: &K) {
        let Some(entry) = self.keys.get_mut(key) else { return };
        entry.failures = 0;
        if entry.scheduled.take().is_some() {
            self.scheduled -= 1;
        }
        self.remove_if_idle(key);
    }

    fn remove_if_idle(&mut self, key: &K) {
        if self.keys.get(key).is_some_and(KeyState::is_idle) {
            self.keys.remove(key);
        }
    }

    /// Drops superseded low-priority entries once they outnumber live ready keys (upgrades leave them behind).
    fn compact_ready_low(&mut self) {
        if self.ready_low.len() > 2 * self.ready + COMPACTION_SLACK {
            let keys = &self.keys;
            self.ready_low.retain(|candidate| {
                keys.get(&candidate.key)
                    .and_then(|entry| entry.ready)
                    .is_some_and(|mark| mark.ticket == candidate.ticket)
            });
        }
    }

    /// Drops superseded deadlines once they outnumber live ones (rescheduling and cancelling leave them behind).
    fn compact_deadlines(&mut self) {
        if self.deadlines.len() > 2 * self.scheduled + COMPACTION_SLACK {
            let keys = &self.keys;
            self.deadlines
                .retain(|Reverse(deadline)| deadline_is_live(keys, deadline));
        }
    }
}

fn deadline_is_live<K: Eq + Hash>(keys: &HashMap<K, KeyState>, deadline: &Deadline<K>) -> bool {
    keys.get(&deadline.key)
        .and_then(|entry| entry.scheduled)
        .is_some_and(|mark| mark.ticket == deadline.ticket)
}

fn deadline_after(now: Instant, delay: Duration) -> Instant {
    now.checked_add(delay).unwrap_or_else(|| now + FAR_FUTURE)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use tokio::time::{advance, sleep, timeout};

    use super::*;

    /// A failed reconcile.
    const FAILURE: Completion = Completion::Failure { reason: "PluginError" };

    /// Longer than any wait in these tests; a hung `next()` fails at this (virtual) deadline instead of hanging.
    const NEVER: Duration = Duration::from_secs(60 * 60 * 24 * 365);

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    fn queue<K: Clone + Eq + Hash + fmt::Debug>() -> WorkQueue<K> {
        WorkQueue::new(QueueConfig::default())
    }

    /// Hands out every key that is ready now, leaving them in flight.
    fn drain<K: Clone + Eq + Hash + fmt::Debug>(queue: &WorkQueue<K>) -> Vec<(K, Source)> {
        std::iter::from_fn(|| queue.try_next())
            .map(|item| (item.key, item.source))
            .collect()
    }

    /// Waits for the next key and reports how long that took on the paused clock.
    async fn next_with_wait<K: Clone + Eq + Hash + fmt::Debug>(queue: &WorkQueue<K>) -> (Item<K>, Duration) {
        let start = Instant::now();
        let item = timeout(NEVER, queue.next())
            .await
            .expect("a key becomes ready")
            .expect("queue is open");
        (item, start.elapsed())
    }

    /// Tiny deterministic xorshift generator, so stress runs are reproducible.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, bound: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % bound
        }
    }

    #[test]
    fn backoff_for_doubles_from_base_and_caps_at_max() {
        let config = QueueConfig::default();
        assert_eq!(config.backoff_for(0), Duration::ZERO);
        let delays: Vec<_> = (1..=5).map(|failures| config.backoff_for(failures)).collect();
        assert_eq!(delays, [ms(5), ms(10), ms(20), ms(40), ms(80)]);
        assert_eq!(config.backoff_for(18), Duration::from_millis(655_360));
        assert_eq!(config.backoff_for(19), Duration::from_secs(1000));
        assert_eq!(config.backoff_for(33), Duration::from_secs(1000));
        assert_eq!(config.backoff_for(u32::MAX), Duration::from_secs(1000));
    }

    #[tokio::test(start_paused = true)]
    async fn duplicate_adds_hand_out_a_key_once() {
        let queue = queue();
        queue.add("a", Source::Change);
        queue.add("a", Source::Change);
        queue.add("a", Source::Resync);
        assert_eq!(queue.len(), 1);
        assert_eq!(drain(&queue), [("a", Source::Change)]);
        assert_eq!(queue.in_flight(), 1);
        assert!(queue.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn keys_come_out_first_in_first_out_within_a_priority() {
        let queue = queue();
        for key in ["c", "a", "b"] {
            queue.add(key, Source::Change);
        }
        for key in ["z", "x", "y"] {
            queue.add(key, Source::Resync);
        }
        let keys: Vec<_> = drain(&queue).into_iter().map(|(key, _)| key).collect();
        assert_eq!(keys, ["c", "a", "b", "z", "x", "y"]);
    }

    #[tokio::test(start_paused = true)]
    async fn changes_come_out_before_low_priority_keys_added_earlier() {
        let queue = queue();
        queue.add("resync", Source::Resync);
        queue.add("retry", Source::Retry);
        queue.add("requeue", Source::Requeue);
        queue.add("change-1", Source::Change);
        queue.add("change-2", Source::Change);
        assert_eq!(
            drain(&queue),
            [
                ("change-1", Source::Change),
                ("change-2", Source::Change),
                ("resync", Source::Resync),
                ("retry", Source::Retry),
                ("requeue", Source::Requeue),
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn change_upgrades_a_ready_low_priority_key_to_the_back_of_the_high_line() {
        let queue = queue();
        queue.add("k", Source::Resync);
        queue.add("other-low", Source::Resync);
        queue.add("first-change", Source::Change);
        queue.add("k", Source::Change);
        assert_eq!(queue.len(), 3);
        assert_eq!(
            drain(&queue),
            [
                ("first-change", Source::Change),
                ("k", Source::Change),
                ("other-low", Source::Resync)
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn low_priority_add_leaves_a_ready_key_in_place() {
        let queue = queue();
        queue.add("k", Source::Change);
        queue.add("j", Source::Change);
        queue.add("k", Source::Resync);
        assert_eq!(drain(&queue), [("k", Source::Change), ("j", Source::Change)]);
    }

    #[tokio::test(start_paused = true)]
    async fn in_flight_key_is_not_handed_out_again_until_done() {
        let queue = queue();
        queue.add("k", Source::Change);
        let item = queue.try_next().expect("k is ready");
        assert_eq!((item.key, item.attempt, item.source), ("k", 0, Source::Change));
        queue.add("k", Source::Change);
        assert!(queue.try_next().is_none(), "k is in flight");
        assert!(
            timeout(ms(50), queue.next()).await.is_err(),
            "next() waits while k is in flight"
        );
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert_eq!(drain(&queue), [("k", Source::Change)]);
    }

    #[tokio::test(start_paused = true)]
    async fn adds_during_processing_cause_exactly_one_follow_up_with_the_highest_priority() {
        let queue = queue();
        queue.add("k", Source::Resync);
        assert_eq!(drain(&queue), [("k", Source::Resync)]);
        queue.add("k", Source::Resync);
        queue.add("k", Source::Change);
        queue.add("k", Source::Requeue);
        queue.add("k", Source::Resync);
        assert_eq!(queue.len(), 0, "a dirty in-flight key is not counted as queued");
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert_eq!(drain(&queue), [("k", Source::Change)]);
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert!(queue.try_next().is_none());
        assert!(timeout(NEVER, queue.next()).await.is_err(), "no second follow-up, ever");
    }

    #[tokio::test(start_paused = true)]
    async fn dirty_low_priority_follow_up_keeps_its_first_source() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.add("k", Source::Requeue);
        queue.add("k", Source::Resync);
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert_eq!(drain(&queue), [("k", Source::Requeue)]);
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_exponentially_up_to_the_cap_and_reset_on_success() {
        let queue = queue();
        queue.add("k", Source::Change);
        let (item, waited) = next_with_wait(&queue).await;
        assert_eq!((item.attempt, waited), (0, Duration::ZERO));

        let mut expected = ms(5);
        for failures in 1..=25 {
            queue.done(&"k", FAILURE);
            assert_eq!(queue.attempts(&"k"), failures);
            assert!(queue.try_next().is_none(), "retry {failures} is not due yet");
            let (item, waited) = next_with_wait(&queue).await;
            assert_eq!(waited, expected, "delay before retry {failures}");
            assert_eq!((item.key, item.attempt, item.source), ("k", failures, Source::Retry));
            expected = (expected * 2).min(Duration::from_secs(1000));
        }
        assert_eq!(expected, Duration::from_secs(1000), "the sequence reached the cap");
        assert_eq!(queue.retries_total(), 25);

        queue.done(&"k", Completion::Success { requeue_after: None });
        assert_eq!(queue.attempts(&"k"), 0);
        queue.add("k", Source::Change);
        let (item, _) = next_with_wait(&queue).await;
        assert_eq!(item.attempt, 0);
        queue.done(&"k", FAILURE);
        let (item, waited) = next_with_wait(&queue).await;
        assert_eq!(
            (item.attempt, waited),
            (1, ms(5)),
            "backoff starts over after a success"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_is_per_key() {
        let queue = queue();
        queue.add("failing", Source::Change);
        queue.add("healthy", Source::Change);
        drain(&queue);
        queue.done(&"failing", FAILURE);
        queue.done(&"healthy", Completion::Success { requeue_after: None });
        assert_eq!((queue.attempts(&"failing"), queue.attempts(&"healthy")), (1, 0));
        queue.add("healthy", Source::Resync);
        assert_eq!(drain(&queue), [("healthy", Source::Resync)]);
    }

    #[tokio::test(start_paused = true)]
    async fn change_during_backoff_is_handed_out_at_once_and_the_count_keeps_growing() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.done(&"k", FAILURE);
        let (_, waited) = next_with_wait(&queue).await;
        assert_eq!(waited, ms(5));
        queue.done(&"k", FAILURE);
        advance(ms(3)).await;

        queue.add("k", Source::Change);
        let item = queue.try_next().expect("a change does not wait for the 10 ms backoff");
        assert_eq!((item.attempt, item.source), (2, Source::Change));
        assert_eq!(queue.len(), 0, "the pending retry is gone");

        queue.done(&"k", FAILURE);
        assert_eq!(queue.attempts(&"k"), 3);
        let (item, waited) = next_with_wait(&queue).await;
        assert_eq!((item.attempt, item.source, waited), (3, Source::Retry, ms(20)));
    }

    #[tokio::test(start_paused = true)]
    async fn low_priority_adds_during_backoff_wait_for_the_retry() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.done(&"k", FAILURE);
        queue.add("k", Source::Resync);
        queue.add("k", Source::Requeue);
        queue.add_after("k", ms(1), Source::Resync);
        assert!(queue.try_next().is_none());
        assert_eq!(queue.len(), 1);
        let (item, waited) = next_with_wait(&queue).await;
        assert_eq!((item.source, item.attempt, waited), (Source::Retry, 1, ms(5)));
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert!(
            timeout(NEVER, queue.next()).await.is_err(),
            "the absorbed adds leave no extra follow-up"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_change_shortens_a_backoff_wait() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.done(&"k", FAILURE);
        next_with_wait(&queue).await;
        queue.done(&"k", FAILURE);
        queue.add_after("k", ms(4), Source::Change);
        let (item, waited) = next_with_wait(&queue).await;
        assert_eq!((item.source, item.attempt, waited), (Source::Change, 2, ms(4)));
    }

    #[tokio::test(start_paused = true)]
    async fn dirty_change_supersedes_the_backoff_retry_after_a_failure() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.add("k", Source::Change);
        queue.done(&"k", FAILURE);
        let item = queue
            .try_next()
            .expect("the change made during processing runs at once");
        assert_eq!((item.source, item.attempt), (Source::Change, 1));
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert!(
            timeout(NEVER, queue.next()).await.is_err(),
            "the superseded retry does not fire later"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn dirty_resync_after_a_failure_waits_for_the_retry() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.add("k", Source::Resync);
        queue.done(&"k", FAILURE);
        assert!(queue.try_next().is_none());
        let (item, waited) = next_with_wait(&queue).await;
        assert_eq!((item.source, item.attempt, waited), (Source::Retry, 1, ms(5)));
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert!(timeout(NEVER, queue.next()).await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn conflict_requeues_quietly_without_growing_the_backoff() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.done(&"k", FAILURE);
        let (_, waited) = next_with_wait(&queue).await;
        assert_eq!(waited, ms(5));

        for _ in 0..3 {
            queue.done(&"k", Completion::Conflict);
            assert_eq!(queue.attempts(&"k"), 1);
            let (item, waited) = next_with_wait(&queue).await;
            assert_eq!((item.source, item.attempt, waited), (Source::Requeue, 1, ms(5)));
        }
        assert_eq!(queue.stats().conflicts_total, 3);
        assert_eq!(queue.retries_total(), 1);

        queue.done(&"k", FAILURE);
        let (item, waited) = next_with_wait(&queue).await;
        assert_eq!(
            (item.attempt, waited),
            (2, ms(10)),
            "the second failure backs off from where it was"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn change_during_a_conflict_requeue_runs_at_once() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.done(&"k", Completion::Conflict);
        assert!(queue.try_next().is_none());
        queue.add("k", Source::Change);
        assert_eq!(drain(&queue), [("k", Source::Change)]);
    }

    #[tokio::test(start_paused = true)]
    async fn requeue_after_brings_the_key_back_as_a_requeue() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.done(
            &"k",
            Completion::Success {
                requeue_after: Some(Duration::from_secs(30)),
            },
        );
        assert_eq!(
            queue.stats(),
            QueueStats {
                scheduled: 1,
                adds_total: 1,
                ..QueueStats::default()
            }
        );
        advance(Duration::from_secs(30) - ms(1)).await;
        assert!(queue.try_next().is_none());
        advance(ms(1)).await;
        let item = queue.try_next().expect("due after 30 s");
        assert_eq!((item.source, item.attempt), (Source::Requeue, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn zero_requeue_after_is_ready_at_once() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.done(
            &"k",
            Completion::Success {
                requeue_after: Some(Duration::ZERO),
            },
        );
        assert_eq!(drain(&queue), [("k", Source::Requeue)]);
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_keeps_the_earlier_deadline() {
        let queue = queue();
        queue.add_after("later-first", Duration::from_secs(10), Source::Resync);
        queue.add_after("later-first", Duration::from_secs(5), Source::Resync);
        queue.add_after("earlier-first", Duration::from_secs(5), Source::Resync);
        queue.add_after("earlier-first", Duration::from_secs(10), Source::Resync);
        assert_eq!(queue.len(), 2);

        let (first, waited_first) = next_with_wait(&queue).await;
        let (second, waited_second) = next_with_wait(&queue).await;
        assert_eq!((first.key, waited_first), ("later-first", Duration::from_secs(5)));
        assert_eq!((second.key, waited_second), ("earlier-first", Duration::ZERO));
        queue.done(&"later-first", Completion::Success { requeue_after: None });
        queue.done(&"earlier-first", Completion::Success { requeue_after: None });
        assert!(timeout(NEVER, queue.next()).await.is_err(), "each key fires once");
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_of_a_ready_key_does_nothing() {
        let queue = queue();
        queue.add("k", Source::Change);
        queue.add_after("k", ms(10), Source::Resync);
        assert_eq!(queue.stats().scheduled, 0);
        assert_eq!(drain(&queue), [("k", Source::Change)]);
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert!(timeout(NEVER, queue.next()).await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn add_makes_a_scheduled_key_ready_and_drops_its_deadline() {
        let queue = queue();
        queue.add_after("k", Duration::from_secs(60), Source::Requeue);
        queue.add("k", Source::Resync);
        assert_eq!(queue.stats().scheduled, 0);
        assert_eq!(drain(&queue), [("k", Source::Resync)]);
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert!(timeout(NEVER, queue.next()).await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_during_processing_becomes_one_follow_up_when_due() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.add_after("k", ms(10), Source::Resync);
        advance(ms(20)).await;
        assert!(queue.try_next().is_none(), "due while in flight: dirty, not handed out");
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert_eq!(drain(&queue), [("k", Source::Resync)]);
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert!(timeout(NEVER, queue.next()).await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn dirty_follow_up_replaces_the_requeue_after_it_finished_with() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.add("k", Source::Resync);
        queue.done(
            &"k",
            Completion::Success {
                requeue_after: Some(Duration::from_secs(3600)),
            },
        );
        assert_eq!(drain(&queue), [("k", Source::Resync)]);
        queue.done(&"k", Completion::Success { requeue_after: None });
        assert!(
            timeout(NEVER, queue.next()).await.is_err(),
            "the follow-up's own answer decides"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn forget_drops_the_failure_count_and_the_scheduled_retry() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.done(&"k", FAILURE);
        assert_eq!((queue.attempts(&"k"), queue.len()), (1, 1));
        queue.forget(&"k");
        assert_eq!((queue.attempts(&"k"), queue.len()), (0, 0));
        assert!(timeout(NEVER, queue.next()).await.is_err(), "the retry never fires");
        assert!(queue.lock().keys.is_empty(), "a forgotten key holds no memory");
    }

    #[tokio::test(start_paused = true)]
    async fn forget_leaves_ready_and_in_flight_keys_alone() {
        let queue = queue();
        queue.add("flying", Source::Change);
        drain(&queue);
        queue.add("ready", Source::Change);
        queue.forget(&"flying");
        queue.forget(&"ready");
        assert_eq!(queue.in_flight(), 1);
        assert_eq!(drain(&queue), [("ready", Source::Change)]);
        queue.done(&"flying", FAILURE);
        assert_eq!(queue.attempts(&"flying"), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn done_for_a_key_not_in_flight_is_ignored() {
        let queue = queue();
        queue.done(&"unknown", FAILURE);
        queue.add("ready", Source::Change);
        queue.done(&"ready", FAILURE);
        assert_eq!(queue.attempts(&"unknown"), 0);
        assert_eq!(queue.attempts(&"ready"), 0);
        assert_eq!(
            queue.stats(),
            QueueStats {
                ready: 1,
                adds_total: 1,
                ..QueueStats::default()
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_worker_is_woken_by_an_add() {
        let queue = queue();
        let worker = tokio::spawn({
            let queue = queue.clone();
            async move { queue.next().await }
        });
        tokio::task::yield_now().await;
        let start = Instant::now();
        queue.add("k", Source::Change);
        let item = timeout(NEVER, worker)
            .await
            .expect("worker woke")
            .expect("worker ran")
            .expect("queue open");
        assert_eq!((item.key, start.elapsed()), ("k", Duration::ZERO));
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_worker_wakes_for_a_new_earlier_deadline() {
        let queue = queue();
        let worker = tokio::spawn({
            let queue = queue.clone();
            async move {
                let start = Instant::now();
                queue.next().await.map(|item| (item.key, start.elapsed()))
            }
        });
        tokio::task::yield_now().await;
        queue.add_after("late", Duration::from_secs(10), Source::Resync);
        tokio::task::yield_now().await;
        queue.add_after("early", Duration::from_secs(1), Source::Resync);
        let handed = timeout(NEVER, worker).await.expect("worker woke").expect("worker ran");
        assert_eq!(handed, Some(("early", Duration::from_secs(1))));
    }

    #[tokio::test(start_paused = true)]
    async fn due_keys_are_spread_over_all_waiting_workers() {
        let queue = queue();
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let queue = queue.clone();
                tokio::spawn(async move { queue.next().await.map(|item| item.key) })
            })
            .collect();
        tokio::task::yield_now().await;
        for key in ["a", "b", "c"] {
            queue.add_after(key, ms(7), Source::Resync);
        }
        let mut keys = Vec::new();
        for worker in workers {
            keys.push(timeout(NEVER, worker).await.expect("woke").expect("ran").expect("open"));
        }
        keys.sort_unstable();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(queue.in_flight(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn cancelled_next_hands_out_nothing() {
        let queue = queue();
        assert!(timeout(ms(10), queue.next()).await.is_err());
        queue.add("k", Source::Change);
        assert_eq!(queue.in_flight(), 0);
        assert_eq!(drain(&queue), [("k", Source::Change)]);
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_wakes_every_waiting_worker() {
        let queue: WorkQueue<&str> = queue();
        queue.add_after("far", Duration::from_secs(3600), Source::Resync);
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let queue = queue.clone();
                tokio::spawn(async move { queue.next().await })
            })
            .collect();
        tokio::task::yield_now().await;
        let start = Instant::now();
        queue.shut_down();
        for worker in workers {
            let handed = timeout(NEVER, worker)
                .await
                .expect("woken by shutdown")
                .expect("worker ran");
            assert_eq!(handed, None);
        }
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_stops_handing_out_and_ignores_adds_but_accepts_done() {
        let queue = queue();
        queue.add("flying", Source::Change);
        drain(&queue);
        queue.add("ready", Source::Change);
        queue.shut_down();
        assert!(queue.is_shut_down());
        assert_eq!(queue.next().await, None);
        assert!(queue.try_next().is_none());
        queue.add("late", Source::Change);
        queue.add_after("later", ms(1), Source::Change);
        assert_eq!(queue.adds_total(), 2);
        queue.done(&"flying", Completion::Success { requeue_after: None });
        assert_eq!(queue.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn stats_report_depth_and_counters() {
        let queue = queue();
        queue.add("a", Source::Change);
        queue.add("a", Source::Change);
        queue.add("b", Source::Resync);
        queue.add_after("c", ms(10), Source::Resync);
        drain(&queue);
        queue.add("d", Source::Change);
        queue.done(&"a", FAILURE);
        queue.done(&"b", Completion::Conflict);
        assert_eq!(
            queue.stats(),
            QueueStats {
                ready: 1,
                scheduled: 3,
                in_flight: 0,
                adds_total: 5,
                retries_total: 1,
                conflicts_total: 1
            }
        );
        assert_eq!(queue.len(), 4);
        assert!(format!("{queue:?}").contains("scheduled: 3"));
    }

    #[tokio::test(start_paused = true)]
    async fn waited_reports_time_spent_ready() {
        let queue = queue();
        queue.add("k", Source::Resync);
        advance(ms(250)).await;
        queue.add("k", Source::Change);
        let item = queue.try_next().expect("ready");
        assert_eq!((item.source, item.waited), (Source::Change, ms(250)));
    }

    #[tokio::test(start_paused = true)]
    async fn ten_thousand_scheduled_keys_come_out_in_deadline_order() {
        const KEYS: u32 = 20_000;
        let queue = queue();
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let delays: Vec<_> = (0..KEYS).map(|_| ms(1 + rng.below(60_000))).collect();
        for (key, delay) in (0..KEYS).zip(&delays) {
            queue.add_after(key, *delay, Source::Resync);
        }
        assert_eq!(queue.len(), KEYS as usize);
        let start = Instant::now();
        let mut previous = Duration::ZERO;
        for _ in 0..KEYS {
            let item = timeout(NEVER, queue.next()).await.expect("due").expect("open");
            let elapsed = start.elapsed();
            assert_eq!(
                elapsed, delays[item.key as usize],
                "key {} handed out at its deadline",
                item.key
            );
            assert!(elapsed >= previous);
            previous = elapsed;
            queue.done(&item.key, Completion::Success { requeue_after: None });
        }
        assert!(queue.is_empty());
        assert!(queue.lock().keys.is_empty(), "finished keys hold no memory");
    }

    #[tokio::test(start_paused = true)]
    async fn superseded_deadlines_are_compacted() {
        let queue = queue();
        for step in 0..10_000u64 {
            queue.add_after("k", Duration::from_secs(20_000 - step), Source::Resync);
        }
        assert_eq!(queue.len(), 1);
        assert!(queue.lock().deadlines.len() <= 2 + COMPACTION_SLACK);
        let (item, waited) = next_with_wait(&queue).await;
        assert_eq!((item.key, waited), ("k", Duration::from_secs(10_001)));
    }

    #[tokio::test(start_paused = true)]
    async fn relists_fan_outs_and_reloads_queue_behind_direct_changes() {
        let queue = queue();
        queue.add("relisted", Source::Relist);
        queue.add("read-changed", Source::FanOut);
        queue.add("reloaded", Source::Reload);
        queue.add("resynced", Source::Resync);
        queue.add("edited", Source::Change);
        assert_eq!(
            drain(&queue),
            [
                ("edited", Source::Change),
                ("relisted", Source::Relist),
                ("read-changed", Source::FanOut),
                ("reloaded", Source::Reload),
                ("resynced", Source::Resync),
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_edit_of_a_relisted_key_is_promoted_ahead_of_the_relist() {
        let queue = queue();
        for key in 0..10_000u32 {
            queue.add(key, Source::Relist);
        }
        queue.add(9_999, Source::Change);
        queue.add(5_000, Source::FanOut);
        assert_eq!(queue.len(), 10_000);
        let handed = drain(&queue);
        assert_eq!(handed[0], (9_999, Source::Change), "the edit first");
        assert_eq!(handed.len(), 10_000, "the promoted key is handed out once");
        let rest: Vec<u32> = handed[1..].iter().map(|(key, _)| *key).collect();
        assert_eq!(rest, (0..9_999).collect::<Vec<_>>(), "the relist keeps its order");
        assert_eq!(
            handed[5_001],
            (5_000, Source::Relist),
            "a fan-out leaves a relisted key in place"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_low_priority_add_that_reports_a_change_names_it_but_keeps_its_place() {
        let queue = queue();
        queue.add("k", Source::Resync);
        queue.add("j", Source::Resync);
        queue.add("k", Source::Relist);
        queue.add("k", Source::Retry);
        assert_eq!(drain(&queue), [("k", Source::Relist), ("j", Source::Resync)]);
    }

    #[tokio::test(start_paused = true)]
    async fn relists_fan_outs_and_reloads_cut_a_backoff_wait_short_at_low_priority() {
        for source in [Source::Relist, Source::FanOut, Source::Reload] {
            let queue = queue();
            queue.add("k", Source::Change);
            drain(&queue);
            queue.done(&"k", FAILURE);
            queue.add("edited", Source::Change);
            queue.add("k", source);
            assert_eq!(queue.len(), 2, "{source:?}: the retry is replaced");
            let handed: Vec<_> = std::iter::from_fn(|| queue.try_next())
                .map(|item| (item.key, item.source, item.attempt))
                .collect();
            assert_eq!(handed, [("edited", Source::Change, 0), ("k", source, 1)], "{source:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_fan_out_during_processing_is_not_held_back_by_a_failure() {
        let queue = queue();
        queue.add("k", Source::Change);
        drain(&queue);
        queue.add("k", Source::Resync);
        queue.add("k", Source::FanOut);
        queue.add("k", Source::Requeue);
        queue.done(&"k", FAILURE);
        let item = queue
            .try_next()
            .expect("the fan-out runs without waiting for the retry");
        assert_eq!((item.source, item.attempt), (Source::FanOut, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_relist_backlog_drains_while_edits_keep_arriving_slower_than_the_workers() {
        // Strict priority starves nothing as long as the workers outpace the direct changes: here edits of
        // distinct objects arrive at one per two handouts, and the relist still drains at one per two handouts.
        const BACKLOG: u32 = 1_000;
        let queue = queue();
        for key in 0..BACKLOG {
            queue.add(key, Source::Relist);
        }
        let mut relisted = 0;
        let mut handouts = 0;
        let mut edits = BACKLOG;
        while relisted < BACKLOG {
            queue.add(edits, Source::Change);
            edits += 1;
            for _ in 0..2 {
                let item = queue.try_next().expect("something is ready");
                handouts += 1;
                if item.source == Source::Relist {
                    relisted += 1;
                }
                queue.done(&item.key, Completion::DONE);
            }
        }
        assert_eq!(handouts, 2 * BACKLOG, "every second handout served the relist");
    }

    /// What the stress tests observed, shared by producers and workers.
    struct Observed {
        /// Bumped (together with the add, under this lock) each time a key is added.
        adds: Vec<u64>,
        /// Per key, the highest add number that had happened when one of its handouts started.
        covered: Vec<u64>,
        in_flight: HashSet<usize>,
        concurrent_handouts: u64,
        handouts: u64,
        requeues_left: u64,
    }

    impl Observed {
        fn new(keys: usize) -> Arc<Mutex<Self>> {
            Arc::new(Mutex::new(Self {
                adds: vec![0; keys],
                covered: vec![0; keys],
                in_flight: HashSet::new(),
                concurrent_handouts: 0,
                handouts: 0,
                requeues_left: 200,
            }))
        }
    }

    /// A reconcile worker: records every handout, takes a random while, ends with a random completion.
    async fn stress_worker(
        queue: WorkQueue<usize>,
        observed: Arc<Mutex<Observed>>,
        idle: Arc<Notify>,
        mut rng: Rng,
        paused_clock: bool,
    ) {
        while let Some(item) = queue.next().await {
            let key = item.key;
            let adds_seen = {
                let mut observed = observed.lock().expect("observed lock");
                if !observed.in_flight.insert(key) {
                    observed.concurrent_handouts += 1;
                }
                observed.handouts += 1;
                observed.adds[key]
            };
            if paused_clock {
                sleep(ms(rng.below(4))).await;
            } else {
                tokio::task::yield_now().await;
            }
            let completion = {
                let mut observed = observed.lock().expect("observed lock");
                observed.in_flight.remove(&key);
                observed.covered[key] = observed.covered[key].max(adds_seen);
                match rng.below(20) {
                    0..=2 if item.attempt < 3 => FAILURE,
                    3 => Completion::Conflict,
                    4 if observed.requeues_left > 0 => {
                        observed.requeues_left -= 1;
                        Completion::Success {
                            requeue_after: Some(ms(1 + rng.below(30))),
                        }
                    }
                    _ => Completion::Success { requeue_after: None },
                }
            };
            queue.done(&key, completion);
            if queue.is_empty() && queue.in_flight() == 0 {
                idle.notify_one();
            }
        }
    }

    /// Adds random keys with random sources, bumping the key's add number under the same lock as the add. Half
    /// of the adds go to a few hot keys, so adds often hit keys in flight; on the paused clock, pauses leave workers
    /// idle at times.
    async fn stress_producer(
        queue: WorkQueue<usize>,
        observed: Arc<Mutex<Observed>>,
        mut rng: Rng,
        adds: usize,
        paused_clock: bool,
    ) {
        let keys = observed.lock().expect("observed lock").adds.len() as u64;
        for round in 0..adds {
            let key = if rng.below(2) == 0 {
                rng.below(20)
            } else {
                rng.below(keys)
            } as usize;
            {
                let mut observed = observed.lock().expect("observed lock");
                observed.adds[key] += 1;
                match rng.below(10) {
                    0..=4 => queue.add(key, Source::Change),
                    5 | 6 => queue.add(key, Source::Resync),
                    7 => queue.add(key, Source::Requeue),
                    _ => queue.add_after(key, ms(rng.below(20)), Source::Resync),
                }
            }
            if paused_clock && round % 4 == 0 {
                sleep(ms(rng.below(6))).await;
            } else {
                tokio::task::yield_now().await;
            }
        }
    }

    async fn wait_until_idle(queue: &WorkQueue<usize>, idle: &Notify, limit: Duration) {
        timeout(limit, async {
            loop {
                let mut woken = pin!(idle.notified());
                woken.as_mut().enable();
                if queue.is_empty() && queue.in_flight() == 0 {
                    return;
                }
                woken.await;
            }
        })
        .await
        .expect("the queue drains");
    }

    fn assert_stress_outcome(queue: &WorkQueue<usize>, observed: &Mutex<Observed>) {
        let observed = observed.lock().expect("observed lock");
        assert_eq!(observed.concurrent_handouts, 0, "a key was handed out while in flight");
        let mut added_keys = 0;
        for (key, (adds, covered)) in observed.adds.iter().zip(&observed.covered).enumerate() {
            assert!(
                covered >= adds,
                "key {key}: last handout saw add {covered}, but {adds} adds happened"
            );
            assert_eq!(queue.attempts(&key), 0, "key {key} ended with a success");
            added_keys += u64::from(*adds > 0);
        }
        assert!(observed.handouts >= added_keys);
        assert!(queue.lock().keys.is_empty(), "an idle queue holds no per-key memory");
    }

    #[tokio::test(start_paused = true)]
    async fn many_workers_never_share_a_key_and_process_every_key_after_its_last_add() {
        let queue = queue();
        let observed = Observed::new(1000);
        let idle = Arc::new(Notify::new());
        let workers: Vec<_> = (1..=8u64)
            .map(|seed| {
                tokio::spawn(stress_worker(
                    queue.clone(),
                    observed.clone(),
                    idle.clone(),
                    Rng(seed * 7919),
                    true,
                ))
            })
            .collect();
        stress_producer(queue.clone(), observed.clone(), Rng(0xdead_beef), 20_000, true).await;
        wait_until_idle(&queue, &idle, Duration::from_secs(3600)).await;
        queue.shut_down();
        for worker in workers {
            worker.await.expect("worker finished");
        }
        assert_stress_outcome(&queue, &observed);
        let stats = queue.stats();
        assert_eq!(
            stats.adds_total, 20_000,
            "follow-ups from done() are not counted as adds"
        );
        assert!(stats.retries_total > 0 && stats.conflicts_total > 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn workers_on_many_threads_never_share_a_key_and_process_every_key_after_its_last_add() {
        let queue = WorkQueue::new(QueueConfig {
            backoff_base: Duration::ZERO,
            backoff_max: Duration::ZERO,
        });
        let observed = Observed::new(1000);
        observed.lock().expect("observed lock").requeues_left = 0;
        let idle = Arc::new(Notify::new());
        let workers: Vec<_> = (1..=16u64)
            .map(|seed| {
                tokio::spawn(stress_worker(
                    queue.clone(),
                    observed.clone(),
                    idle.clone(),
                    Rng(seed * 104_729),
                    false,
                ))
            })
            .collect();
        let producers: Vec<_> = (1..=2u64)
            .map(|seed| {
                tokio::spawn(stress_producer(
                    queue.clone(),
                    observed.clone(),
                    Rng(seed * 65_537),
                    10_000,
                    false,
                ))
            })
            .collect();
        for producer in producers {
            producer.await.expect("producer finished");
        }
        wait_until_idle(&queue, &idle, Duration::from_secs(60)).await;
        queue.shut_down();
        for worker in workers {
            worker.await.expect("worker finished");
        }
        assert_stress_outcome(&queue, &observed);
    }

    #[tokio::test(start_paused = true)]
    async fn metrics_follow_depth_adds_and_retries() {
        let metrics = QueueMetrics::default();
        let queue = WorkQueue::with_metrics(QueueConfig::default(), metrics.clone());
        queue.add("a", Source::Change);
        queue.add("a", Source::Change);
        queue.add_after("b", ms(10), Source::Requeue);
        assert_eq!(metrics.adds.get(), 3, "adds count before deduplication");
        assert_eq!(metrics.depth.get(), 2, "one ready, one scheduled");
        let item = queue.next().await.unwrap();
        assert_eq!(metrics.depth.get(), 1, "a handed-out key leaves the depth");
        queue.done(&item.key, FAILURE);
        assert_eq!(metrics.retries.get(), 1);
        assert_eq!(metrics.depth.get(), 2, "the retry is scheduled");
        assert_eq!(Completion::Conflict.result(), "conflict");
        assert_eq!(FAILURE.result(), "error");
        assert_eq!(FAILURE.reason(), Some("PluginError"));
        assert_eq!(Completion::DONE.reason(), None);
    }
}
