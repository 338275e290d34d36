//! Benchmark: the host's memory per cached object at scale. Creates N ConfigMaps of about 0.5 KB of JSON each on
//! the embedded API server (a process of its own), then starts this binary again as a host process whose shared
//! cache holds every ConfigMap, and reads that process's resident memory before and after; writes
//! `docs/benchmarks/memory.md`. Run it with `cargo bench -p wasm-reconciler --bench memory`.
//!
//! Knobs (environment variables, defaults in brackets): `MEMORY_OBJECTS` [10000,100000], `MEMORY_ROUNDS` [3],
//! `MEMORY_OUTPUT` [docs/benchmarks/memory.md].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Command;
use wasm_reconciler::plugin::Gvk;
use wasm_reconciler::runtime::Caches;

mod support;
use support::{Machine, Memory, load_average, start_api_server, write_run_lines};

/// Which party this process plays: unset for the driver, `cache` for the host.
const ROLE_VARIABLE: &str = "MEMORY_ROLE";
/// The kubeconfig the host process reads.
const KUBECONFIG_VARIABLE: &str = "MEMORY_KUBECONFIG";
/// Namespace of every ConfigMap.
const NAMESPACE: &str = "default";
/// ConfigMaps created at once.
const IN_FLIGHT: usize = 64;
/// The aim: host memory per cached object of about 0.5 KB.
const AIM_BYTES_PER_OBJECT: f64 = 2048.0;

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    match std::env::var(ROLE_VARIABLE).ok().as_deref() {
        None => runtime.block_on(drive()),
        Some("cache") => runtime.block_on(hold_cache()),
        Some(other) => bail!("unknown {ROLE_VARIABLE} {other:?}"),
    }
}

fn config_map_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"))
}

async fn client_from(kubeconfig: &Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

/// Role `cache`: the host's shared cache of every ConfigMap; answers one JSON line with its memory readings.
async fn hold_cache() -> anyhow::Result<()> {
    let pid = std::process::id();
    let kubeconfig = PathBuf::from(std::env::var(KUBECONFIG_VARIABLE).context("MEMORY_KUBECONFIG is not set")?);
    let client = client_from(&kubeconfig).await?;
    // Warm the client so that its connection pool counts in the baseline.
    let config_maps: Api<DynamicObject> = Api::all_with(client.clone(), &config_map_resource());
    config_maps.list(&ListParams::default().limit(1)).await?;
    let before = Memory::of(pid)?;

    let caches = Caches::new(client);
    let started = Instant::now();
    let cache = caches.get_or_start(&Gvk::new("", "v1", "ConfigMap"), None).await?;
    cache.wait_synced().await;
    let sync_seconds = started.elapsed().as_secs_f64();
    let cached = cache.list(None);
    let objects = cached.len();
    let json_bytes: usize = cached.iter().map(|object| object.json.len()).sum();
    drop(cached);
    // Let the watch settle after the initial list before reading memory.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = Memory::of(pid)?;
    println!(
        "{}",
        json!({
            "objects": objects, "json_bytes": json_bytes, "sync_seconds": sync_seconds,
            "before_kib": before.rss_kib, "after_kib": after.rss_kib, "peak_kib": after.peak_kib,
        })
    );
    drop(cache);
    Ok(())
}

/// A ConfigMap of about 0.5 KB of JSON once served: two labels, five data entries.
fn new_config_map(index: usize) -> DynamicObject {
    let data: serde_json::Map<String, Value> = (0..5)
        .map(|key| {
            (
                format!("key-{key}"),
                json!(format!("value {key} of configuration {index:06}")),
            )
        })
        .collect();
    let mut object = DynamicObject::new(&format!("config-{index:06}"), &config_map_resource())
        .within(NAMESPACE)
        .data(json!({ "data": data }));
    object.metadata.labels = Some(
        [
            ("app.kubernetes.io/name".to_owned(), "bench".to_owned()),
            ("bench.example/index".to_owned(), index.to_string()),
        ]
        .into(),
    );
    object
}

/// One measurement of a host caching `objects` ConfigMaps.
#[derive(Debug, Clone)]
struct Reading {
    objects: u64,
    json_bytes: u64,
    sync_seconds: f64,
    before_kib: u64,
    after_kib: u64,
    peak_kib: u64,
}

impl Reading {
    /// Resident memory the cache added, per object.
    fn bytes_per_object(&self) -> f64 {
        (self.after_kib.saturating_sub(self.before_kib) * 1024) as f64 / self.objects.max(1) as f64
    }

    fn json_per_object(&self) -> f64 {
        self.json_bytes as f64 / self.objects.max(1) as f64
    }
}

async fn measure(kubeconfig: &Path) -> anyhow::Result<Reading> {
    let mut host = Command::new(std::env::current_exe()?)
        .env(ROLE_VARIABLE, "cache")
        .env(KUBECONFIG_VARIABLE, kubeconfig)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = host.stdout.take().context("the host's stdout")?;
    let line = BufReader::new(stdout)
        .lines()
        .next_line()
        .await?
        .context("the host process answered nothing")?;
    host.wait().await?;
    let answer: Value = serde_json::from_str(&line)?;
    let number = |name: &str| answer[name].as_u64().unwrap_or(0);
    Ok(Reading {
        objects: number("objects"),
        json_bytes: number("json_bytes"),
        sync_seconds: answer["sync_seconds"].as_f64().unwrap_or(0.0),
        before_kib: number("before_kib"),
        after_kib: number("after_kib"),
        peak_kib: number("peak_kib"),
    })
}

async fn drive() -> anyhow::Result<()> {
    let machine = Machine::detect();
    let load_before = load_average();
    let counts: Vec<usize> = std::env::var("MEMORY_OBJECTS")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .map(|count| {
            count
                .trim()
                .parse()
                .context("MEMORY_OBJECTS is a comma-separated list of counts")
        })
        .collect::<anyhow::Result<_>>()?;
    let rounds: usize = std::env::var("MEMORY_ROUNDS").map_or(Ok(3), |n| n.parse())?;
    let output = std::env::var("MEMORY_OUTPUT")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/benchmarks/memory.md").to_owned());
    let started = Instant::now();
    let mut results = Vec::new();
    for count in counts {
        let dir = tempfile::tempdir()?;
        let (mut api_server, kubeconfig) = start_api_server(dir.path()).await?;
        let client = client_from(&kubeconfig).await?;
        let api: Api<DynamicObject> = Api::namespaced_with(client, NAMESPACE, &config_map_resource());
        eprintln!("memory: creating {count} ConfigMaps");
        futures::stream::iter(0..count)
            .map(|index| {
                let api = api.clone();
                async move {
                    api.create(&PostParams::default(), &new_config_map(index)).await?;
                    anyhow::Ok(())
                }
            })
            .buffer_unordered(IN_FLIGHT)
            .try_for_each(|()| async { Ok(()) })
            .await?;
        let mut readings = Vec::new();
        for round in 1..=rounds {
            let reading = measure(&kubeconfig).await?;
            eprintln!(
                "memory: {count} objects, round {round}: {:.0} bytes per object",
                reading.bytes_per_object()
            );
            readings.push(reading);
        }
        api_server.kill().await?;
        results.push((count, readings));
    }
    let report = render(&machine, &load_before, started.elapsed(), &results);
    std::fs::write(&output, &report).with_context(|| format!("writing {output}"))?;
    eprintln!("wrote {output}");
    Ok(())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn render(machine: &Machine, load_before: &str, took: Duration, results: &[(usize, Vec<Reading>)]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmark: host memory per cached object\n");
    let _ = writeln!(
        out,
        "Generated by `cargo bench -p wasm-reconciler --bench memory` (`host/benches/memory.rs`); do not edit.\n"
    );
    write_run_lines(&mut out, machine, load_before, took);
    out.push('\n');
    let _ = writeln!(
        out,
        "A host process builds the shared informer cache of every ConfigMap (two labels, five data entries each) on the \
         embedded API server and reports its resident memory (`VmRSS`) before starting the cache and one second after \
         it synced; the difference divided by the number of objects is the cache's cost per object. Each count is \
         measured in a fresh host process per round, against the same API server.\n"
    );
    let _ = writeln!(
        out,
        "| cached ConfigMaps | JSON per object | RSS per object (median, min–max) | aim ≤ {} bytes | RSS before → after (median) | peak RSS | time to sync |",
        AIM_BYTES_PER_OBJECT as u64
    );
    let _ = writeln!(out, "|---:|---:|---:|---|---:|---:|---:|");
    for (count, readings) in results {
        let per_object: Vec<f64> = readings.iter().map(Reading::bytes_per_object).collect();
        let low = per_object.iter().copied().fold(f64::INFINITY, f64::min);
        let high = per_object.iter().copied().fold(0.0, f64::max);
        let median_per_object = median(per_object);
        let median_of = |field: fn(&Reading) -> f64| median(readings.iter().map(field).collect());
        let _ = writeln!(
            out,
            "| {count} | {:.0} bytes | {median_per_object:.0} bytes ({low:.0}–{high:.0}) | {} | {:.1} → {:.1} MiB | {:.1} MiB | {:.2} s |",
            median_of(Reading::json_per_object),
            if median_per_object <= AIM_BYTES_PER_OBJECT {
                "met"
            } else {
                "not met"
            },
            median_of(|r| r.before_kib as f64) / 1024.0,
            median_of(|r| r.after_kib as f64) / 1024.0,
            median_of(|r| r.peak_kib as f64) / 1024.0,
            median_of(|r| r.sync_seconds),
        );
    }
    out
}
