//! The host's Prometheus metrics: one registry, typed recording methods, OpenMetrics text exposition.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::plugin::OutboundCounters;
use crate::runtime::{Completion, QueueMetrics};

/// Prefix of every metric name (`wasm_reconciler_reconcile_total`, ...).
const PREFIX: &str = "wasm_reconciler";

/// Upper bounds of the reconcile duration buckets, in seconds: 100 µs to 10 s.
pub const DURATION_BUCKETS_SECONDS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Failure reason that also counts in `wasm_reconciler_plugin_timeouts_total`.
pub const REASON_TIMEOUT: &str = "Timeout";
/// Failure reason that also counts in `wasm_reconciler_plugin_memory_exhausted_total`.
pub const REASON_MEMORY_EXHAUSTED: &str = "MemoryExhausted";
/// Failure reason recorded when an error was reported without one.
const REASON_UNKNOWN: &str = "Unknown";

/// Label values of `wasm_reconciler_reconcile_total`, for removing a plugin's series.
const RECONCILE_RESULTS: [&str; 4] = ["success", "error", "conflict", "deferred"];

/// Label values of `wasm_reconciler_plugin_loads_total`.
const LOAD_RESULTS: [&str; 2] = ["loaded", "refused"];

/// Label values of `wasm_reconciler_outbound_requests_total`.
const OUTBOUND_RESULTS: [&str; 3] = ["sent", "denied", "failed"];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PluginLabels {
    plugin: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PluginResultLabels {
    plugin: String,
    result: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PluginReasonLabels {
    plugin: String,
    reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PluginInfoLabels {
    plugin: String,
    sha256: String,
    wit: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ShardLabels {
    shard: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RoleLabels {
    role: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

/// Label sets of one plugin that cannot be derived from its name alone.
#[derive(Debug, Default)]
struct PluginSeries {
    reasons: BTreeSet<String>,
    info: Option<PluginInfoLabels>,
}

type DurationFamily = Family<PluginLabels, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS_SECONDS)
}

/// The host's metrics. Cheap to clone: every clone records into the same registry.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<MetricsInner>,
}

struct MetricsInner {
    registry: Registry,
    reconcile: Family<PluginResultLabels, Counter>,
    reconcile_errors: Family<PluginReasonLabels, Counter>,
    reconcile_duration: DurationFamily,
    reconcile_skipped: Family<PluginLabels, Counter>,
    workqueue_depth: Family<PluginLabels, Gauge>,
    workqueue_adds: Family<PluginLabels, Counter>,
    workqueue_retries: Family<PluginLabels, Counter>,
    plugin_loads: Family<PluginResultLabels, Counter>,
    plugin_info: Family<PluginInfoLabels, Gauge>,
    plugin_timeouts: Family<PluginLabels, Counter>,
    plugin_memory_exhausted: Family<PluginLabels, Counter>,
    outbound_requests: Family<PluginResultLabels, Counter>,
    leader: Gauge,
    cache_objects: Family<KindLabels, Gauge>,
    shard_objects: Family<ShardLabels, Gauge>,
    shard_moves: Family<ReasonLabels, Counter>,
    shard_roles: Family<RoleLabels, Gauge>,
    series: Mutex<HashMap<String, PluginSeries>>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry with every metric registered and no samples yet (the `leader` gauge reads 0).
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix(PREFIX);
        let reconcile = Family::default();
        registry.register(
            "reconcile",
            "Reconciles finished, by plugin and result (success, error, conflict)",
            reconcile.clone(),
        );
        let reconcile_errors = Family::default();
        registry.register(
            "reconcile_errors",
            "Failed reconciles, by plugin and reason (PluginError, PluginTrapped, Timeout, MemoryExhausted, \
             InvalidOutcome, ScopeDenied, ApplyFailed, ...)",
            reconcile_errors.clone(),
        );
        let reconcile_duration = DurationFamily::new_with_constructor(duration_histogram);
        registry.register_with_unit(
            "reconcile_duration",
            "Time one reconcile took, from dequeue to the last API write, by plugin",
            Unit::Seconds,
            reconcile_duration.clone(),
        );
        let reconcile_skipped = Family::default();
        registry.register(
            "reconcile_skipped",
            "Reconciles not run because the plugin's view, reads and configuration were the same as at its last \
             successful call (contract 0.1 plugins), by plugin",
            reconcile_skipped.clone(),
        );
        let workqueue_depth = Family::default();
        registry.register(
            "workqueue_depth",
            "Keys waiting in the plugin's workqueue",
            workqueue_depth.clone(),
        );
        let workqueue_adds = Family::default();
        registry.register(
            "workqueue_adds",
            "Keys added to the plugin's workqueue",
            workqueue_adds.clone(),
        );
        let workqueue_retries = Family::default();
        registry.register(
            "workqueue_retries",
            "Keys re-queued with back-off after a failed reconcile",
            workqueue_retries.clone(),
        );
        let plugin_loads = Family::default();
        registry.register(
            "plugin_loads",
            "Plugin versions validated for serving, by plugin and result (loaded, refused)",
            plugin_loads.clone(),
        );
        let plugin_info = Family::default();
        registry.register(
            "plugin_info",
            "The plugin version serving: 1 for its digest and WIT contract version",
            plugin_info.clone(),
        );
        let plugin_timeouts = Family::default();
        registry.register(
            "plugin_timeouts",
            "Reconciles interrupted at the plugin's deadline",
            plugin_timeouts.clone(),
        );
        let plugin_memory_exhausted = Family::default();
        registry.register(
            "plugin_memory_exhausted",
            "Reconciles that hit the plugin's memory limit",
            plugin_memory_exhausted.clone(),
        );
        let outbound_requests = Family::default();
        registry.register(
            "outbound_requests",
            "Outbound HTTP requests of contract 0.2 plugins, by plugin and result (sent, denied, failed)",
            outbound_requests.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica holds the leader Lease, else 0",
            leader.clone(),
        );
        let cache_objects = Family::default();
        registry.register(
            "cache_objects",
            "Objects held in the informer cache, by kind",
            cache_objects.clone(),
        );
        let shard_objects = Family::default();
        registry.register(
            "shard_objects",
            "Sharded mode, on the sharder: primaries assigned to each live replica",
            shard_objects.clone(),
        );
        let shard_moves = Family::default();
        registry.register(
            "shard_moves",
            "Sharded mode, on the sharder: primaries (re)assigned, by reason (unassigned, replica_gone, drained)",
            shard_moves.clone(),
        );
        let shard_roles = Family::default();
        registry.register(
            "shard_role",
            "Sharded mode: 1 while this replica holds the role (member: its membership Lease; sharder: the sharder \
             Lease), else 0",
            shard_roles.clone(),
        );
        Self {
            inner: Arc::new(MetricsInner {
                registry,
                reconcile,
                reconcile_errors,
                reconcile_duration,
                reconcile_skipped,
                workqueue_depth,
                workqueue_adds,
                workqueue_retries,
                plugin_loads,
                plugin_info,
                plugin_timeouts,
                plugin_memory_exhausted,
                outbound_requests,
                leader,
                cache_objects,
                shard_objects,
                shard_moves,
                shard_roles,
                series: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Records one finished reconcile and how long it took.
    ///
    /// A failure's reason (as on the object's `Reconciled` condition) counts in `reconcile_errors_total`;
    /// [`REASON_TIMEOUT`] and [`REASON_MEMORY_EXHAUSTED`] also count in `plugin_timeouts_total` and
    /// `plugin_memory_exhausted_total`.
    pub fn record_reconcile(&self, plugin: &str, completion: &Completion, duration: Duration) {
        let inner = &self.inner;
        inner
            .reconcile
            .get_or_create(&PluginResultLabels {
                plugin: plugin.to_owned(),
                result: completion.result(),
            })
            .inc();
        inner
            .reconcile_duration
            .get_or_create(&plugin_labels(plugin))
            .observe(duration.as_secs_f64());
        let Completion::Failure { reason } = completion else {
            return;
        };
        let reason = if reason.is_empty() { REASON_UNKNOWN } else { reason };
        self.with_series(plugin, |series| {
            if !series.reasons.contains(reason) {
                series.reasons.insert(reason.to_owned());
            }
        });
        inner
            .reconcile_errors
            .get_or_create(&PluginReasonLabels {
                plugin: plugin.to_owned(),
                reason: reason.to_owned(),
            })
            .inc();
        match reason {
            REASON_TIMEOUT => {
                inner.plugin_timeouts.get_or_create(&plugin_labels(plugin)).inc();
            }
            REASON_MEMORY_EXHAUSTED => {
                inner
                    .plugin_memory_exhausted
                    .get_or_create(&plugin_labels(plugin))
                    .inc();
            }
            _ => {}
        }
    }

    /// How many reconciles of `plugin` have failed so far (`reconcile_total{result="error"}`).
    pub fn reconcile_errors(&self, plugin: &str) -> u64 {
        self.inner
            .reconcile
            .get(&PluginResultLabels {
                plugin: plugin.to_owned(),
                result: "error",
            })
            .map_or(0, |counter| counter.get())
    }

    /// The series `plugin`'s skipped reconciles count into (`reconcile_skipped_total`), present from now on.
    pub fn skipped_counter(&self, plugin: &str) -> Counter {
        self.inner
            .reconcile_skipped
            .get_or_create(&plugin_labels(plugin))
            .clone()
    }

    /// The series `plugin`'s workqueue reports to (`workqueue_depth`, `workqueue_adds_total`,
    /// `workqueue_retries_total`); the queue keeps them current itself.
    pub fn queue_metrics(&self, plugin: &str) -> QueueMetrics {
        let labels = plugin_labels(plugin);
        let inner = &self.inner;
        QueueMetrics {
            depth: inner.workqueue_depth.get_or_create(&labels).clone(),
            adds: inner.workqueue_adds.get_or_create(&labels).clone(),
            retries: inner.workqueue_retries.get_or_create(&labels).clone(),
        }
    }

    /// The series `plugin`'s outbound requests count into (`outbound_requests_total` by result), all present from
    /// now on, at zero until a request is recorded.
    pub fn outbound_counters(&self, plugin: &str) -> OutboundCounters {
        let counter = |result| {
            self.inner
                .outbound_requests
                .get_or_create(&PluginResultLabels {
                    plugin: plugin.to_owned(),
                    result,
                })
                .clone()
        };
        OutboundCounters {
            sent: counter(OUTBOUND_RESULTS[0]),
            denied: counter(OUTBOUND_RESULTS[1]),
            failed: counter(OUTBOUND_RESULTS[2]),
            writes: Counter::default(),
        }
    }

    /// Counts a plugin version that was validated: `loaded` when it now serves, `refused` when it was rejected.
    pub fn record_plugin_load(&self, plugin: &str, loaded: bool) {
        let result = if loaded { LOAD_RESULTS[0] } else { LOAD_RESULTS[1] };
        self.inner
            .plugin_loads
            .get_or_create(&PluginResultLabels {
                plugin: plugin.to_owned(),
                result,
            })
            .inc();
    }

    /// Marks the version now serving for `plugin` (`plugin_info` = 1) and removes the series of the version
    /// it replaced.
    pub fn set_plugin_info(&self, plugin: &str, sha256: &str, wit: &str) {
        let labels = PluginInfoLabels {
            plugin: plugin.to_owned(),
            sha256: sha256.to_owned(),
            wit: wit.to_owned(),
        };
        let previous = self.with_series(plugin, |series| series.info.replace(labels.clone()));
        if let Some(previous) = previous.filter(|previous| *previous != labels) {
            self.inner.plugin_info.remove(&previous);
        }
        self.inner.plugin_info.get_or_create(&labels).set(1);
    }

    /// Removes every series of `plugin`: call it when its controller stops for good (its ConfigMap was deleted).
    pub fn forget_plugin(&self, plugin: &str) {
        let inner = &self.inner;
        let series = inner
            .series
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(plugin)
            .unwrap_or_default();
        for result in RECONCILE_RESULTS {
            inner.reconcile.remove(&PluginResultLabels {
                plugin: plugin.to_owned(),
                result,
            });
        }
        for reason in series.reasons {
            inner.reconcile_errors.remove(&PluginReasonLabels {
                plugin: plugin.to_owned(),
                reason,
            });
        }
        for result in LOAD_RESULTS {
            inner.plugin_loads.remove(&PluginResultLabels {
                plugin: plugin.to_owned(),
                result,
            });
        }
        for result in OUTBOUND_RESULTS {
            inner.outbound_requests.remove(&PluginResultLabels {
                plugin: plugin.to_owned(),
                result,
            });
        }
        if let Some(info) = series.info {
            inner.plugin_info.remove(&info);
        }
        let labels = plugin_labels(plugin);
        inner.reconcile_duration.remove(&labels);
        inner.reconcile_skipped.remove(&labels);
        inner.workqueue_depth.remove(&labels);
        inner.workqueue_adds.remove(&labels);
        inner.workqueue_retries.remove(&labels);
        inner.plugin_timeouts.remove(&labels);
        inner.plugin_memory_exhausted.remove(&labels);
    }

    /// Sets the `leader` gauge: 1 while this replica holds the Lease.
    pub fn set_leader(&self, leader: bool) {
        self.inner.leader.set(i64::from(leader));
    }

    /// Sets the primaries assigned per live replica (replicas not listed are dropped from the family).
    pub fn set_shard_objects<'a>(&self, shares: impl IntoIterator<Item = (&'a str, usize)>) {
        self.inner.shard_objects.clear();
        for (shard, count) in shares {
            self.inner
                .shard_objects
                .get_or_create(&ShardLabels {
                    shard: shard.to_owned(),
                })
                .set(saturating_i64(count));
        }
    }

    /// Counts one primary (re)assigned by the sharder.
    pub fn record_shard_move(&self, reason: &'static str) {
        self.inner.shard_moves.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// Sets whether this replica holds a sharding role: `member` or `sharder`.
    pub fn set_shard_role(&self, role: &'static str, held: bool) {
        self.inner
            .shard_roles
            .get_or_create(&RoleLabels { role })
            .set(i64::from(held));
    }

    /// Sets how many objects of `kind` the informer cache holds.
    pub fn set_cached_objects(&self, kind: &str, count: usize) {
        self.inner
            .cache_objects
            .get_or_create(&KindLabels { kind: kind.to_owned() })
            .set(saturating_i64(count));
    }

    /// The whole registry in the OpenMetrics text format, ending with `# EOF`.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail, and every metric here has classic buckets only, which the text
        // encoder always accepts.
        prometheus_client::encoding::text::encode(&mut text, &self.inner.registry)
            .expect("encoding metrics into a String cannot fail");
        text
    }

    fn with_series<T>(&self, plugin: &str, change: impl FnOnce(&mut PluginSeries) -> T) -> T {
        let mut series = self.inner.series.lock().unwrap_or_else(PoisonError::into_inner);
        change(series.entry(plugin.to_owned()).or_default())
    }
}

fn plugin_labels(plugin: &str) -> PluginLabels {
    PluginLabels {
        plugin: plugin.to_owned(),
    }
}

fn saturating_i64(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(reason: &'static str) -> Completion {
        Completion::Failure { reason }
    }

    /// The sample lines of the exposition (no `#` metadata).
    fn samples(metrics: &Metrics) -> Vec<String> {
        metrics
            .encode()
            .lines()
            .filter(|line| !line.starts_with('#'))
            .map(str::to_owned)
            .collect()
    }

    fn has_sample(metrics: &Metrics, expected: &str) -> bool {
        samples(metrics).iter().any(|line| line == expected)
    }

    fn has_series_of(metrics: &Metrics, plugin: &str) -> bool {
        let label = format!("plugin=\"{plugin}\"");
        samples(metrics).iter().any(|line| line.contains(&label))
    }

    #[test]
    fn outbound_requests_count_by_result_from_zero_and_go_with_the_plugin() {
        let metrics = Metrics::new();
        let counters = metrics.outbound_counters("dns");
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_outbound_requests_total{plugin="dns",result="denied"} 0"#
        ));
        counters.denied.inc();
        counters.sent.inc();
        counters.sent.inc();
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_outbound_requests_total{plugin="dns",result="denied"} 1"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_outbound_requests_total{plugin="dns",result="sent"} 2"#
        ));
        // A later version of the plugin counts into the same series.
        metrics.outbound_counters("dns").failed.inc();
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_outbound_requests_total{plugin="dns",result="failed"} 1"#
        ));
        metrics.forget_plugin("dns");
        assert!(!has_series_of(&metrics, "dns"));
    }

    #[test]
    fn a_fresh_registry_shows_only_the_leader_gauge() {
        assert_eq!(
            Metrics::new().encode(),
            "# HELP wasm_reconciler_leader 1 while this replica holds the leader Lease, else 0.\n\
             # TYPE wasm_reconciler_leader gauge\n\
             wasm_reconciler_leader 0\n\
             # EOF\n"
        );
    }

    #[test]
    fn every_metric_has_its_name_and_type_once_recorded() {
        let metrics = Metrics::new();
        metrics.record_reconcile("p", &failed(REASON_TIMEOUT), Duration::from_secs(1));
        metrics.record_reconcile("p", &failed(REASON_MEMORY_EXHAUSTED), Duration::ZERO);
        let queue = metrics.queue_metrics("p");
        queue.depth.set(0);
        queue.adds.inc();
        queue.retries.inc();
        metrics.record_plugin_load("p", true);
        metrics.set_plugin_info("p", "abcd", "0.1.0");
        metrics.set_cached_objects("v1/ConfigMap", 1);
        metrics.set_shard_objects([("host-a", 2)]);
        metrics.record_shard_move("unassigned");
        metrics.set_shard_role("sharder", true);
        let text = metrics.encode();
        for (name, kind) in [
            ("wasm_reconciler_reconcile", "counter"),
            ("wasm_reconciler_reconcile_errors", "counter"),
            ("wasm_reconciler_reconcile_duration_seconds", "histogram"),
            ("wasm_reconciler_workqueue_depth", "gauge"),
            ("wasm_reconciler_workqueue_adds", "counter"),
            ("wasm_reconciler_workqueue_retries", "counter"),
            ("wasm_reconciler_plugin_loads", "counter"),
            ("wasm_reconciler_plugin_info", "gauge"),
            ("wasm_reconciler_plugin_timeouts", "counter"),
            ("wasm_reconciler_plugin_memory_exhausted", "counter"),
            ("wasm_reconciler_leader", "gauge"),
            ("wasm_reconciler_cache_objects", "gauge"),
            ("wasm_reconciler_shard_objects", "gauge"),
            ("wasm_reconciler_shard_moves", "counter"),
            ("wasm_reconciler_shard_role", "gauge"),
        ] {
            assert!(
                text.contains(&format!("# TYPE {name} {kind}\n")),
                "{name} missing from:\n{text}"
            );
        }
        assert!(text.contains("# UNIT wasm_reconciler_reconcile_duration_seconds seconds\n"));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn a_successful_reconcile_counts_by_result_and_fills_the_histogram() {
        let metrics = Metrics::new();
        metrics.record_reconcile("webapp", &Completion::DONE, Duration::from_millis(3));
        metrics.record_reconcile("webapp", &Completion::DONE, Duration::from_millis(30));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_reconcile_total{plugin="webapp",result="success"} 2"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_reconcile_duration_seconds_count{plugin="webapp"} 2"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_reconcile_duration_seconds_sum{plugin="webapp"} 0.033"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_reconcile_duration_seconds_bucket{le="0.0025",plugin="webapp"} 0"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_reconcile_duration_seconds_bucket{le="0.005",plugin="webapp"} 1"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_reconcile_duration_seconds_bucket{le="+Inf",plugin="webapp"} 2"#
        ));
        assert!(
            !samples(&metrics)
                .iter()
                .any(|line| line.starts_with("wasm_reconciler_reconcile_errors_total"))
        );
    }

    #[test]
    fn the_duration_buckets_run_from_100_microseconds_to_10_seconds() {
        let metrics = Metrics::new();
        metrics.record_reconcile("p", &Completion::DONE, Duration::from_micros(50));
        let buckets: Vec<String> = samples(&metrics)
            .into_iter()
            .filter(|line| line.starts_with("wasm_reconciler_reconcile_duration_seconds_bucket"))
            .collect();
        assert_eq!(buckets.len(), DURATION_BUCKETS_SECONDS.len() + 1, "{buckets:#?}");
        assert!(buckets[0].contains(r#"le="0.0001""#), "{}", buckets[0]);
        assert!(buckets[buckets.len() - 2].contains(r#"le="10.0""#), "{buckets:#?}");
        assert!(buckets.iter().all(|line| line.ends_with(" 1")));
    }

    #[test]
    fn an_error_counts_its_reason() {
        let metrics = Metrics::new();
        metrics.record_reconcile("cms", &failed("PluginError"), Duration::from_millis(1));
        metrics.record_reconcile("cms", &failed("ScopeDenied"), Duration::from_millis(1));
        metrics.record_reconcile("cms", &failed(""), Duration::from_millis(1));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_reconcile_total{plugin="cms",result="error"} 3"#
        ));
        for reason in ["PluginError", "ScopeDenied", "Unknown"] {
            let line = format!(r#"wasm_reconciler_reconcile_errors_total{{plugin="cms",reason="{reason}"}} 1"#);
            assert!(has_sample(&metrics, &line), "{line}");
        }
        assert!(
            !samples(&metrics)
                .iter()
                .any(|line| line.starts_with("wasm_reconciler_plugin_timeouts_total"))
        );
    }

    #[test]
    fn timeouts_and_memory_exhaustion_have_their_own_counters() {
        let metrics = Metrics::new();
        metrics.record_reconcile("p", &failed(REASON_TIMEOUT), Duration::from_secs(1));
        metrics.record_reconcile("p", &failed(REASON_TIMEOUT), Duration::from_secs(1));
        metrics.record_reconcile("p", &failed(REASON_MEMORY_EXHAUSTED), Duration::ZERO);
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_plugin_timeouts_total{plugin="p"} 2"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_plugin_memory_exhausted_total{plugin="p"} 1"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_reconcile_errors_total{plugin="p",reason="Timeout"} 2"#
        ));
    }

    #[test]
    fn a_conflict_is_not_an_error() {
        let metrics = Metrics::new();
        metrics.record_reconcile("p", &Completion::Conflict, Duration::from_millis(2));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_reconcile_total{plugin="p",result="conflict"} 1"#
        ));
        assert!(
            !samples(&metrics)
                .iter()
                .any(|line| line.starts_with("wasm_reconciler_reconcile_errors_total"))
        );
    }

    #[test]
    fn workqueue_metrics() {
        let metrics = Metrics::new();
        let queue = crate::runtime::WorkQueue::with_metrics(Default::default(), metrics.queue_metrics("p"));
        queue.add("a", crate::runtime::Source::Change);
        queue.add("b", crate::runtime::Source::Change);
        queue.add("c", crate::runtime::Source::Change);
        let item = queue.try_next().unwrap();
        queue.done(&item.key, failed("PluginError"));
        assert_eq!(queue.len(), 3, "two ready, one waiting for its retry");
        assert!(has_sample(&metrics, r#"wasm_reconciler_workqueue_depth{plugin="p"} 3"#));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_workqueue_adds_total{plugin="p"} 3"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_workqueue_retries_total{plugin="p"} 1"#
        ));
    }

    #[test]
    fn plugin_loads_count_by_result() {
        let metrics = Metrics::new();
        metrics.record_plugin_load("p", true);
        metrics.record_plugin_load("p", false);
        metrics.record_plugin_load("p", false);
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_plugin_loads_total{plugin="p",result="loaded"} 1"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_plugin_loads_total{plugin="p",result="refused"} 2"#
        ));
    }

    #[test]
    fn plugin_info_shows_only_the_version_serving() {
        let metrics = Metrics::new();
        metrics.set_plugin_info("p", "aaaa", "0.1.0");
        metrics.set_plugin_info("other", "cccc", "0.1.0");
        metrics.set_plugin_info("p", "bbbb", "0.1.0");
        metrics.set_plugin_info("p", "bbbb", "0.1.0");
        let info: Vec<String> = samples(&metrics)
            .into_iter()
            .filter(|line| line.starts_with("wasm_reconciler_plugin_info"))
            .collect();
        assert_eq!(
            info.len(),
            2,
            "one series per plugin, the old version's gone: {info:#?}"
        );
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_plugin_info{plugin="p",sha256="bbbb",wit="0.1.0"} 1"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_plugin_info{plugin="other",sha256="cccc",wit="0.1.0"} 1"#
        ));
    }

    #[test]
    fn forgetting_a_plugin_removes_all_its_series_and_keeps_the_others() {
        let metrics = Metrics::new();
        for plugin in ["gone", "stays"] {
            metrics.record_reconcile(plugin, &Completion::DONE, Duration::from_millis(1));
            metrics.record_reconcile(plugin, &failed(REASON_TIMEOUT), Duration::from_secs(1));
            metrics.record_reconcile(plugin, &failed(REASON_MEMORY_EXHAUSTED), Duration::ZERO);
            metrics.record_reconcile(plugin, &Completion::Conflict, Duration::ZERO);
            let deferred = Completion::Deferred {
                after: Duration::from_secs(1),
                reason: "Fenced",
            };
            metrics.record_reconcile(plugin, &deferred, Duration::ZERO);
            let queue = metrics.queue_metrics(plugin);
            queue.depth.set(1);
            queue.adds.inc();
            queue.retries.inc();
            metrics.record_plugin_load(plugin, true);
            metrics.record_plugin_load(plugin, false);
            metrics.set_plugin_info(plugin, "abcd", "0.1.0");
        }
        metrics.forget_plugin("gone");
        assert!(!has_series_of(&metrics, "gone"), "{}", metrics.encode());
        assert!(has_series_of(&metrics, "stays"));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_plugin_info{plugin="stays",sha256="abcd",wit="0.1.0"} 1"#
        ));

        // A plugin that comes back starts from zero.
        metrics.record_reconcile("gone", &Completion::DONE, Duration::ZERO);
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_reconcile_total{plugin="gone",result="success"} 1"#
        ));
    }

    #[test]
    fn leader_and_cache_gauges() {
        let metrics = Metrics::new();
        metrics.set_leader(true);
        metrics.set_cached_objects("apps/v1/Deployment", 12);
        metrics.set_cached_objects("v1/ConfigMap", 0);
        assert!(has_sample(&metrics, "wasm_reconciler_leader 1"));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_cache_objects{kind="apps/v1/Deployment"} 12"#
        ));
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_cache_objects{kind="v1/ConfigMap"} 0"#
        ));
        metrics.set_leader(false);
        assert!(has_sample(&metrics, "wasm_reconciler_leader 0"));
    }

    #[test]
    fn shard_gauges_follow_the_live_replicas() {
        let metrics = Metrics::new();
        metrics.set_shard_objects([("host-a", 2), ("host-b", 1)]);
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_shard_objects{shard="host-a"} 2"#
        ));
        metrics.set_shard_objects([("host-b", 3)]);
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_shard_objects{shard="host-b"} 3"#
        ));
        assert!(
            !metrics.encode().contains(r#"shard="host-a""#),
            "a replica that left drops out"
        );
        metrics.record_shard_move("drained");
        metrics.record_shard_move("drained");
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_shard_moves_total{reason="drained"} 2"#
        ));
        metrics.set_shard_role("member", true);
        assert!(has_sample(&metrics, r#"wasm_reconciler_shard_role{role="member"} 1"#));
    }

    #[test]
    fn clones_record_into_the_same_registry() {
        let metrics = Metrics::new();
        let clone = metrics.clone();
        clone.queue_metrics("p").adds.inc();
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_workqueue_adds_total{plugin="p"} 1"#
        ));
    }

    #[test]
    fn label_values_are_escaped() {
        let metrics = Metrics::new();
        metrics.set_cached_objects("odd\"kind", 1);
        assert!(has_sample(
            &metrics,
            r#"wasm_reconciler_cache_objects{kind="odd\"kind"} 1"#
        ));
    }
}
