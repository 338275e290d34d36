//! Benchmark: how long a user's edit of one primary waits while the controller works through a backlog of every
//! primary — the first list after a (re)start, and a re-list after the watch expired with every object changed
//! meanwhile — with the workqueue's priorities (direct changes first) and as before them (every event high
//! priority), in the same run; writes `docs/benchmarks/edits.md`. Run it with
//! `cargo bench -p wasm-reconciler --bench edits`.
//!
//! The embedded API server, the host's caches and one controller run in this process: the benchmark expires the
//! server's watches through its fault injection. The primaries are ConfigMapSets created with the status the
//! host would write, and the controller runs native logic that finds nothing to do, so a reconcile of the
//! backlog writes nothing: the cheapest reconcile there is, and the fastest a backlog can drain. A plugin that
//! works longer per object (a wasm call, writes) makes the backlog, and the wait for an edit without priorities,
//! proportionally longer; with them an edit still waits for one reconcile.
//!
//! Per round and variant, a fresh controller starts on the synced cache (every primary queued by its first list)
//! and edits are made while it drains; then, with the API server holding back watch events, every primary gets a
//! new label, the watch history is forgotten and the watches dropped, so the host re-lists and finds every
//! primary changed; edits are made while that backlog drains. An edit is a merge patch of one random primary's
//! spec over HTTP, as `kubectl` would send it; its latency runs from sending the patch until the logic is called
//! with the edited spec. The edits of a backlog are sent `EDIT_SPACING` apart without waiting for each other.
//!
//! Knobs (environment variables, defaults in brackets): `EDITS_OBJECTS` [100000], `EDITS_ROUNDS` [1],
//! `EDITS_PER_BACKLOG` [10], `EDITS_OUTPUT` [docs/benchmarks/edits.md].

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use configmapset::resource::{GROUP, KIND, VERSION};
use wasm_reconciler::apply::status::{ReconciledState, desired_status};
use wasm_reconciler::controller::{Controller, ControllerOptions, Logic, Version};
use wasm_reconciler::plugin::{Limits, NativePlugin};
use wasm_reconciler::runtime::Caches;
use wasm_reconciler::telemetry::Metrics;
use wasm_reconciler_apiserver::{ApiServer, Faults, write_kubeconfig};
use wasm_reconciler_sdk::{ControllerSpec, Error, Gvk, Outcome, Reconciler, WorldView};

mod support;
use support::{Machine, load_average, write_run_lines};

/// Namespace of every object.
const NAMESPACE: &str = "default";
/// The plugin's name in the host.
const PLUGIN: &str = "edits";
/// Writes the benchmark makes at once while setting up and re-labelling.
const IN_FLIGHT: usize = 64;
/// Time between two edits of one backlog.
const EDIT_SPACING: Duration = Duration::from_millis(100);
/// How long any phase may take.
const PHASE_TIMEOUT: Duration = Duration::from_secs(600);
/// The spec field an edit sets, read back by the logic.
const EDIT_FIELD: &str = "edit";

/// When the logic was first called with each edit (by the value of its spec's `edit` field).
static SEEN: LazyLock<Mutex<HashMap<String, Instant>>> = LazyLock::new(Mutex::default);

/// Reconciles ConfigMapSets and finds nothing to do; notes when it first sees each edit.
struct EditProbe;

impl Reconciler for EditProbe {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(Gvk::new(GROUP, VERSION, KIND))
    }

    fn reconcile(view: WorldView) -> Result<Outcome, Error> {
        let edit = view
            .primary_json()
            .pointer(&format!("/spec/template/data/{EDIT_FIELD}"))
            .and_then(Value::as_str);
        if let Some(edit) = edit {
            SEEN.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(edit.to_owned())
                .or_insert_with(Instant::now);
        }
        Ok(Outcome::new().leave_children_alone())
    }
}

struct Settings {
    objects: usize,
    rounds: usize,
    edits: usize,
    output: String,
}

impl Settings {
    fn from_environment() -> anyhow::Result<Self> {
        Ok(Self {
            objects: support::env_number("EDITS_OBJECTS", 100_000)?.max(10),
            rounds: support::env_number("EDITS_ROUNDS", 1)?.max(1),
            edits: support::env_number("EDITS_PER_BACKLOG", 10)?.max(1),
            output: support::results_path("EDITS_OUTPUT", "edits.md"),
        })
    }
}

/// Where the backlog comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Backlog {
    /// A controller starting on a synced cache: its first list queues every primary.
    Start,
    /// A re-list after the watch expired, every primary changed meanwhile.
    Relist,
}

impl Backlog {
    const ALL: [Backlog; 2] = [Backlog::Start, Backlog::Relist];

    fn describe(self) -> &'static str {
        match self {
            Self::Start => "first list after a (re)start",
            Self::Relist => "re-list after the watch expired, every primary changed",
        }
    }
}

/// How edits are queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Variant {
    /// Every event high priority, as before the priorities.
    Before,
    /// Direct changes first.
    After,
}

impl Variant {
    const ALL: [Variant; 2] = [Variant::Before, Variant::After];

    fn describe(self) -> &'static str {
        match self {
            Self::Before => "before: every event high priority",
            Self::After => "after: direct changes first",
        }
    }
}

/// What one backlog measured.
#[derive(Debug, Default)]
struct Measured {
    /// Edit → the logic called with it, per edit.
    latencies: Vec<Duration>,
    /// Keys queued when each edit was sent, the fewest.
    fewest_queued: usize,
    /// From the backlog being queued until the last reconcile.
    drain: Duration,
    /// From expiring the watch until the re-list was queued (re-list only).
    relist: Option<Duration>,
}

/// Tiny deterministic xorshift generator: the same edits in every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % bound as u64) as usize
    }
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(drive())
}

async fn drive() -> anyhow::Result<()> {
    let settings = Settings::from_environment()?;
    let machine = Machine::detect();
    let load_before = load_average();
    let began = Instant::now();
    let dir = tempfile::tempdir()?;
    let server = ApiServer::builder().build().await?;
    let serving = server.serve("127.0.0.1:0".parse()?).await?;
    let kubeconfig = dir.path().join("kubeconfig");
    write_kubeconfig(&kubeconfig, &serving.url(), None)?;
    let kubeconfig = kube::config::Kubeconfig::read_from(&kubeconfig)?;
    // The host and the edits go over HTTP; the benchmark's bulk writes take the in-process router.
    let client = kube::Client::try_from(kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?)?;
    let bulk = kube::Client::new(server.router(), NAMESPACE);
    let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/configmapset/crd.yaml");
    wasm_reconciler::delivery::directory::install_crds(&client, &crd)
        .await
        .map_err(|error| anyhow!("installing {}: {error}", crd.display()))?;
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), "configmapsets");
    let sets: Api<DynamicObject> = Api::namespaced_with(bulk, NAMESPACE, &resource);
    let edits: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource);

    let started = Instant::now();
    create_sets(&sets, settings.objects).await?;
    eprintln!(
        "edits: {} sets created in {:.0} s",
        settings.objects,
        started.elapsed().as_secs_f64()
    );
    let caches = Caches::new(client);
    // Held for the whole run, so the controllers of every round share one cache and its watch.
    let primaries = caches
        .get_or_start(&wasm_reconciler::plugin::Gvk::new(GROUP, VERSION, KIND), None)
        .await?;
    primaries.wait_synced().await;
    let version = Version::new(
        Logic::Native(NativePlugin::new::<EditProbe>(Limits::default())),
        &json!({}),
    );

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut results: HashMap<(Backlog, Variant), Vec<Measured>> = HashMap::new();
    for round in 0..settings.rounds {
        for variant in Variant::ALL {
            let metrics = Metrics::new();
            let options = ControllerOptions {
                // Resyncs would only add to the backlogs.
                resync: Some(Duration::from_secs(24 * 3600)),
                bulk_as_changes: variant == Variant::Before,
                ..ControllerOptions::default()
            };
            let written_before = server.resource_version();
            let at = Instant::now();
            let controller =
                Controller::start(PLUGIN, version.clone(), &caches, options, Some(metrics.clone())).await?;
            let tag = format!("{round}-{variant:?}");
            let mut measured = measure_backlog(
                &settings,
                (&controller, &metrics),
                &edits,
                &mut rng,
                &format!("start-{tag}"),
                (at, 0),
            )
            .await?;
            measured.relist = None;
            report(Backlog::Start, variant, round, &measured);
            results.entry((Backlog::Start, variant)).or_default().push(measured);
            // The edits write a status each; the backlog nothing.
            let writes = server.resource_version() - written_before;
            if writes > 2 * settings.edits as u64 {
                eprintln!("edits: warning: the first list's reconciles wrote {writes} times");
            }

            relabel_unwatched(&server.faults(), &sets, settings.objects, &tag).await?;
            let reconciles_before = counts(&metrics);
            let expired = Instant::now();
            server.faults().expire_watches();
            server.faults().resume_watches();
            let measured = measure_backlog(
                &settings,
                (&controller, &metrics),
                &edits,
                &mut rng,
                &format!("relist-{tag}"),
                (expired, reconciles_before),
            )
            .await?;
            report(Backlog::Relist, variant, round, &measured);
            results.entry((Backlog::Relist, variant)).or_default().push(measured);
            controller.stop().await;
        }
    }
    drop((primaries, caches));
    serving.shutdown().await;

    let out = render(&settings, &machine, &load_before, began.elapsed(), &results)?;
    std::fs::write(&settings.output, &out).with_context(|| format!("writing {}", settings.output))?;
    println!("{out}");
    Ok(())
}

fn report(backlog: Backlog, variant: Variant, round: usize, measured: &Measured) {
    let mut latencies = measured.latencies.clone();
    latencies.sort();
    eprintln!(
        "edits: round {}, {}, {}: edits {:?}, at least {} queued, drained in {:.2} s{}",
        round + 1,
        backlog.describe(),
        variant.describe(),
        latencies,
        measured.fewest_queued,
        measured.drain.as_secs_f64(),
        measured.relist.map_or_else(String::new, |relist| format!(
            ", re-listed in {:.2} s",
            relist.as_secs_f64()
        ))
    );
}

/// Waits for a backlog of every primary (triggered at `triggered`, when the controller's reconciles counted
/// `reconciles_before`), edits random primaries while it drains and waits until every edit was seen and the
/// queue is idle.
async fn measure_backlog(
    settings: &Settings,
    (controller, metrics): (&Controller, &Metrics),
    edits: &Api<DynamicObject>,
    rng: &mut Rng,
    tag: &str,
    (triggered, reconciles_before): (Instant, u64),
) -> anyhow::Result<Measured> {
    let deadline = Instant::now() + PHASE_TIMEOUT;
    // Queued, or already reconciled: the workers start on the backlog as it is queued.
    while controller.queue_depth() as u64 + (counts(metrics) - reconciles_before) < settings.objects as u64 / 2 {
        if Instant::now() > deadline {
            bail!("{tag}: no backlog after {PHASE_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let queued = Instant::now();
    let mut measured = Measured {
        fewest_queued: usize::MAX,
        relist: Some(queued.duration_since(triggered)),
        ..Measured::default()
    };
    let mut sent = Vec::new();
    for index in 0..settings.edits {
        if index > 0 {
            tokio::time::sleep(EDIT_SPACING).await;
        }
        let name = set_name(rng.below(settings.objects));
        let edit = format!("{tag}-{index}");
        measured.fewest_queued = measured.fewest_queued.min(controller.queue_depth());
        let at = Instant::now();
        let patch = json!({"spec": {"template": {"data": {EDIT_FIELD: edit}}}});
        edits
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("editing {name}"))?;
        sent.push((edit, at));
    }
    for (edit, at) in sent {
        loop {
            let seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner).get(&edit).copied();
            if let Some(seen) = seen {
                measured.latencies.push(seen.duration_since(at));
                break;
            }
            if Instant::now() > deadline {
                bail!("{tag}: edit {edit} not reconciled after {PHASE_TIMEOUT:?}");
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let target = reconciles_before + settings.objects as u64;
    let finished = wait_idle(controller, metrics, target).await?;
    measured.drain = finished.duration_since(queued);
    Ok(measured)
}

/// Gives every set a new label while the API server holds back watch events, so the host sees none of it until
/// it re-lists.
async fn relabel_unwatched(faults: &Faults, sets: &Api<DynamicObject>, count: usize, tag: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    faults.pause_watches();
    futures::stream::iter(0..count)
        .map(|index| async move {
            let name = set_name(index);
            let patch = json!({"metadata": {"labels": {"relabelled": tag}}});
            sets.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("relabelling {name}"))?;
            anyhow::Ok(())
        })
        .buffer_unordered(IN_FLIGHT)
        .try_for_each(|()| async { Ok(()) })
        .await?;
    eprintln!(
        "edits: {count} sets relabelled unwatched in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Plugin calls (reconciles that ran) plus skipped reconciles so far.
fn counts(metrics: &Metrics) -> u64 {
    let text = metrics.encode();
    let mut total = 0.0;
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        if series.starts_with("wasm_reconciler_reconcile_total{")
            || series.starts_with("wasm_reconciler_reconcile_skipped_total{")
        {
            total += value.parse::<f64>().unwrap_or(0.0);
        }
    }
    total as u64
}

/// Waits until at least `target` reconciles ran or were skipped and the queue has been empty, with no reconcile
/// finishing, for 300 ms; returns when the last reconcile finished (as seen by polling every 5 ms).
async fn wait_idle(controller: &Controller, metrics: &Metrics, target: u64) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + PHASE_TIMEOUT;
    let mut last = 0;
    let mut quiet_since = Instant::now();
    loop {
        let now = counts(metrics);
        if now != last {
            last = now;
            quiet_since = Instant::now();
        }
        if now >= target && controller.queue_depth() == 0 && quiet_since.elapsed() >= Duration::from_millis(300) {
            return Ok(quiet_since);
        }
        if Instant::now() > deadline {
            bail!("{now} of {target} reconciles after {PHASE_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn set_name(index: usize) -> String {
    format!("set-{index:06}")
}

/// Creates the sets with the status the host would write for them, so that reconciling them writes nothing.
async fn create_sets(sets: &Api<DynamicObject>, count: usize) -> anyhow::Result<()> {
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), "configmapsets");
    let status = desired_status(
        None,
        None,
        &[],
        &ReconciledState::succeeded(),
        Some(1),
        "2026-01-01T00:00:00Z",
    );
    futures::stream::iter(0..count)
        .map(|index| {
            let resource = resource.clone();
            let status = &status;
            async move {
                let name = set_name(index);
                let set = DynamicObject::new(&name, &resource)
                    .within(NAMESPACE)
                    .data(json!({"spec": {"replicas": 0, "template": {"data": {"k": "v"}}}}));
                sets.create(&PostParams::default(), &set)
                    .await
                    .with_context(|| format!("creating ConfigMapSet {name}"))?;
                sets.patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": status})))
                    .await
                    .with_context(|| format!("writing the status of {name}"))?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_for_each(|()| async { Ok(()) })
        .await
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn seconds(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1000.0)
    } else {
        format!("{seconds:.2} s")
    }
}

fn render(
    settings: &Settings,
    machine: &Machine,
    load_before: &str,
    took: Duration,
    results: &HashMap<(Backlog, Variant), Vec<Measured>>,
) -> anyhow::Result<String> {
    let mut out = String::new();
    writeln!(out, "# Benchmark: a user's edit during a backlog of every primary")?;
    writeln!(out)?;
    writeln!(
        out,
        "Generated by `cargo bench -p wasm-reconciler --bench edits` (`host/benches/edits.rs`); do not edit."
    )?;
    writeln!(out)?;
    write_run_lines(&mut out, machine, load_before, took);
    writeln!(out)?;
    writeln!(
        out,
        "{} ConfigMapSets on the embedded API server, in this process with the host's caches and one controller \
         (4 workers) running native logic that finds nothing to do, so that reconciling the backlog writes \
         nothing: the fastest a backlog can drain. Two backlogs: the first list of a controller starting on a synced \
         cache, and a re-list after the API server forgot its watch history and dropped the watches, every primary \
         relabelled meanwhile (so the host finds each one changed). While each drains, {} edits of random \
         primaries' spec, {} ms apart, as merge patches over HTTP; an edit's latency runs from sending the patch until \
         the logic is called with the edited spec. Both variants run in every one of {} rounds, alternating; \
         \"before\" queues what a relist, a dependency fan-out or a reload surfaces as a direct change (high priority), \
         as the host did before the priorities.",
        settings.objects,
        settings.edits,
        EDIT_SPACING.as_millis(),
        settings.rounds
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| backlog | variant | edit → reconcile p50 | max | edits | fewest keys queued at an edit | backlog drained in (median) |"
    )?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|")?;
    let mut p50s = HashMap::new();
    for backlog in Backlog::ALL {
        for variant in Variant::ALL {
            let runs = &results[&(backlog, variant)];
            let mut latencies: Vec<Duration> = runs.iter().flat_map(|run| run.latencies.iter().copied()).collect();
            latencies.sort();
            let mut drains: Vec<Duration> = runs.iter().map(|run| run.drain).collect();
            drains.sort();
            let fewest = runs.iter().map(|run| run.fewest_queued).min().unwrap_or_default();
            let p50 = percentile(&latencies, 0.5);
            p50s.insert((backlog, variant), p50);
            writeln!(
                out,
                "| {} | {} | {} | {} | {} | {fewest} | {} |",
                backlog.describe(),
                variant.describe(),
                seconds(p50),
                seconds(*latencies.last().expect("edits were measured")),
                latencies.len(),
                seconds(percentile(&drains, 0.5)),
            )?;
        }
    }
    writeln!(out)?;
    for backlog in Backlog::ALL {
        let before = p50s[&(backlog, Variant::Before)].as_secs_f64();
        let after = p50s[&(backlog, Variant::After)].as_secs_f64();
        writeln!(
            out,
            "- {}: an edit waits {:.0}× less at the median ({} instead of {}).",
            backlog.describe(),
            before / after.max(1e-6),
            seconds(p50s[&(backlog, Variant::After)]),
            seconds(p50s[&(backlog, Variant::Before)]),
        )?;
    }
    let mut relists: Vec<Duration> = Variant::ALL
        .iter()
        .flat_map(|variant| results[&(Backlog::Relist, *variant)].iter())
        .filter_map(|run| run.relist)
        .collect();
    relists.sort();
    writeln!(
        out,
        "- The re-list itself (expiring the watch until the changed primaries were queued) took {} (median).",
        seconds(percentile(&relists, 0.5))
    )?;
    Ok(out)
}
