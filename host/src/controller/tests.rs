//! The controller against a fake applier: what it hands over (primary, world view, plugin call), and how the
//! applier's answer drives its queue — without an API server.

use std::collections::VecDeque;
use std::sync::Mutex;

use futures::future::BoxFuture;
use serde_json::json;

use super::*;
use crate::plugin::Limits;

/// What the fake applier saw of one reconcile.
#[derive(Debug, Clone)]
struct Seen {
    key: ObjectKey,
    /// The echo plugin's status: what its world view held.
    echo: Value,
}

/// Calls the plugin with `deleting = false` (or not at all for primaries it is told to skip), records the outcome
/// and answers with scripted completions (then `DONE`).
#[derive(Default)]
struct FakeApplier {
    /// Every primary handed over, in the order the workers took them from the queue (on a current-thread
    /// runtime a worker goes from the queue to the applier without yielding).
    started: Mutex<Vec<ObjectKey>>,
    seen: Mutex<Vec<Seen>>,
    refused: Mutex<Vec<String>>,
    answers: Mutex<VecDeque<Completion>>,
    forgotten: Mutex<Vec<ObjectKey>>,
    skip_plugin: bool,
}

impl FakeApplier {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Apply for FakeApplier {
    fn reconcile<'a>(&'a self, primary: Arc<CachedObject>, call: PluginCall<'a>) -> BoxFuture<'a, Completion> {
        self.started.lock().unwrap().push(primary.key.clone());
        async move {
            let echo = if self.skip_plugin {
                Value::Null
            } else {
                match call(primary.clone(), false, crate::lease::Ticket::unfenced()).await {
                    Ok(outcome) => outcome.status.expect("the echo plugin writes a status")["echo"].clone(),
                    Err(error) => {
                        self.refused
                            .lock()
                            .unwrap()
                            .push(format!("{}: {error}", error.reason()));
                        self.seen.lock().unwrap().push(Seen {
                            key: primary.key.clone(),
                            echo: Value::Null,
                        });
                        return Completion::Failure { reason: error.reason() };
                    }
                }
            };
            self.seen.lock().unwrap().push(Seen {
                key: primary.key.clone(),
                echo,
            });
            self.answers.lock().unwrap().pop_front().unwrap_or(Completion::DONE)
        }
        .boxed()
    }

    fn forget(&self, primary: &ObjectKey) {
        self.forgotten.lock().unwrap().push(primary.clone());
    }

    fn writer_id(&self) -> u64 {
        7
    }
}

struct Fixture {
    echoes: Arc<KindCache>,
    config_maps: Arc<KindCache>,
    caches: HashMap<Gvk, Arc<KindCache>>,
}

impl Fixture {
    fn new() -> Self {
        let spec = NativePlugin::new::<test_guest_echo::Echo>(Limits::default())
            .spec()
            .clone();
        let caches: HashMap<Gvk, Arc<KindCache>> = std::iter::once(&spec.primary)
            .chain(&spec.owns)
            .chain(&spec.reads)
            .map(|gvk| (gvk.clone(), KindCache::detached(gvk.clone(), true, None)))
            .collect();
        Self {
            echoes: caches[&spec.primary].clone(),
            config_maps: caches[&Gvk::new("", "v1", "ConfigMap")].clone(),
            caches,
        }
    }

    fn echo(&self, name: &str, rv: u32) {
        self.echoes.insert_json(Self::echo_json(name, rv));
    }

    /// An Echo carrying the plugin's finalizer, as the applier leaves it.
    fn finalized_echo(&self, name: &str, rv: u32) {
        self.echoes.insert_json(json!({
            "apiVersion": "test.wasm-reconciler.io/v1", "kind": "Echo",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                         "resourceVersion": rv.to_string(), "generation": 1,
                         "finalizers": ["test.wasm-reconciler.io/echo"]},
        }));
    }

    fn child_of(&self, owner: &str, name: &str, rv: u32) {
        self.config_maps.insert_json(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                         "resourceVersion": rv.to_string(),
                         "ownerReferences": [{"apiVersion": "test.wasm-reconciler.io/v1", "kind": "Echo",
                                              "name": owner, "uid": format!("uid-{owner}"), "controller": true}]},
        }));
    }

    fn start(&self, applier: Arc<FakeApplier>, config: Value) -> Controller {
        self.start_with(applier, config, None)
    }

    fn start_with(&self, applier: Arc<FakeApplier>, config: Value, metrics: Option<Metrics>) -> Controller {
        self.start_with_options(applier, config, metrics, ControllerOptions::default())
    }

    fn start_with_options(
        &self,
        applier: Arc<FakeApplier>,
        config: Value,
        metrics: Option<Metrics>,
        options: ControllerOptions,
    ) -> Controller {
        let version = Version::new(
            Logic::Native(NativePlugin::new::<test_guest_echo::Echo>(Limits::default())),
            &config,
        );
        Controller::with_applier(
            "echo",
            version,
            self.caches.clone(),
            applier,
            options,
            metrics,
            (None, None),
        )
    }

    /// An Echo as the API server would list or watch it.
    fn echo_json(name: &str, rv: u32) -> Value {
        json!({
            "apiVersion": "test.wasm-reconciler.io/v1", "kind": "Echo",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                         "resourceVersion": rv.to_string(), "generation": 1},
        })
    }
}

/// Waits (up to ten seconds) until the applier has seen `count` reconciles.
async fn wait_for_reconciles(applier: &FakeApplier, count: usize) -> Vec<Seen> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = applier.seen();
        if seen.len() >= count {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "saw {} of {count} reconciles: {seen:?}",
            seen.len()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("ns"), name)
}

#[tokio::test]
async fn each_primary_is_handed_over_with_its_world_view() {
    let fixture = Fixture::new();
    fixture.echo("a", 1);
    fixture.child_of("a", "a-0", 2);
    fixture.child_of("someone-else", "b-0", 3);
    let applier = Arc::new(FakeApplier::default());
    let controller = fixture.start(applier.clone(), json!({"greeting": "hi"}));

    let seen = wait_for_reconciles(&applier, 1).await;
    assert_eq!(seen[0].key, key("a"));
    assert_eq!(seen[0].echo["name"], "a");
    assert_eq!(
        seen[0].echo["children"],
        json!(["a-0"]),
        "only the children the primary controls"
    );
    assert_eq!(seen[0].echo["config"], json!({"greeting": "hi"}));
    assert_eq!(seen[0].echo["attempt"], 0);
    assert_eq!(seen[0].echo["deleting"], false);
    controller.stop().await;
}

#[tokio::test]
async fn a_failure_comes_back_as_the_next_attempt() {
    let fixture = Fixture::new();
    fixture.echo("a", 1);
    let applier = Arc::new(FakeApplier {
        answers: Mutex::new([Completion::Failure { reason: "PluginError" }].into()),
        ..FakeApplier::default()
    });
    let controller = fixture.start(applier.clone(), json!({}));

    let seen = wait_for_reconciles(&applier, 2).await;
    assert_eq!(seen[0].echo["attempt"], 0);
    assert_eq!(
        seen[1].echo["attempt"], 1,
        "the retry after backoff carries the failure count"
    );
    controller.stop().await;
}

#[tokio::test]
async fn a_requeue_request_reconciles_again() {
    let fixture = Fixture::new();
    fixture.echo("a", 1);
    let applier = Arc::new(FakeApplier {
        answers: Mutex::new(
            [Completion::Success {
                requeue_after: Some(Duration::from_millis(20)),
            }]
            .into(),
        ),
        ..FakeApplier::default()
    });
    let controller = fixture.start(applier.clone(), json!({}));

    let seen = wait_for_reconciles(&applier, 2).await;
    assert_eq!(seen[1].echo["attempt"], 0, "a requeue is not a failure");
    controller.stop().await;
}

#[tokio::test]
async fn own_writes_are_not_reconciled_again_but_other_changes_are() {
    let fixture = Fixture::new();
    fixture.echo("a", 1);
    let applier = Arc::new(FakeApplier {
        skip_plugin: true,
        ..FakeApplier::default()
    });
    let controller = fixture.start(applier.clone(), json!({}));
    wait_for_reconciles(&applier, 1).await;
    while controller.shared.queue.in_flight() > 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    let write = |rv: u32| {
        serde_json::from_value(json!({
            "apiVersion": "test.wasm-reconciler.io/v1", "kind": "Echo",
            "metadata": {"name": "a", "namespace": "ns", "uid": "uid-a", "resourceVersion": rv.to_string()},
            "status": {"seen": rv},
        }))
        .unwrap()
    };
    // Routing happens as the cache publishes the change, so the queue shows it at once.
    fixture.echoes.record_write(write(2), Some(applier.writer_id()));
    assert_eq!(controller.queue_depth(), 0, "the applier's own status write");
    fixture.echoes.record_write(write(3), None);
    assert_eq!(
        controller.queue_depth(),
        1,
        "a write that carried someone else's change"
    );
    wait_for_reconciles(&applier, 2).await;

    // A child's change reconciles its owner.
    fixture.child_of("a", "a-0", 4);
    wait_for_reconciles(&applier, 3).await;
    controller.stop().await;
}

#[tokio::test]
async fn a_primary_that_is_gone_is_forgotten() {
    let fixture = Fixture::new();
    fixture.echo("a", 1);
    let applier = Arc::new(FakeApplier::default());
    let controller = fixture.start(applier.clone(), json!({}));
    wait_for_reconciles(&applier, 1).await;

    fixture.echoes.record_delete(&key("a"), "uid-a");
    let deadline = Instant::now() + Duration::from_secs(10);
    while applier.forgotten.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the applier was never told to forget");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(*applier.forgotten.lock().unwrap(), [key("a")]);
    assert_eq!(applier.seen().len(), 1, "a gone primary is not handed over");
    controller.stop().await;
}

#[tokio::test]
async fn a_swap_reconciles_every_primary_with_the_new_version() {
    let fixture = Fixture::new();
    fixture.echo("a", 1);
    fixture.echo("b", 1);
    let applier = Arc::new(FakeApplier::default());
    let controller = fixture.start(applier.clone(), json!({"v": 1}));
    wait_for_reconciles(&applier, 2).await;

    controller.swap(Version::new(
        Logic::Native(NativePlugin::new::<test_guest_echo::Echo>(Limits::default())),
        &json!({"v": 2}),
    ));
    let seen = wait_for_reconciles(&applier, 4).await;
    let mut swapped: Vec<String> = seen[2..]
        .iter()
        .map(|seen| {
            assert_eq!(seen.echo["config"], json!({"v": 2}));
            seen.key.name.to_string()
        })
        .collect();
    swapped.sort();
    assert_eq!(swapped, ["a", "b"]);
    controller.stop().await;
}

#[tokio::test]
async fn a_kind_the_host_may_not_watch_fails_the_call_without_running_the_plugin() {
    let fixture = Fixture::new();
    fixture.echo("a", 1);
    fixture.caches[&Gvk::new("", "v1", "Secret")].forbid("secrets is forbidden: cannot list resource \"secrets\"");
    let applier = Arc::new(FakeApplier::default());
    let controller = fixture.start(applier.clone(), json!({}));

    // Each refusal backs off twice as long: after ten (5 ms, 10 ms, ... 2.56 s) the next retry is seconds away.
    let seen = wait_for_reconciles(&applier, 10).await;
    assert!(seen.iter().all(|seen| seen.echo == Value::Null), "the plugin never ran");
    assert_eq!(
        applier.refused.lock().unwrap()[0],
        "Forbidden: secrets is forbidden: cannot list resource \"secrets\""
    );

    // Once the kind can be watched, the primary is reconciled again at once, not after the backoff.
    let healed = Instant::now();
    fixture.caches[&Gvk::new("", "v1", "Secret")].heal();
    let deadline = healed + Duration::from_millis(1500);
    loop {
        if applier.seen().iter().any(|seen| seen.echo["name"] == "a") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not reconciled within 1.5 s of the kind becoming watchable"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    controller.stop().await;
}

/// Waits (up to ten seconds) until `counter` reaches `count`.
async fn wait_for_count(counter: &prometheus_client::metrics::counter::Counter, count: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while counter.get() < count {
        assert!(Instant::now() < deadline, "counted {} of {count}", counter.get());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_call_given_what_the_last_successful_one_was_given_is_skipped() {
    let fixture = Fixture::new();
    fixture.finalized_echo("a", 1);
    fixture.child_of("a", "a-0", 2);
    let applier = Arc::new(FakeApplier::default());
    let metrics = Metrics::new();
    let skipped = metrics.skipped_counter("echo");
    let config = json!({"reads": [{"apiVersion": "v1", "kind": "Service", "namespace": "ns", "name": "s"}]});
    let controller = fixture.start_with(applier.clone(), config, Some(metrics));
    wait_for_reconciles(&applier, 1).await;

    // A resync with nothing changed: not called, counted.
    controller.shared.enqueue_all(Source::Resync);
    wait_for_count(&skipped, 1).await;
    assert_eq!(applier.seen().len(), 1);

    // Whatever the plugin is given changes — a child, an object it read (absent before), the primary — it is called.
    fixture.child_of("a", "a-0", 3);
    wait_for_reconciles(&applier, 2).await;
    fixture.caches[&Gvk::new("", "v1", "Service")].insert_json(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "s", "namespace": "ns", "uid": "uid-s", "resourceVersion": "4"},
    }));
    wait_for_reconciles(&applier, 3).await;
    fixture.finalized_echo("a", 5);
    wait_for_reconciles(&applier, 4).await;
    controller.shared.enqueue_all(Source::Resync);
    wait_for_count(&skipped, 2).await;
    assert_eq!(applier.seen().len(), 4);

    // A reconcile that failed (here: its writes) is not remembered: the retry calls the plugin.
    applier
        .answers
        .lock()
        .unwrap()
        .push_back(Completion::Failure { reason: "ApplyFailed" });
    fixture.child_of("a", "a-0", 6);
    wait_for_reconciles(&applier, 6).await;
    assert_eq!(skipped.get(), 2);

    // Without its finalizer (someone removed it), the primary is always handed to the applier, which adds it.
    fixture.echo("a", 7);
    wait_for_reconciles(&applier, 7).await;
    controller.shared.enqueue_all(Source::Resync);
    wait_for_reconciles(&applier, 8).await;
    assert_eq!(skipped.get(), 2);
    controller.stop().await;
}

#[tokio::test]
async fn a_plugin_asking_to_be_called_again_is_never_skipped() {
    let fixture = Fixture::new();
    fixture.finalized_echo("a", 1);
    let applier = Arc::new(FakeApplier::default());
    let metrics = Metrics::new();
    let skipped = metrics.skipped_counter("echo");
    let controller = fixture.start_with(applier.clone(), json!({"requeueAfterMs": 3_600_000}), Some(metrics));
    wait_for_reconciles(&applier, 1).await;
    controller.shared.enqueue_all(Source::Resync);
    wait_for_reconciles(&applier, 2).await;
    assert_eq!(skipped.get(), 0);
    controller.stop().await;
}

/// Waits (up to ten seconds) until the controller has nothing queued or in flight.
async fn wait_for_idle(controller: &Controller) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while controller.queue_depth() > 0 || controller.shared.queue.in_flight() > 0 {
        assert!(Instant::now() < deadline, "the queue did not drain");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Primaries in the backlog tests.
const BACKLOG: usize = 1000;

fn backlog_name(index: usize) -> String {
    format!("p-{index:04}")
}

/// Where among the reconciles after the first `skip` the one of `name` was handed over.
fn handover_position(applier: &FakeApplier, skip: usize, name: &str) -> usize {
    applier.started.lock().unwrap()[skip..]
        .iter()
        .position(|key| *key == self::key(name))
        .expect("the edited primary was reconciled")
}

/// A relist of every primary (all changed while the watch was down), then an edit of one of them by watch event:
/// where the edit's reconcile is handed over, with the priorities and as before them (every event high priority).
async fn edit_during_relist(bulk_as_changes: bool) -> usize {
    let fixture = Fixture::new();
    for index in 0..BACKLOG {
        fixture.echo(&backlog_name(index), 1);
    }
    let applier = Arc::new(FakeApplier::default());
    let options = ControllerOptions {
        bulk_as_changes,
        ..ControllerOptions::default()
    };
    let controller = fixture.start_with_options(applier.clone(), json!({}), None, options);
    wait_for_reconciles(&applier, BACKLOG).await;
    wait_for_idle(&controller).await;

    // No worker runs between these two calls: the relist is all queued when the edit arrives.
    fixture.echoes.relist_json(
        (0..BACKLOG)
            .map(|index| Fixture::echo_json(&backlog_name(index), 2))
            .collect(),
    );
    assert_eq!(controller.queue_depth(), BACKLOG);
    fixture.echo(&backlog_name(700), 3);
    assert_eq!(controller.queue_depth(), BACKLOG, "the edited primary is queued once");

    wait_for_reconciles(&applier, 2 * BACKLOG).await;
    wait_for_idle(&controller).await;
    assert_eq!(
        applier.seen().len(),
        2 * BACKLOG,
        "one reconcile per primary for the relist and the edit"
    );
    let position = handover_position(&applier, BACKLOG, &backlog_name(700));
    controller.stop().await;
    position
}

#[tokio::test]
async fn an_edit_during_a_relist_is_reconciled_before_the_relisted_backlog() {
    assert_eq!(edit_during_relist(false).await, 0, "the edit jumps the relist");
    assert_eq!(
        edit_during_relist(true).await,
        700,
        "with every event high priority, the edit waited for its place in the relist"
    );
}

#[tokio::test]
async fn an_edit_during_a_fan_out_or_a_reload_is_reconciled_before_them() {
    let fixture = Fixture::new();
    for index in 0..BACKLOG {
        fixture.echo(&backlog_name(index), 1);
    }
    let applier = Arc::new(FakeApplier::default());
    let config = json!({"reads": [{"apiVersion": "v1", "kind": "Service", "namespace": "ns", "name": "shared"}]});
    let controller = fixture.start(applier.clone(), config.clone());
    wait_for_reconciles(&applier, BACKLOG).await;
    wait_for_idle(&controller).await;

    // A Service every primary read: each of them is queued again.
    fixture.caches[&Gvk::new("", "v1", "Service")].insert_json(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "shared", "namespace": "ns", "uid": "uid-shared", "resourceVersion": "2"},
    }));
    assert_eq!(controller.queue_depth(), BACKLOG);
    fixture.echo(&backlog_name(600), 3);
    wait_for_reconciles(&applier, 2 * BACKLOG).await;
    wait_for_idle(&controller).await;
    assert_eq!(handover_position(&applier, BACKLOG, &backlog_name(600)), 0);

    // A new version: every primary again.
    controller.swap(Version::new(
        Logic::Native(NativePlugin::new::<test_guest_echo::Echo>(Limits::default())),
        &config,
    ));
    assert_eq!(controller.queue_depth(), BACKLOG);
    fixture.echo(&backlog_name(900), 4);
    wait_for_reconciles(&applier, 3 * BACKLOG).await;
    wait_for_idle(&controller).await;
    assert_eq!(handover_position(&applier, 2 * BACKLOG, &backlog_name(900)), 0);
    assert_eq!(applier.seen().len(), 3 * BACKLOG);
    controller.stop().await;
}
