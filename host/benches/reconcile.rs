//! Per-reconcile cost benchmark (not a test): the `configmapset` wasm plugin against the same logic compiled
//! natively, both through the host's encode → call → decode path, on a world view of one `ConfigMapSet` and
//! ten child ConfigMaps (~20 KB of JSON). Also times the phases of a wasm call and records the example
//! components' sizes. Writes its numbers to `docs/benchmarks/plugin-runtime.md`.
//!
//! Run with `cargo bench -p wasm-reconciler --bench reconcile`.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use configmapset::ConfigMapSetReconciler;
use serde_json::{Value, json};
use wasm_reconciler::plugin::{
    ClusterReader, Limits, NativePlugin, ObjectReader, Outcome, Plugin, PluginEngine, WorldView,
};
use wasmtime::Store;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

mod support;

/// Bindings of the plugin contract, generated here so the bench can call each phase of a wasm reconcile
/// separately (the runtime keeps its own bindings private).
mod contract_bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "reconciler",
    });
}

use contract_bindings::wasm_reconciler::plugin::{host, types};

/// Child ConfigMaps in the world view.
const CHILDREN: usize = 10;
/// Total JSON of the world view (primary + children + config) the padding aims for.
const TARGET_VIEW_BYTES: usize = 20 * 1024;
/// Calls per path before measuring: compiles lazily-initialised code paths and warms caches.
const WARMUP_CALLS: usize = 500;
/// Measured calls per path are taken in rounds that alternate between the paths, so a burst of load from
/// elsewhere on the machine hits both alike.
const ROUNDS: usize = 40;
/// Measured calls per path per round.
const CALLS_PER_ROUND: usize = 250;
/// Measured calls for the phase breakdown.
const PHASE_CALLS: usize = 5_000;
/// Epoch deadline of the phase benchmark's stores: generous, it only has to be set.
const PHASE_DEADLINE_TICKS: u64 = 1_000;

const NAMESPACE: &str = "apps";
const SET_NAME: &str = "bench";
const SET_UID: &str = "5b0c1a52-1d7e-4c55-9a57-0f3c2b7e1a01";
const SET_LABEL: &str = "examples.wasm-reconciler.io/configmapset";

/// Aims: p50 of one wasm reconcile of this view, the wasm/native ratio, and each example component's size (KiB).
const AIM_P50_MICROS: f64 = 100.0;
const AIM_RATIO: f64 = 2.0;
const AIM_COMPONENT_KIB: [(&str, u64); 2] = [("configmapset", 200), ("webapp", 300)];

fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    let load_before = support::load_average();
    let view = world_view();
    let view_bytes = wire_bytes(&view);
    let reader: Arc<dyn ClusterReader> = Arc::new(
        ObjectReader::new(
            view.children
                .iter()
                .map(|child| serde_json::from_str(child).expect("JSON")),
        )
        .expect("children have apiVersion and kind"),
    );

    let engine = PluginEngine::new(None)?;
    let wasm = wasm_reconciler_artifacts::read(wasm_reconciler_artifacts::CONFIGMAPSET);
    let load_started = Instant::now();
    let plugin = engine.load("configmapset", &wasm, Limits::default())?;
    let load_time = load_started.elapsed();
    let native = NativePlugin::new::<ConfigMapSetReconciler>(Limits::default());

    check_same_outcome(&plugin, &native, &view, &reader)?;

    let paths = measure_paths(&plugin, &native, &view, &reader)?;
    let phases = measure_phases(&engine, &wasm, &view).map_err(|e| anyhow::anyhow!("phase benchmark: {e:?}"))?;
    let sizes = component_sizes()?;

    let report = Report {
        machine: support::Machine::detect(),
        load_before,
        view_bytes,
        load_time,
        paths,
        phases,
        sizes,
        run_time: started.elapsed(),
    };
    let markdown = report.markdown();
    println!("{markdown}");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/benchmarks/plugin-runtime.md");
    std::fs::write(path, &markdown).with_context(|| format!("writing {path}"))?;
    eprintln!("wrote {path}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// The world view.

/// One `ConfigMapSet` with ten replicas, all ten children present and matching the template (the steady
/// state a controller sees most), with the template data padded so the whole view is ~20 KB of JSON.
fn world_view() -> WorldView {
    let unpadded = view_with_padding(0);
    let per_object = (TARGET_VIEW_BYTES.saturating_sub(wire_bytes(&unpadded))) / (CHILDREN + 1);
    view_with_padding(per_object)
}

fn view_with_padding(padding_bytes: usize) -> WorldView {
    let data = json!({
        "greeting": "hello",
        "settings.yaml": padded_settings(padding_bytes),
    });
    let primary = json!({
        "apiVersion": "examples.wasm-reconciler.io/v1alpha1",
        "kind": "ConfigMapSet",
        "metadata": {
            "name": SET_NAME, "namespace": NAMESPACE, "uid": SET_UID, "resourceVersion": "100",
            "generation": 1, "creationTimestamp": "2026-01-05T10:00:00Z",
            "finalizers": ["examples.wasm-reconciler.io/drain"],
        },
        "spec": {
            "replicas": CHILDREN,
            "burst": 10,
            "template": {
                "metadata": {"labels": {"app": SET_NAME}, "annotations": {"team": "platform"}},
                "data": data,
            },
        },
    });
    let children: Vec<Value> = (0..CHILDREN)
        .map(|index| {
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": format!("{SET_NAME}-{index}"), "namespace": NAMESPACE,
                    "uid": format!("9d1e0000-0000-4000-8000-{index:012}"),
                    "resourceVersion": (200 + index).to_string(),
                    "creationTimestamp": "2026-01-05T10:00:01Z",
                    "labels": {"app": SET_NAME, SET_LABEL: SET_NAME},
                    "annotations": {"team": "platform"},
                    "ownerReferences": [{
                        "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "ConfigMapSet",
                        "name": SET_NAME, "uid": SET_UID, "controller": true, "blockOwnerDeletion": true,
                    }],
                },
                "data": data,
            })
        })
        .collect();
    WorldView::from_json(&primary, &children, &json!({}))
}

/// YAML-looking text of about `bytes` bytes.
fn padded_settings(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 32);
    let mut line = 0;
    while text.len() < bytes {
        let _ = writeln!(text, "setting-{line}: value-{line}");
        line += 1;
    }
    text.truncate(bytes);
    text
}

/// Bytes of JSON the view puts on the wire.
fn wire_bytes(view: &WorldView) -> usize {
    view.primary.len() + view.children.iter().map(String::len).sum::<usize>() + view.config.len()
}

/// Both paths must do the same work: the same full outcome, and a steady state (ten children kept, ready).
fn check_same_outcome(
    plugin: &Plugin,
    native: &NativePlugin,
    view: &WorldView,
    reader: &Arc<dyn ClusterReader>,
) -> anyhow::Result<()> {
    let from_wasm: Outcome = plugin.reconcile(view.clone(), reader.clone())?;
    let from_native: Outcome = native.reconcile(view.clone(), reader.clone())?;
    ensure!(from_wasm == from_native, "wasm and native outcomes differ");
    let children = from_wasm.children.as_ref().map_or(0, Vec::len);
    ensure!(
        children == CHILDREN,
        "expected {CHILDREN} desired children, got {children}"
    );
    let ready = from_wasm.conditions.iter().find(|c| c.condition_type == "Ready");
    ensure!(
        ready.is_some_and(|c| c.reason == "ReplicasReady"),
        "expected a ready steady state, got {ready:?}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Whole-path measurement.

struct PathTimes {
    wasm: Samples,
    native: Samples,
    /// Per round, the wasm p50 over the native p50 of the calls just before or after: load from elsewhere on the
    /// machine shifts both paths of a round alike, so the median of these is steadier than the ratio of the
    /// overall p50s.
    round_ratios: Samples<f64>,
}

fn measure_paths(
    plugin: &Plugin,
    native: &NativePlugin,
    view: &WorldView,
    reader: &Arc<dyn ClusterReader>,
) -> anyhow::Result<PathTimes> {
    let call_wasm = || plugin.reconcile(view.clone(), reader.clone()).map(drop);
    let call_native = || native.reconcile(view.clone(), reader.clone()).map(drop);
    for _ in 0..WARMUP_CALLS {
        call_wasm()?;
        call_native()?;
    }
    let mut wasm = Vec::with_capacity(ROUNDS * CALLS_PER_ROUND);
    let mut natively = Vec::with_capacity(ROUNDS * CALLS_PER_ROUND);
    let mut round_ratios = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let mut round_wasm = Vec::with_capacity(CALLS_PER_ROUND);
        let mut round_native = Vec::with_capacity(CALLS_PER_ROUND);
        for _ in 0..CALLS_PER_ROUND {
            let start = Instant::now();
            call_wasm()?;
            round_wasm.push(start.elapsed());
        }
        for _ in 0..CALLS_PER_ROUND {
            let start = Instant::now();
            call_native()?;
            round_native.push(start.elapsed());
        }
        wasm.extend_from_slice(&round_wasm);
        natively.extend_from_slice(&round_native);
        round_ratios.push(Samples::new(round_wasm).p50() / Samples::new(round_native).p50());
    }
    Ok(PathTimes {
        wasm: Samples::new(wasm),
        native: Samples::new(natively),
        round_ratios: Samples::new(round_ratios),
    })
}

// ---------------------------------------------------------------------------------------------------------
// Phases of a wasm call, replayed step by step with the same engine, component and contract.

/// Store data for the phase breakdown: WASI granting nothing plus host imports that serve no reads.
struct PhaseState {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for PhaseState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for PhaseState {}

impl host::Host for PhaseState {
    fn log(&mut self, _level: host::Level, _message: String) {}

    fn get(&mut self, _kind: types::Gvk, _namespace: Option<String>, _name: String) -> Result<Option<String>, String> {
        Err("no reads in the phase benchmark".into())
    }

    fn list(
        &mut self,
        _kind: types::Gvk,
        _namespace: Option<String>,
        _label_selector: Option<String>,
    ) -> Result<Vec<String>, String> {
        Err("no reads in the phase benchmark".into())
    }
}

struct PhaseTimes {
    encode: Samples,
    store: Samples,
    instantiate: Samples,
    call: Samples,
    decode: Samples,
    total: Samples,
}

/// Runs on wasmtime's own error type (which does not convert to `anyhow` in this build).
fn measure_phases(engine: &PluginEngine, wasm: &[u8], view: &WorldView) -> wasmtime::Result<PhaseTimes> {
    let engine = engine.engine();
    let component = wasmtime::component::Component::new(engine, wasm)?;
    let mut linker: Linker<PhaseState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    contract_bindings::Reconciler::add_to_linker::<PhaseState, wasmtime::component::HasSelf<PhaseState>>(
        &mut linker,
        |state| state,
    )?;
    let pre = contract_bindings::ReconcilerPre::new(linker.instantiate_pre(&component)?)?;
    let limits = Limits::default();

    let one_call = || -> wasmtime::Result<[Duration; 5]> {
        let t0 = Instant::now();
        let wire_view = types::WorldView {
            primary: view.primary.clone(),
            children: view.children.clone(),
            config: view.config.clone(),
            deleting: view.deleting,
            attempt: view.attempt,
        };
        let t1 = Instant::now();
        let state = PhaseState {
            wasi: WasiCtx::builder().allow_ip_name_lookup(false).build(),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(engine, state);
        store.set_epoch_deadline(PHASE_DEADLINE_TICKS);
        store.epoch_deadline_trap();
        let t2 = Instant::now();
        let bindings = pre.instantiate(&mut store)?;
        let t3 = Instant::now();
        let answer = bindings
            .wasm_reconciler_plugin_controller()
            .call_reconcile(&mut store, &wire_view)?
            .map_err(|message| wasmtime::format_err!("plugin error: {message}"))?;
        let t4 = Instant::now();
        let size: usize = answer.children.iter().flatten().map(String::len).sum();
        wasmtime::ensure!(size <= limits.max_outcome_bytes, "outcome over the limit");
        let children = answer
            .children
            .iter()
            .flatten()
            .map(|text| serde_json::from_str::<Value>(text))
            .collect::<Result<Vec<_>, _>>()?;
        let status = answer
            .status
            .as_deref()
            .map(serde_json::from_str::<Value>)
            .transpose()?;
        std::hint::black_box((children, status));
        let t5 = Instant::now();
        drop(store);
        Ok([t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4])
    };
    for _ in 0..WARMUP_CALLS {
        one_call()?;
    }
    let mut phases: [Vec<Duration>; 5] = Default::default();
    let mut totals = Vec::with_capacity(PHASE_CALLS);
    for _ in 0..PHASE_CALLS {
        let times = one_call()?;
        totals.push(times.iter().sum());
        for (phase, time) in phases.iter_mut().zip(times) {
            phase.push(time);
        }
    }
    let [encode, store, instantiate, call, decode] = phases.map(Samples::new);
    Ok(PhaseTimes {
        encode,
        store,
        instantiate,
        call,
        decode,
        total: Samples::new(totals),
    })
}

// ---------------------------------------------------------------------------------------------------------
// Component sizes.

struct ComponentSize {
    name: &'static str,
    bytes: u64,
    aim_kib: u64,
}

impl ComponentSize {
    fn kib(&self) -> f64 {
        self.bytes as f64 / 1024.0
    }

    fn met(&self) -> &'static str {
        met(self.bytes <= self.aim_kib * 1024)
    }
}

fn component_sizes() -> anyhow::Result<Vec<ComponentSize>> {
    [
        ("configmapset", wasm_reconciler_artifacts::CONFIGMAPSET),
        ("webapp", wasm_reconciler_artifacts::WEBAPP),
    ]
    .into_iter()
    .map(|(name, path)| {
        let bytes = std::fs::metadata(path)
            .with_context(|| format!("reading {path}"))?
            .len();
        let aim_kib = AIM_COMPONENT_KIB
            .iter()
            .find_map(|(component, kib)| (*component == name).then_some(*kib))
            .with_context(|| format!("no size aim for {name}"))?;
        Ok(ComponentSize { name, bytes, aim_kib })
    })
    .collect()
}

// ---------------------------------------------------------------------------------------------------------
// Statistics and the report.

/// Sorted samples: call times, or ratios.
struct Samples<T = Duration> {
    sorted: Vec<T>,
}

/// What a sample reads as in the report: microseconds for a time, itself for a ratio.
trait Sample: Copy + PartialOrd {
    fn value(self) -> f64;
}

impl Sample for Duration {
    fn value(self) -> f64 {
        self.as_secs_f64() * 1e6
    }
}

impl Sample for f64 {
    fn value(self) -> f64 {
        self
    }
}

impl<T: Sample> Samples<T> {
    fn new(mut samples: Vec<T>) -> Self {
        samples.sort_unstable_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        Self { sorted: samples }
    }

    /// The nearest-rank percentile.
    fn percentile(&self, percent: f64) -> f64 {
        let rank = ((percent / 100.0) * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1].value()
    }

    fn p50(&self) -> f64 {
        self.percentile(50.0)
    }

    fn p99(&self) -> f64 {
        self.percentile(99.0)
    }

    fn mean(&self) -> f64 {
        self.sorted.iter().map(|sample| sample.value()).sum::<f64>() / self.sorted.len() as f64
    }

    fn min(&self) -> f64 {
        self.sorted[0].value()
    }

    fn max(&self) -> f64 {
        self.sorted[self.sorted.len() - 1].value()
    }

    fn len(&self) -> usize {
        self.sorted.len()
    }
}

struct Report {
    machine: support::Machine,
    load_before: String,
    view_bytes: usize,
    load_time: Duration,
    paths: PathTimes,
    phases: PhaseTimes,
    sizes: Vec<ComponentSize>,
    run_time: Duration,
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "not met" }
}

impl Report {
    fn markdown(&self) -> String {
        let PathTimes {
            wasm,
            native,
            round_ratios,
        } = &self.paths;
        let ratio = round_ratios.p50();
        let mut out = String::new();
        let _ = writeln!(out, "# Plugin runtime benchmark\n");
        let _ = writeln!(
            out,
            "Generated by `cargo bench -p wasm-reconciler --bench reconcile` (`host/benches/reconcile.rs`); do not \
             edit by hand.\n"
        );
        let machine = &self.machine;
        let _ = writeln!(out, "| | |\n|---|---|");
        let _ = writeln!(out, "| date | {} |", machine.date);
        let _ = writeln!(out, "| commit | {} |", machine.commit);
        let _ = writeln!(out, "| cores (`nproc`) | {} |", available_cores());
        let _ = writeln!(out, "| CPU | {}, Linux {} |", machine.cpu_model, machine.kernel);
        let _ = writeln!(
            out,
            "| load average before → at the end | {} → {} |",
            self.load_before,
            support::load_average()
        );
        let _ = writeln!(
            out,
            "| world view | 1 ConfigMapSet + {CHILDREN} ConfigMaps, {} bytes of JSON |",
            self.view_bytes
        );
        let _ = writeln!(
            out,
            "| samples | {} per path after {WARMUP_CALLS} warm-up calls, in {ROUNDS} alternating rounds |",
            wasm.len()
        );
        let _ = writeln!(
            out,
            "| compile + validate + `describe()` (once per plugin) | {:.1} ms |",
            self.load_time.as_secs_f64() * 1e3
        );
        let _ = writeln!(out, "| bench run time | {:.1} s |\n", self.run_time.as_secs_f64());

        let _ = writeln!(out, "## Per-reconcile cost\n");
        let _ = writeln!(
            out,
            "One `reconcile` of the steady-state view (all ten children present and matching; the outcome carries \
             the ten desired children, status, two conditions). The wasm path is `Plugin::reconcile`: encode the \
             view, fresh store with limits, instantiate, call, decode and check the outcome. The native path is \
             `NativePlugin::reconcile`: the same `configmapset` logic compiled into the host, through the same \
             encode and decode.\n"
        );
        let _ = writeln!(
            out,
            "| path | p50 µs | p99 µs | mean µs | min µs |\n|---|---:|---:|---:|---:|"
        );
        for (name, samples) in [
            ("wasm (`Plugin::reconcile`)", wasm),
            ("native (`NativePlugin::reconcile`)", native),
        ] {
            let _ = writeln!(
                out,
                "| {name} | {:.1} | {:.1} | {:.1} | {:.1} |",
                samples.p50(),
                samples.p99(),
                samples.mean(),
                samples.min()
            );
        }
        let _ = writeln!(
            out,
            "\nwasm/native: **{ratio:.2}×**, the median over the {} rounds of the round's wasm p50 over its native p50 \
             (rounds ranged {:.2}× to {:.2}×; the ratio of the overall p50s above is {:.2}×).\n",
            round_ratios.len(),
            round_ratios.min(),
            round_ratios.max(),
            wasm.p50() / native.p50()
        );

        let phases = &self.phases;
        let _ = writeln!(out, "## Where the time goes in a wasm call\n");
        let _ = writeln!(
            out,
            "The same call replayed step by step on the same engine and component, with bindings generated in the \
             bench ({} calls; its store has no memory limiter or output capture, which cost little).\n",
            phases.total.len()
        );
        let _ = writeln!(
            out,
            "| phase | p50 µs | mean µs | share of mean |\n|---|---:|---:|---:|"
        );
        let total_mean = phases.total.mean();
        for (name, samples) in [
            ("encode the view (JSON text)", &phases.encode),
            ("new store (WASI context, epoch deadline)", &phases.store),
            ("instantiate (`InstancePre::instantiate`)", &phases.instantiate),
            ("call `reconcile` (copy in, guest logic, copy out)", &phases.call),
            ("decode (parse outcome children and status)", &phases.decode),
            ("total", &phases.total),
        ] {
            let _ = writeln!(
                out,
                "| {name} | {:.1} | {:.1} | {:.0}% |",
                samples.p50(),
                samples.mean(),
                100.0 * samples.mean() / total_mean
            );
        }

        let _ = writeln!(out, "\n## Component sizes\n");
        let _ = writeln!(
            out,
            "Built for `wasm32-wasip2` with the `wasm-release` profile (opt-level s, LTO, strip, panic=abort), each with `cargo rustc --crate-type cdylib` so LTO applies.\n"
        );
        let _ = writeln!(out, "| component | bytes | KiB | aim |\n|---|---:|---:|---|");
        for size in &self.sizes {
            let _ = writeln!(
                out,
                "| {} | {} | {:.1} | ≤ {} KiB: {} |",
                size.name,
                size.bytes,
                size.kib(),
                size.aim_kib,
                size.met()
            );
        }

        let _ = writeln!(out, "\n## Aims\n");
        let _ = writeln!(out, "| aim | measured | |\n|---|---|---|");
        let _ = writeln!(
            out,
            "| wasm p50 ≤ {AIM_P50_MICROS:.0} µs | {:.1} µs | {} |",
            wasm.p50(),
            met(wasm.p50() <= AIM_P50_MICROS)
        );
        let _ = writeln!(
            out,
            "| wasm/native ≤ {AIM_RATIO:.0}× | {ratio:.2}× | {} |",
            met(ratio <= AIM_RATIO)
        );
        for size in &self.sizes {
            let _ = writeln!(
                out,
                "| {} ≤ {} KiB | {:.1} KiB | {} |",
                size.name,
                size.aim_kib,
                size.kib(),
                size.met()
            );
        }

        let _ = writeln!(out, "\n## Reading the numbers\n");
        let _ = writeln!(
            out,
            "- The engine is the one `PluginEngine::new` builds: epoch interruption, and a pooling instance \
             allocator that keeps up to 4 MiB of each memory slot resident and, where the kernel has the \
             `PAGEMAP_SCAN` ioctl (Linux 6.7+), resets only the pages a call wrote, so a fresh instance per call \
             neither maps, faults in nor clears its whole linear memory.\n\
             - The guest reads the view lazily (the SDK deserialises each text straight into the plugin's types, \
             and reads only the head of each child to know its kind) and serialises each desired child once. \
             What is left is the work itself: the view's ~20 KB of JSON parsed once, the ten children's ~19 KB \
             serialised once, and the data compared with the template, in wasm code without SIMD \
             whose `memcmp` compares byte by byte. The host's decode parses the ten children into the JSON trees \
             it applies.\n\
             - p99 and the mean are sensitive to other load on the machine: compare the load average above with \
             the core count. The min and the per-round wasm/native ratio are the steadier figures."
        );
        out
    }
}

fn available_cores() -> String {
    std::thread::available_parallelism().map_or_else(|e| format!("unknown ({e})"), |n| n.to_string())
}
