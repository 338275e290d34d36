//! Benchmark: what a resync costs the host when nothing changed, with calls for an unchanged world skipped (the
//! default) and with every call made (`alwaysCall: true`, the host's behaviour before skipping); writes
//! `docs/benchmarks/resync.md`. Run it with `cargo bench -p wasm-reconciler --bench resync`.
//!
//! The embedded API server runs in a process of its own; the host's caches and the wasm configmapset controller run
//! in this process, whose CPU time is read from `/proc/self/stat` around each resync. The sets are created and
//! converged first; then, per variant, a fresh controller reconciles every set once (its start) and the resync is
//! measured `RESYNC_ROUNDS` times: from asking for it until every set was reconciled or skipped and the queue is
//! empty.
//!
//! Knobs (environment variables, defaults in brackets): `RESYNC_SETS` [50000], `RESYNC_REPLICAS` [1; children per
//! set, so 100,000 cached objects by default], `RESYNC_ROUNDS` [3], `RESYNC_OUTPUT` [docs/benchmarks/resync.md].

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

use configmapset::resource::{GROUP, KIND, VERSION};
use wasm_reconciler::controller::{Controller, ControllerOptions, Logic, Version};
use wasm_reconciler::plugin::{Gvk, Limits, PluginEngine};
use wasm_reconciler::runtime::Caches;
use wasm_reconciler::telemetry::Metrics;

mod support;
use support::{Machine, clock_ticks_per_second, cpu_seconds, load_average, start_api_server, write_run_lines};

/// Namespace of every object.
const NAMESPACE: &str = "default";
/// The plugin's name in the host.
const PLUGIN: &str = "configmapset";
/// Sets created at once.
const IN_FLIGHT: usize = 64;
/// How long any phase may take.
const PHASE_TIMEOUT: Duration = Duration::from_secs(1800);

struct Settings {
    sets: usize,
    replicas: u32,
    rounds: usize,
    output: String,
}

impl Settings {
    fn from_environment() -> anyhow::Result<Self> {
        Ok(Self {
            sets: support::env_number("RESYNC_SETS", 50_000)?.max(1),
            replicas: u32::try_from(support::env_number("RESYNC_REPLICAS", 1)?)?,
            rounds: support::env_number("RESYNC_ROUNDS", 3)?.max(1),
            output: support::results_path("RESYNC_OUTPUT", "resync.md"),
        })
    }
}

/// One measured resync.
struct Resync {
    cpu_seconds: f64,
    wall_seconds: f64,
    calls: u64,
    skipped: u64,
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(drive())
}

async fn drive() -> anyhow::Result<()> {
    let settings = Settings::from_environment()?;
    let machine = Machine::detect();
    let load_before = load_average();
    let began = Instant::now();
    let dir = tempfile::tempdir()?;
    let (_apiserver, kubeconfig) = start_api_server(dir.path()).await?;
    let kubeconfig = kube::config::Kubeconfig::read_from(&kubeconfig)?;
    let client = kube::Client::try_from(kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?)?;
    let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/configmapset/crd.yaml");
    wasm_reconciler::delivery::directory::install_crds(&client, &crd)
        .await
        .map_err(|error| anyhow!("installing {}: {error}", crd.display()))?;

    eprintln!(
        "resync: creating {} sets of {} children",
        settings.sets, settings.replicas
    );
    create_sets(&client, settings.sets, settings.replicas).await?;
    let caches = Caches::new(client);
    let engine = PluginEngine::new(None)?;
    let wasm = wasm_reconciler_artifacts::read(wasm_reconciler_artifacts::CONFIGMAPSET);
    let plugin = engine.load(PLUGIN, &wasm, Limits::default())?;
    let version = Version::new(Logic::Wasm(plugin), &json!({}));

    // Converge once, so that the measured controllers write nothing.
    let started = Instant::now();
    let (controller, metrics) = start(&caches, &version, false).await?;
    wait_idle(&controller, &metrics, settings.sets as u64).await?;
    controller.stop().await;
    let children = caches.get_or_start(&Gvk::new("", "v1", "ConfigMap"), None).await?;
    children.wait_synced().await;
    let objects = children.len() + settings.sets;
    drop(children);
    eprintln!(
        "resync: {} sets converged in {:.0} s; {objects} cached objects",
        settings.sets,
        started.elapsed().as_secs_f64()
    );

    let ticks = clock_ticks_per_second();
    let pid = std::process::id();
    let mut results: Vec<(&str, Vec<Resync>)> = Vec::new();
    for (variant, always_call) in [
        ("skipped when unchanged (default)", false),
        ("always called (`alwaysCall: true`)", true),
    ] {
        let (controller, metrics) = start(&caches, &version, always_call).await?;
        // Its start reconciles every set once.
        wait_idle(&controller, &metrics, settings.sets as u64).await?;
        let mut rounds = Vec::new();
        for round in 0..settings.rounds {
            let (calls_before, skipped_before) = counts(&metrics);
            let cpu_before = cpu_seconds(pid, ticks)?;
            let at = Instant::now();
            controller.resync();
            let target = calls_before + skipped_before + settings.sets as u64;
            let finished = wait_idle(&controller, &metrics, target).await?;
            let wall_seconds = finished.duration_since(at).as_secs_f64();
            let cpu_seconds = cpu_seconds(pid, ticks)? - cpu_before;
            let (calls, skipped) = counts(&metrics);
            eprintln!(
                "resync: {variant}, round {}: {cpu_seconds:.2} s CPU, {wall_seconds:.2} s, {} calls, {} skipped",
                round + 1,
                calls - calls_before,
                skipped - skipped_before
            );
            rounds.push(Resync {
                cpu_seconds,
                wall_seconds,
                calls: calls - calls_before,
                skipped: skipped - skipped_before,
            });
        }
        controller.stop().await;
        results.push((variant, rounds));
    }

    let mut out = String::new();
    writeln!(out, "# Benchmark: a resync when nothing changed")?;
    writeln!(out)?;
    writeln!(
        out,
        "Generated by `cargo bench -p wasm-reconciler --bench resync` (`host/benches/resync.rs`); do not edit."
    )?;
    writeln!(out)?;
    write_run_lines(&mut out, &machine, &load_before, began.elapsed());
    writeln!(out)?;
    writeln!(
        out,
        "{} ConfigMapSets of {} ConfigMaps each ({objects} cached objects) on the embedded API server, converged \
         before. The host (caches and the wasm configmapset controller, 4 workers) runs in the benchmark's process; \
         the API server in its own. Per variant a fresh controller reconciles every set once, then a resync of every \
         set is measured {} times: the host process's CPU time (user + system, all threads) and the wall time from \
         asking for the resync until the last set was reconciled or skipped (the CPU time also covers the half second \
         of quiet the benchmark waits for after it). Nothing is \
         written in either variant.",
        settings.sets, settings.replicas, settings.rounds
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| variant | CPU per resync (median, min–max) | CPU per set | wall time (median) | plugin calls | skipped |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|")?;
    let mut medians = Vec::new();
    for (variant, rounds) in &results {
        let mut cpu: Vec<f64> = rounds.iter().map(|round| round.cpu_seconds).collect();
        let mut wall: Vec<f64> = rounds.iter().map(|round| round.wall_seconds).collect();
        cpu.sort_by(f64::total_cmp);
        wall.sort_by(f64::total_cmp);
        let median = cpu[cpu.len() / 2];
        medians.push(median);
        let last = rounds.last().expect("at least one round");
        writeln!(
            out,
            "| {variant} | {median:.2} s ({:.2}–{:.2}) | {:.1} µs | {:.2} s | {} | {} |",
            cpu[0],
            cpu[cpu.len() - 1],
            median / settings.sets as f64 * 1e6,
            wall[wall.len() / 2],
            last.calls,
            last.skipped
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Skipping saves {:.0}% of a resync's CPU ({:.1}× less).",
        (1.0 - medians[0] / medians[1]) * 100.0,
        medians[1] / medians[0].max(1e-9)
    )?;
    std::fs::write(&settings.output, &out).with_context(|| format!("writing {}", settings.output))?;
    println!("{out}");
    Ok(())
}

async fn start(caches: &Caches, version: &Version, always_call: bool) -> anyhow::Result<(Controller, Metrics)> {
    let metrics = Metrics::new();
    let options = ControllerOptions {
        // Resyncs are asked for by the benchmark only.
        resync: Some(Duration::from_secs(24 * 3600)),
        always_call,
        ..ControllerOptions::default()
    };
    let controller = Controller::start(PLUGIN, version.clone(), caches, options, Some(metrics.clone())).await?;
    Ok((controller, metrics))
}

/// Plugin calls (reconciles that ran) and skipped reconciles so far.
fn counts(metrics: &Metrics) -> (u64, u64) {
    let text = metrics.encode();
    let mut calls = 0.0;
    let mut skipped = 0.0;
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else { continue };
        if series.starts_with("wasm_reconciler_reconcile_total{") {
            calls += value;
        } else if series.starts_with("wasm_reconciler_reconcile_skipped_total{") {
            skipped += value;
        }
    }
    (calls as u64, skipped as u64)
}

/// Waits until at least `target` reconciles ran or were skipped and the queue has been empty, with no reconcile
/// finishing, for half a second; returns when the last reconcile finished (as seen by polling every 20 ms).
async fn wait_idle(controller: &Controller, metrics: &Metrics, target: u64) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + PHASE_TIMEOUT;
    let mut last = (0, 0);
    let mut quiet_since = Instant::now();
    loop {
        let now = counts(metrics);
        if now != last {
            last = now;
            quiet_since = Instant::now();
        }
        if now.0 + now.1 >= target
            && controller.queue_depth() == 0
            && quiet_since.elapsed() >= Duration::from_millis(500)
        {
            return Ok(quiet_since);
        }
        if Instant::now() > deadline {
            bail!("{} of {target} reconciles after {PHASE_TIMEOUT:?}", now.0 + now.1);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn create_sets(client: &kube::Client, count: usize, replicas: u32) -> anyhow::Result<()> {
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), "configmapsets");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource);
    futures::stream::iter(0..count)
        .map(|index| {
            let api = api.clone();
            let resource = resource.clone();
            async move {
                let name = format!("set-{index:06}");
                let set = DynamicObject::new(&name, &resource)
                    .within(NAMESPACE)
                    .data(json!({"spec": {"replicas": replicas, "template": {"data": {"k": "v"}}}}));
                api.create(&PostParams::default(), &set)
                    .await
                    .with_context(|| format!("creating ConfigMapSet {name}"))?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_for_each(|()| async { Ok(()) })
        .await
}
