//! Benchmark: converge `ConfigMapSet`s against the embedded API server with the wasm plugin and with the same
//! logic compiled natively into the same host runtime; writes `docs/benchmarks/converge.md`.
//!
//! Every measured party runs in a process of its own — this binary re-executed with `CONVERGE_ROLE` set — so
//! memory and CPU are measured per party: the API server (`apiserver`), the host (`host`: shared caches and one
//! controller), the host holding many cached objects (`cache`), and this process, the load driver, which
//! creates the objects over HTTP and watches them converge. Run it with
//! `cargo bench -p wasm-reconciler --bench converge`.
//!
//! Knobs (environment variables, defaults in brackets): `CONVERGE_PARENTS` [1000], `CONVERGE_REPLICAS` [3],
//! `CONVERGE_IN_FLIGHT` [32], `CONVERGE_ISOLATED` [50], `CONVERGE_CACHED` [10000], `CONVERGE_ROUNDS` [5],
//! `CONVERGE_WIDE_CONCURRENCY` [16; 0 skips those runs], `CONVERGE_TIMEOUT_SECS` [600],
//! `CONVERGE_API_LATENCY_MS` [0; added by the API server to every request, as a remote cluster's round trip],
//! `CONVERGE_OUTPUT` [docs/benchmarks/converge.md, or scaling.md with `CONVERGE_SCALING`],
//! `CONVERGE_SCALING` [unset; a list of set counts such as `1000,10000,30000` measures the scaling curve instead: one
//! native and one wasm converge per count and round, reported per set; `make bench-scaling`].

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event as WatchEvent};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use configmapset::resource::{FINALIZER, GROUP, KIND, SET_LABEL, VERSION};
use wasm_reconciler::controller::{Controller, ControllerOptions, Logic, Version};
use wasm_reconciler::plugin::{Gvk, Limits, NativePlugin, NoReads, Plugin, PluginEngine, WorldView};
use wasm_reconciler::runtime::Caches;
use wasm_reconciler::telemetry::Metrics;
use wasm_reconciler_apiserver::{ApiServer, write_kubeconfig};

mod support;
use support::{Machine, Memory, clock_ticks_per_second, cpu_seconds, load_average};

/// Which party this process plays.
const ROLE_VARIABLE: &str = "CONVERGE_ROLE";
/// Kubeconfig the child processes read (and the API server writes).
const KUBECONFIG_VARIABLE: &str = "CONVERGE_KUBECONFIG";
/// `wasm` or `native`, for the host roles.
const VARIANT_VARIABLE: &str = "CONVERGE_VARIANT";
/// Concurrent reconciles of the host's controller, when not the default.
const CONCURRENCY_VARIABLE: &str = "CONVERGE_CONCURRENCY";
/// Namespace of every object the benchmark creates.
const NAMESPACE: &str = "default";
/// The plugin's name in the host.
const PLUGIN: &str = "configmapset";
/// How long a child process may take to answer (the wasm host compiles the component before it answers).
const CHILD_ANSWER_TIMEOUT: Duration = Duration::from_secs(180);
/// Calls per plugin-call measurement.
const PLUGIN_CALLS: u32 = 2000;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    match std::env::var(ROLE_VARIABLE).ok().as_deref() {
        None => runtime.block_on(drive(Settings::from_environment()?)),
        Some("apiserver") => runtime.block_on(serve_api()),
        Some("host") => runtime.block_on(run_host()),
        Some("cache") => runtime.block_on(run_cache()),
        Some(other) => bail!("unknown {ROLE_VARIABLE} {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------------------
// Settings and the machine.
// ---------------------------------------------------------------------------------------------------------

/// What to measure, from the environment.
#[derive(Debug, Clone)]
struct Settings {
    parents: usize,
    replicas: u32,
    in_flight: usize,
    isolated: usize,
    cached: usize,
    rounds: usize,
    wide_concurrency: usize,
    timeout: Duration,
    api_latency_ms: usize,
    output: PathBuf,
    /// Set counts of the scaling curve (`CONVERGE_SCALING`); empty for the ordinary report.
    scaling: Vec<usize>,
}

impl Settings {
    fn from_environment() -> anyhow::Result<Self> {
        fn number(name: &str, default: usize) -> anyhow::Result<usize> {
            match std::env::var(name) {
                Ok(text) => text.parse().with_context(|| format!("{name}={text} is not a number")),
                Err(_) => Ok(default),
            }
        }
        let scaling = match std::env::var("CONVERGE_SCALING") {
            Ok(text) => text
                .split(',')
                .map(|count| {
                    count
                        .trim()
                        .parse()
                        .with_context(|| format!("CONVERGE_SCALING={text}: {count:?} is not a number"))
                })
                .collect::<anyhow::Result<Vec<usize>>>()?,
            Err(_) => Vec::new(),
        };
        let report = if scaling.is_empty() {
            "converge.md"
        } else {
            "scaling.md"
        };
        let output = std::env::var_os("CONVERGE_OUTPUT").map_or_else(
            || {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../docs/benchmarks")
                    .join(report)
            },
            PathBuf::from,
        );
        Ok(Self {
            parents: number("CONVERGE_PARENTS", 1000)?,
            replicas: u32::try_from(number("CONVERGE_REPLICAS", 3)?)?,
            in_flight: number("CONVERGE_IN_FLIGHT", 32)?.max(1),
            isolated: number("CONVERGE_ISOLATED", 50)?,
            cached: number("CONVERGE_CACHED", 10_000)?,
            rounds: number("CONVERGE_ROUNDS", 5)?.max(1),
            wide_concurrency: number("CONVERGE_WIDE_CONCURRENCY", 16)?,
            timeout: Duration::from_secs(number("CONVERGE_TIMEOUT_SECS", 600)? as u64),
            api_latency_ms: number("CONVERGE_API_LATENCY_MS", 0)?,
            output,
            scaling,
        })
    }
}

/// The two ways the same reconcile logic runs in the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Variant {
    Wasm,
    Native,
}

impl Variant {
    fn as_str(self) -> &'static str {
        match self {
            Self::Wasm => "wasm",
            Self::Native => "native",
        }
    }

    fn parse(text: &str) -> anyhow::Result<Self> {
        match text {
            "wasm" => Ok(Self::Wasm),
            "native" => Ok(Self::Native),
            other => bail!("unknown variant {other:?}"),
        }
    }

    /// The configmapset logic as this variant runs it.
    fn load_logic(self) -> anyhow::Result<Logic> {
        Ok(match self {
            Self::Wasm => Logic::Wasm(load_wasm_plugin()?),
            Self::Native => Logic::Native(NativePlugin::new::<configmapset::ConfigMapSetReconciler>(
                Limits::default(),
            )),
        })
    }
}

fn load_wasm_plugin() -> anyhow::Result<Plugin> {
    let wasm = wasm_reconciler_artifacts::read(wasm_reconciler_artifacts::CONFIGMAPSET);
    Ok(PluginEngine::new(None)?.load(PLUGIN, &wasm, Limits::default())?)
}

// ---------------------------------------------------------------------------------------------------------
// Child processes.
// ---------------------------------------------------------------------------------------------------------

/// A child process of this binary playing one role, answering one line per request on stdout. Closing its
/// stdin asks it to finish.
struct Worker {
    role: &'static str,
    child: Child,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Worker {
    async fn spawn(role: &'static str, environment: &[(&str, &str)]) -> anyhow::Result<Self> {
        let mut command = Command::new(std::env::current_exe()?);
        command
            .env(ROLE_VARIABLE, role)
            .envs(environment.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .with_context(|| format!("starting the {role} process"))?;
        let pid = child.id().context("the child has a pid")?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().context("piped stdout")?).lines();
        Ok(Self {
            role,
            child,
            pid,
            stdin,
            stdout,
        })
    }

    async fn read_line(&mut self) -> anyhow::Result<String> {
        match tokio::time::timeout(CHILD_ANSWER_TIMEOUT, self.stdout.next_line()).await {
            Err(_) => bail!(
                "the {} process did not answer within {CHILD_ANSWER_TIMEOUT:?}",
                self.role
            ),
            Ok(line) => line?.ok_or_else(|| anyhow!("the {} process exited early", self.role)),
        }
    }

    async fn expect_ready(&mut self) -> anyhow::Result<()> {
        let line = self.read_line().await?;
        if line != "ready" {
            bail!("the {} process said {line:?} instead of ready", self.role);
        }
        Ok(())
    }

    async fn request(&mut self, command: &str) -> anyhow::Result<String> {
        let stdin = self.stdin.as_mut().context("stdin already closed")?;
        stdin.write_all(format!("{command}\n").as_bytes()).await?;
        stdin.flush().await?;
        self.read_line().await
    }

    async fn finish(mut self) -> anyhow::Result<()> {
        drop(self.stdin.take());
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .with_context(|| format!("the {} process did not exit", self.role))??;
        if !status.success() {
            bail!("the {} process exited with {status}", self.role);
        }
        Ok(())
    }
}

/// Tells the parent process one line.
fn answer(line: &str) {
    println!("{line}");
}

/// Waits for requests from the parent, one a line, until it closes stdin.
fn requests() -> Lines<BufReader<tokio::io::Stdin>> {
    BufReader::new(tokio::io::stdin()).lines()
}

async fn client_from(kubeconfig: &Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

fn kubeconfig_from_environment() -> anyhow::Result<PathBuf> {
    std::env::var_os(KUBECONFIG_VARIABLE)
        .map(PathBuf::from)
        .with_context(|| format!("{KUBECONFIG_VARIABLE} is not set"))
}

/// Role `apiserver`: a fresh in-memory embedded API server on loopback until stdin closes.
async fn serve_api() -> anyhow::Result<()> {
    let kubeconfig = kubeconfig_from_environment()?;
    let server = ApiServer::builder().build().await?;
    let latency = Settings::from_environment()?.api_latency_ms;
    server.faults().set_latency(Duration::from_millis(latency as u64));
    let serving = server.serve("127.0.0.1:0".parse()?).await?;
    write_kubeconfig(&kubeconfig, &serving.url(), None)?;
    answer("ready");
    let mut requests = requests();
    while requests.next_line().await?.is_some() {}
    serving.shutdown().await;
    Ok(())
}

/// Role `host`: shared caches and one configmapset controller (default options) until stdin closes; answers
/// `metrics` with a JSON summary of the reconciles so far.
async fn run_host() -> anyhow::Result<()> {
    let variant = Variant::parse(&std::env::var(VARIANT_VARIABLE).context("CONVERGE_VARIANT is not set")?)?;
    let client = client_from(&kubeconfig_from_environment()?).await?;
    let logic = tokio::task::spawn_blocking(move || variant.load_logic()).await??;
    let caches = Caches::new(client);
    let metrics = Metrics::new();
    let version = Version::new(logic, &json!({}));
    let mut options = ControllerOptions::default();
    if let Ok(concurrency) = std::env::var(CONCURRENCY_VARIABLE) {
        options.concurrency = concurrency.parse().context("CONVERGE_CONCURRENCY is not a number")?;
    }
    let controller = Controller::start(PLUGIN, version, &caches, options, Some(metrics.clone())).await?;
    answer("ready");
    let mut requests = requests();
    while let Some(request) = requests.next_line().await? {
        match request.trim() {
            "metrics" => answer(&reconcile_summary(&metrics.encode()).to_string()),
            other => bail!("unknown request {other:?}"),
        }
    }
    controller.stop().await;
    Ok(())
}

/// Reconcile counts by result and the summed reconcile time, from the Prometheus text.
fn reconcile_summary(text: &str) -> Value {
    let mut results = serde_json::Map::new();
    let mut seconds = 0.0;
    let mut count = 0.0;
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else { continue };
        if let Some(labels) = series.strip_prefix("wasm_reconciler_reconcile_total{") {
            let result = labels
                .split(',')
                .find_map(|label| label.strip_prefix("result=\""))
                .map_or("unknown", |rest| rest.trim_end_matches('}').trim_end_matches('"'));
            results.insert(result.to_owned(), json!(value));
        } else if series.starts_with("wasm_reconciler_reconcile_duration_seconds_sum{") {
            seconds += value;
        } else if series.starts_with("wasm_reconciler_reconcile_duration_seconds_count{") {
            count += value;
        }
    }
    json!({"results": results, "seconds": seconds, "count": count})
}

/// Role `cache`: memory of the host's cache holding every ConfigMap, then of a host running the wasm
/// configmapset controller on top of it. Answers one JSON line.
async fn run_cache() -> anyhow::Result<()> {
    let pid = std::process::id();
    let client = client_from(&kubeconfig_from_environment()?).await?;
    // Warm the client (connection pool, TLS-free HTTP stack) so its memory counts in the baseline.
    client.apiserver_version().await?;
    let config_maps: Api<DynamicObject> = Api::all_with(client.clone(), &config_map_resource());
    config_maps.list(&ListParams::default().limit(1)).await?;
    let before = Memory::of(pid)?;

    let caches = Caches::new(client);
    let started = Instant::now();
    let cache = caches.get_or_start(&Gvk::new("", "v1", "ConfigMap"), None).await?;
    cache.wait_synced().await;
    let sync_seconds = started.elapsed().as_secs_f64();
    let cached = cache.list(None);
    let json_bytes: usize = cached.iter().map(|object| object.json.len()).sum();
    let objects = cached.len();
    drop(cached);
    // Let the watch settle after the initial list before reading memory.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let with_cache = Memory::of(pid)?;

    let logic = tokio::task::spawn_blocking(|| Variant::Wasm.load_logic()).await??;
    let version = Version::new(logic, &json!({}));
    let controller = Controller::start(PLUGIN, version, &caches, ControllerOptions::default(), None).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let with_controller = Memory::of(pid)?;
    answer(
        &json!({
            "objects": objects,
            "json_bytes": json_bytes,
            "sync_seconds": sync_seconds,
            "before_kib": before.rss_kib,
            "cache_kib": with_cache.rss_kib,
            "cache_peak_kib": with_cache.peak_kib,
            "controller_kib": with_controller.rss_kib,
            "controller_peak_kib": with_controller.peak_kib,
        })
        .to_string(),
    );
    controller.stop().await;
    drop(cache);
    let mut requests = requests();
    while requests.next_line().await?.is_some() {}
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// The cluster and the load driver.
// ---------------------------------------------------------------------------------------------------------

/// A fresh API server in its own process and a client of it.
struct Cluster {
    apiserver: Worker,
    client: kube::Client,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Cluster {
    async fn start() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let kubeconfig = dir.path().join("kubeconfig");
        let mut apiserver = Worker::spawn("apiserver", &[(KUBECONFIG_VARIABLE, path_text(&kubeconfig)?)]).await?;
        apiserver.expect_ready().await?;
        let client = client_from(&kubeconfig).await?;
        let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/configmapset/crd.yaml");
        let installed = wasm_reconciler::delivery::directory::install_crds(&client, &crd)
            .await
            .map_err(|error| anyhow!("installing {}: {error}", crd.display()))?;
        if installed != 1 {
            bail!("expected one CRD in {}, installed {installed}", crd.display());
        }
        Ok(Self {
            apiserver,
            client,
            kubeconfig,
            _dir: dir,
        })
    }

    async fn start_host(&self, variant: Variant, concurrency: usize) -> anyhow::Result<Worker> {
        let concurrency = concurrency.to_string();
        let mut host = Worker::spawn(
            "host",
            &[
                (KUBECONFIG_VARIABLE, path_text(&self.kubeconfig)?),
                (VARIANT_VARIABLE, variant.as_str()),
                (CONCURRENCY_VARIABLE, &concurrency),
            ],
        )
        .await?;
        host.expect_ready().await?;
        Ok(host)
    }
}

fn path_text(path: &Path) -> anyhow::Result<&str> {
    path.to_str().ok_or_else(|| anyhow!("{} is not UTF-8", path.display()))
}

fn set_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), "configmapsets")
}

fn config_map_resource() -> ApiResource {
    ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&())
}

/// A `ConfigMapSet` of `replicas` ConfigMaps holding one key.
fn new_set(name: &str, replicas: u32) -> DynamicObject {
    DynamicObject::new(name, &set_resource())
        .within(NAMESPACE)
        .data(json!({"spec": {"replicas": replicas, "template": {"data": {"k": "v"}}}}))
}

fn is_ready(object: &DynamicObject) -> bool {
    object.data["status"]["conditions"]
        .as_array()
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|condition| condition["type"] == "Ready" && condition["status"] == "True")
        })
}

fn has_our_finalizer(object: &DynamicObject) -> bool {
    object
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|finalizers| finalizers.iter().any(|f| f == FINALIZER))
}

/// When the load driver saw what happen to each set (receive times of its own watches).
#[derive(Debug, Default)]
struct Timeline {
    /// The create call returned.
    created: HashMap<String, Instant>,
    /// First watch event of the set.
    seen: HashMap<String, Instant>,
    /// First version carrying the plugin's finalizer: the first write of its first reconcile.
    finalizer: HashMap<String, Instant>,
    /// First ConfigMap controlled by the set.
    first_child: HashMap<String, Instant>,
    /// First version with `Ready=True`.
    ready: HashMap<String, Instant>,
    /// Every child ConfigMap name seen.
    children: HashSet<String>,
}

/// The timeline, shared by the watch tasks and the driver, with the count of Ready sets.
#[derive(Debug)]
struct Tracker {
    timeline: Mutex<Timeline>,
    ready: tokio::sync::watch::Sender<usize>,
}

impl Tracker {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            timeline: Mutex::default(),
            ready: tokio::sync::watch::Sender::new(0),
        })
    }

    fn timeline(&self) -> std::sync::MutexGuard<'_, Timeline> {
        self.timeline.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn created(&self, name: String, at: Instant) {
        self.timeline().created.insert(name, at);
    }

    fn set_seen(&self, object: &DynamicObject, at: Instant) {
        let Some(name) = object.metadata.name.clone() else {
            return;
        };
        let newly_ready = {
            let mut timeline = self.timeline();
            timeline.seen.entry(name.clone()).or_insert(at);
            if has_our_finalizer(object) {
                timeline.finalizer.entry(name.clone()).or_insert(at);
            }
            let newly_ready = is_ready(object) && !timeline.ready.contains_key(&name);
            if newly_ready {
                timeline.ready.insert(name, at);
            }
            newly_ready
        };
        if newly_ready {
            self.ready.send_modify(|count| *count += 1);
        }
    }

    fn child_seen(&self, object: &DynamicObject, at: Instant) {
        let Some(owner) = object.metadata.owner_references.as_ref().and_then(|owners| {
            owners
                .iter()
                .find(|owner| owner.controller == Some(true) && owner.kind == KIND)
        }) else {
            return;
        };
        let mut timeline = self.timeline();
        timeline.first_child.entry(owner.name.clone()).or_insert(at);
        if let Some(name) = &object.metadata.name {
            timeline.children.insert(name.clone());
        }
    }
}

/// Watches `api` in a task, handing every object to `seen` with its receive time; resolves once the initial
/// list is done.
async fn spawn_watch(
    api: Api<DynamicObject>,
    tracker: Arc<Tracker>,
    seen: fn(&Tracker, &DynamicObject, Instant),
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let (synced_tx, synced_rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut synced = Some(synced_tx);
        let mut stream = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(event) = stream.next().await {
            let at = Instant::now();
            match event {
                Ok(WatchEvent::Apply(object) | WatchEvent::InitApply(object)) => seen(&tracker, &object, at),
                Ok(WatchEvent::InitDone) => {
                    if let Some(synced) = synced.take() {
                        let _ = synced.send(());
                    }
                }
                Ok(WatchEvent::Init | WatchEvent::Delete(_)) => {}
                Err(error) => tracing::warn!(%error, "load driver watch failed; retrying"),
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(60), synced_rx)
        .await
        .context("the load driver's watch did not sync")??;
    Ok(task)
}

/// CPU seconds used by the API server, the host and the load driver.
#[derive(Debug, Clone, Copy, Default)]
struct CpuTimes {
    apiserver: f64,
    host: f64,
    driver: f64,
}

impl CpuTimes {
    fn read(apiserver: u32, host: u32, ticks: f64) -> anyhow::Result<Self> {
        Ok(Self {
            apiserver: cpu_seconds(apiserver, ticks)?,
            host: cpu_seconds(host, ticks)?,
            driver: cpu_seconds(std::process::id(), ticks)?,
        })
    }

    fn since(self, earlier: Self) -> Self {
        Self {
            apiserver: self.apiserver - earlier.apiserver,
            host: self.host - earlier.host,
            driver: self.driver - earlier.driver,
        }
    }
}

/// Latency percentiles of one measured interval.
#[derive(Debug, Clone, Copy, Default)]
struct Percentiles {
    samples: usize,
    p50: Duration,
    p99: Duration,
}

impl Percentiles {
    /// Nearest-rank percentiles.
    fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let rank = |quantile: f64| {
            let index = ((quantile * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
            samples[index]
        };
        if samples.is_empty() {
            return Self::default();
        }
        Self {
            samples: samples.len(),
            p50: rank(0.50),
            p99: rank(0.99),
        }
    }

    fn cell(&self) -> String {
        if self.samples == 0 {
            return "–".into();
        }
        format!("{} / {}", milliseconds(self.p50), milliseconds(self.p99))
    }
}

fn milliseconds(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// From the create call's return to the first `later` event, for the sets whose names start with `prefix`.
/// Events received before the create call returned count as zero.
fn latencies(timeline: &Timeline, prefix: &str, later: impl Fn(&Timeline) -> &HashMap<String, Instant>) -> Percentiles {
    Percentiles::of(
        timeline
            .created
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .filter_map(|(name, created)| Some(later(timeline).get(name)?.saturating_duration_since(*created)))
            .collect(),
    )
}

/// Latencies of one group of sets.
#[derive(Debug, Clone, Copy, Default)]
struct Latencies {
    seen: Percentiles,
    finalizer: Percentiles,
    first_child: Percentiles,
    ready: Percentiles,
}

impl Latencies {
    fn of(timeline: &Timeline, prefix: &str) -> Self {
        Self {
            seen: latencies(timeline, prefix, |t| &t.seen),
            finalizer: latencies(timeline, prefix, |t| &t.finalizer),
            first_child: latencies(timeline, prefix, |t| &t.first_child),
            ready: latencies(timeline, prefix, |t| &t.ready),
        }
    }
}

/// Reconcile counts reported by the host.
#[derive(Debug, Clone, Default)]
struct Reconciles {
    success: u64,
    conflict: u64,
    error: u64,
    mean: Duration,
}

impl Reconciles {
    fn parse(line: &str) -> anyhow::Result<Self> {
        let summary: Value = serde_json::from_str(line)?;
        let result = |name: &str| summary["results"][name].as_f64().unwrap_or(0.0) as u64;
        let count = summary["count"].as_f64().unwrap_or(0.0);
        let seconds = summary["seconds"].as_f64().unwrap_or(0.0);
        Ok(Self {
            success: result("success"),
            conflict: result("conflict"),
            error: result("error"),
            mean: if count > 0.0 {
                Duration::from_secs_f64(seconds / count)
            } else {
                Duration::ZERO
            },
        })
    }

    fn total(&self) -> u64 {
        self.success + self.conflict + self.error
    }
}

/// Everything one converge run measured.
#[derive(Debug, Clone)]
struct ConvergeRun {
    variant: Variant,
    /// Concurrent reconciles of the controller.
    concurrency: usize,
    parents: usize,
    ready: usize,
    children: usize,
    creation: Duration,
    /// From the first create call to the last set observed Ready; `None` when it timed out.
    converge: Option<Duration>,
    burst: Latencies,
    isolated: Latencies,
    reconciles: Reconciles,
    cpu: CpuTimes,
    host_idle: Memory,
    host_end: Memory,
    apiserver_idle: Memory,
    apiserver_end: Memory,
    load_before: String,
    load_after: String,
    /// A converged set and its children, for the plugin-call measurement.
    sample: Option<(Value, Vec<Value>)>,
    /// Writes the API server committed from the first create to the last Ready (its revision counter).
    writes: u64,
    /// Sets created one at a time after the burst.
    isolated_sets: usize,
}

impl ConvergeRun {
    fn parents_per_second(&self) -> Option<f64> {
        self.converge.map(|time| self.parents as f64 / time.as_secs_f64())
    }

    /// Writes per set besides its create: the host's finalizer, children, status and events.
    fn host_writes_per_set(&self) -> f64 {
        self.writes.saturating_sub(self.parents as u64) as f64 / self.parents as f64
    }

    /// Reconciles per set, the isolated sets counted with the burst.
    fn reconciles_per_set(&self) -> f64 {
        self.reconciles.total() as f64 / (self.parents + self.isolated_sets) as f64
    }

    /// Reconciles finished per second of converge time (the isolated sets' few reconciles included).
    fn reconciles_per_second(&self) -> Option<f64> {
        self.converge
            .map(|time| self.reconciles.total() as f64 / time.as_secs_f64())
    }

    /// Share of the converge time the workers spent inside reconciles: reconciles × mean reconcile time /
    /// (workers × converge time). Near 100% means every worker was busy all along.
    fn worker_occupancy(&self) -> Option<f64> {
        self.converge.map(|time| {
            self.reconciles.total() as f64 * self.reconciles.mean.as_secs_f64()
                / (self.concurrency as f64 * time.as_secs_f64())
        })
    }
}

/// The API server's current revision (every committed write increments it).
async fn revision(api: &Api<DynamicObject>) -> anyhow::Result<u64> {
    let list = api.list_metadata(&ListParams::default().limit(1)).await?;
    let text = list.metadata.resource_version.unwrap_or_default();
    text.parse()
        .with_context(|| format!("resourceVersion {text:?} is not a number"))
}

/// Creates `count` sets named `<prefix><index>` with `in_flight` creates at a time, recording when each
/// create returned.
async fn create_sets(
    client: &kube::Client,
    tracker: &Arc<Tracker>,
    prefix: &str,
    count: usize,
    replicas: u32,
    in_flight: usize,
) -> anyhow::Result<()> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &set_resource());
    futures::stream::iter(0..count)
        .map(|index| {
            let api = api.clone();
            let tracker = tracker.clone();
            async move {
                let name = format!("{prefix}{index:04}");
                api.create(&PostParams::default(), &new_set(&name, replicas))
                    .await
                    .with_context(|| format!("creating ConfigMapSet {name}"))?;
                tracker.created(name, Instant::now());
                anyhow::Ok(())
            }
        })
        .buffer_unordered(in_flight)
        .try_for_each(|()| async { Ok(()) })
        .await
}

/// Waits until `target` sets are Ready or `timeout` passes; returns whether they all became Ready.
async fn wait_ready(tracker: &Tracker, target: usize, timeout: Duration) -> bool {
    let mut ready = tracker.ready.subscribe();
    tokio::time::timeout(timeout, ready.wait_for(|count| *count >= target))
        .await
        .is_ok_and(|waited| waited.is_ok())
}

/// One converge run of `variant` on a fresh API server.
async fn converge(
    settings: &Settings,
    variant: Variant,
    concurrency: usize,
    ticks: f64,
) -> anyhow::Result<ConvergeRun> {
    eprintln!(
        "converge: {} — starting a fresh API server and the host (concurrency {concurrency})",
        variant.as_str()
    );
    let cluster = Cluster::start().await?;
    let apiserver_idle = Memory::of(cluster.apiserver.pid)?;
    let mut host = cluster.start_host(variant, concurrency).await?;
    let host_idle = Memory::of(host.pid)?;

    let tracker = Tracker::new();
    let sets: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), NAMESPACE, &set_resource());
    let config_maps: Api<DynamicObject> =
        Api::namespaced_with(cluster.client.clone(), NAMESPACE, &config_map_resource());
    let watches = [
        spawn_watch(sets.clone(), tracker.clone(), Tracker::set_seen).await?,
        spawn_watch(config_maps.clone(), tracker.clone(), Tracker::child_seen).await?,
    ];

    let load_before = load_average();
    let revision_before = revision(&sets).await?;
    let cpu_before = CpuTimes::read(cluster.apiserver.pid, host.pid, ticks)?;
    eprintln!(
        "converge: {} — creating {} ConfigMapSets x {} replicas, {} in flight",
        variant.as_str(),
        settings.parents,
        settings.replicas,
        settings.in_flight
    );
    let started = Instant::now();
    create_sets(
        &cluster.client,
        &tracker,
        "set-",
        settings.parents,
        settings.replicas,
        settings.in_flight,
    )
    .await?;
    let creation = started.elapsed();
    let all_ready = wait_ready(&tracker, settings.parents, settings.timeout).await;
    let cpu = CpuTimes::read(cluster.apiserver.pid, host.pid, ticks)?.since(cpu_before);
    let writes = revision(&sets).await?.saturating_sub(revision_before);
    let load_after = load_average();
    let converge = all_ready.then(|| {
        let timeline = tracker.timeline();
        let last = timeline.ready.values().max().copied().unwrap_or(started);
        last.saturating_duration_since(started)
    });
    let host_end = Memory::of(host.pid)?;
    let apiserver_end = Memory::of(cluster.apiserver.pid)?;
    let ready = *tracker.ready.borrow();
    eprintln!(
        "converge: {} — {ready} of {} Ready after {:.1}s",
        variant.as_str(),
        settings.parents,
        started.elapsed().as_secs_f64()
    );

    // Isolated sets: one at a time on the idle host, each Ready before the next is created.
    if all_ready {
        for index in 0..settings.isolated {
            create_sets(
                &cluster.client,
                &tracker,
                &format!("solo-{index:04}-"),
                1,
                settings.replicas,
                1,
            )
            .await?;
            if !wait_ready(&tracker, settings.parents + index + 1, Duration::from_secs(30)).await {
                bail!("isolated set {index} did not become Ready within 30s");
            }
        }
    }
    let reconciles = Reconciles::parse(&host.request("metrics").await?)?;
    let sample = sample_set(&cluster.client).await?;

    let (burst, isolated, children) = {
        let timeline = tracker.timeline();
        (
            Latencies::of(&timeline, "set-"),
            Latencies::of(&timeline, "solo-"),
            timeline.children.iter().filter(|name| name.starts_with("set-")).count(),
        )
    };
    for watch in watches {
        watch.abort();
    }
    host.finish().await?;
    cluster.apiserver.finish().await?;
    Ok(ConvergeRun {
        variant,
        concurrency,
        parents: settings.parents,
        ready,
        children,
        creation,
        converge,
        burst,
        isolated,
        reconciles,
        cpu,
        host_idle,
        host_end,
        apiserver_idle,
        apiserver_end,
        load_before,
        load_after,
        sample,
        writes,
        isolated_sets: if all_ready { settings.isolated } else { 0 },
    })
}

/// The first set and its children as the host caches them (no managedFields).
async fn sample_set(client: &kube::Client) -> anyhow::Result<Option<(Value, Vec<Value>)>> {
    let sets: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &set_resource());
    let config_maps: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &config_map_resource());
    let Some(set) = sets.get_opt("set-0000").await? else {
        return Ok(None);
    };
    let children = config_maps
        .list(&ListParams::default().labels(&format!("{SET_LABEL}=set-0000")))
        .await?
        .items;
    let plain = |object: &DynamicObject, resource: &ApiResource| -> anyhow::Result<Value> {
        let mut value = serde_json::to_value(object)?;
        value["apiVersion"] = json!(resource.api_version);
        value["kind"] = json!(resource.kind);
        if let Some(metadata) = value["metadata"].as_object_mut() {
            metadata.remove("managedFields");
        }
        Ok(value)
    };
    let children = children
        .iter()
        .map(|child| plain(child, &config_map_resource()))
        .collect::<anyhow::Result<_>>()?;
    Ok(Some((plain(&set, &set_resource())?, children)))
}

// ---------------------------------------------------------------------------------------------------------
// Cached objects and plugin calls.
// ---------------------------------------------------------------------------------------------------------

/// Memory of the host holding many cached ConfigMaps.
#[derive(Debug, Clone)]
struct CacheRun {
    objects: u64,
    json_bytes: u64,
    sync: Duration,
    before_kib: u64,
    cache_kib: u64,
    cache_peak_kib: u64,
    controller_kib: u64,
    controller_peak_kib: u64,
    /// ConfigMaps created per second by the driver while filling the cluster.
    creates_per_second: f64,
    /// Server-side applies straight from the driver.
    applies: Vec<ApplyCapacity>,
}

/// Server-side applies of new ConfigMaps sent straight from the load driver with `in_flight` at a time.
#[derive(Debug, Clone, Copy)]
struct ApplyCapacity {
    in_flight: usize,
    latency: Percentiles,
    per_second: f64,
}

/// Applies each in-flight level's share of new ConfigMaps, like the host applies children.
const APPLIES_PER_LEVEL: usize = 1000;

async fn measure_apply_capacity(client: &kube::Client, in_flight: usize) -> anyhow::Result<ApplyCapacity> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &config_map_resource());
    let started = Instant::now();
    let latencies: Vec<Duration> = futures::stream::iter(0..APPLIES_PER_LEVEL)
        .map(|index| {
            let api = api.clone();
            async move {
                let name = format!("apply-{in_flight:02}-{index:05}");
                let object = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/name": "bench"}},
                    "data": {"k": "v"},
                });
                let began = Instant::now();
                api.patch(
                    &name,
                    &PatchParams::apply("converge-bench").force(),
                    &Patch::Apply(&object),
                )
                .await
                .with_context(|| format!("applying ConfigMap {name}"))?;
                anyhow::Ok(began.elapsed())
            }
        })
        .buffer_unordered(in_flight)
        .try_collect()
        .await?;
    Ok(ApplyCapacity {
        in_flight,
        per_second: APPLIES_PER_LEVEL as f64 / started.elapsed().as_secs_f64(),
        latency: Percentiles::of(latencies),
    })
}

/// A ConfigMap like a small application configuration: two labels and five keys.
fn new_config_map(index: usize) -> DynamicObject {
    let data: serde_json::Map<String, Value> = (0..5)
        .map(|key| {
            (
                format!("key-{key}"),
                json!(format!("value {key} of configuration {index:05}")),
            )
        })
        .collect();
    let mut object = DynamicObject::new(&format!("config-{index:05}"), &config_map_resource())
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

async fn measure_cache(settings: &Settings) -> anyhow::Result<CacheRun> {
    eprintln!("cache: creating {} ConfigMaps on a fresh API server", settings.cached);
    let cluster = Cluster::start().await?;
    let creating = Instant::now();
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), NAMESPACE, &config_map_resource());
    futures::stream::iter(0..settings.cached)
        .map(|index| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &new_config_map(index)).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(settings.in_flight)
        .try_for_each(|()| async { Ok(()) })
        .await?;
    let creates_per_second = settings.cached as f64 / creating.elapsed().as_secs_f64();
    eprintln!("cache: starting a host that caches them");
    let mut host = Worker::spawn("cache", &[(KUBECONFIG_VARIABLE, path_text(&cluster.kubeconfig)?)]).await?;
    let summary: Value = serde_json::from_str(&host.read_line().await?)?;
    host.finish().await?;
    eprintln!("apply capacity: server-side applies straight from the driver");
    let mut applies = Vec::new();
    for in_flight in [1, 4, 16] {
        applies.push(measure_apply_capacity(&cluster.client, in_flight).await?);
    }
    cluster.apiserver.finish().await?;
    let number = |name: &str| summary[name].as_u64().unwrap_or(0);
    Ok(CacheRun {
        objects: number("objects"),
        json_bytes: number("json_bytes"),
        sync: Duration::from_secs_f64(summary["sync_seconds"].as_f64().unwrap_or(0.0)),
        before_kib: number("before_kib"),
        cache_kib: number("cache_kib"),
        cache_peak_kib: number("cache_peak_kib"),
        controller_kib: number("controller_kib"),
        controller_peak_kib: number("controller_peak_kib"),
        creates_per_second,
        applies,
    })
}

/// Mean time of one reconcile call, wasm and native, for one world view.
#[derive(Debug, Clone)]
struct CallCost {
    view: &'static str,
    wasm: Duration,
    native: Duration,
}

/// Calls both variants directly (no API server) on the views a set goes through: its first reconcile (no
/// children) and a steady-state one (all children present).
fn measure_plugin_calls(set: &Value, children: &[Value]) -> anyhow::Result<Vec<CallCost>> {
    let wasm = Logic::Wasm(load_wasm_plugin()?);
    let native = Variant::Native.load_logic()?;
    let mut first = set.clone();
    if let Some(object) = first.as_object_mut() {
        object.remove("status");
    }
    let views = [
        ("first reconcile: set, no children", first, Vec::new()),
        (
            "steady state: set with status, 3 children",
            set.clone(),
            children.to_vec(),
        ),
    ];
    let mut costs = Vec::new();
    for (name, primary, children) in views {
        let view = WorldView::from_json(&primary, &children, &json!({}));
        costs.push(CallCost {
            view: name,
            wasm: mean_call(&wasm, &view)?,
            native: mean_call(&native, &view)?,
        });
    }
    Ok(costs)
}

fn mean_call(logic: &Logic, view: &WorldView) -> anyhow::Result<Duration> {
    let call = || logic.call(view.clone(), Arc::new(NoReads));
    for _ in 0..PLUGIN_CALLS / 10 {
        call()?;
    }
    let started = Instant::now();
    for _ in 0..PLUGIN_CALLS {
        call()?;
    }
    Ok(started.elapsed() / PLUGIN_CALLS)
}

// ---------------------------------------------------------------------------------------------------------
// The driver and the report.
// ---------------------------------------------------------------------------------------------------------

async fn drive(settings: Settings) -> anyhow::Result<()> {
    let machine = Machine::detect();
    let ticks = clock_ticks_per_second();
    let started = Instant::now();
    let default_concurrency = ControllerOptions::default().concurrency;
    if !settings.scaling.is_empty() {
        return drive_scaling(&settings, &machine, ticks, started).await;
    }
    let mut runs = Vec::new();
    let mut wide_runs = Vec::new();
    // Rounds interleave the variants and concurrencies, so load from elsewhere on the machine spreads over all.
    for _ in 0..settings.rounds {
        for variant in [Variant::Native, Variant::Wasm] {
            runs.push(converge(&settings, variant, default_concurrency, ticks).await?);
        }
        if settings.wide_concurrency > 0 {
            for variant in [Variant::Native, Variant::Wasm] {
                wide_runs.push(converge(&settings, variant, settings.wide_concurrency, ticks).await?);
            }
        }
    }
    let cache = measure_cache(&settings).await?;
    let calls = match runs.iter().find_map(|run| run.sample.clone()) {
        Some((set, children)) => tokio::task::spawn_blocking(move || measure_plugin_calls(&set, &children)).await??,
        None => Vec::new(),
    };
    let report = render_report(
        &settings,
        &machine,
        &runs,
        &wide_runs,
        &cache,
        &calls,
        started.elapsed(),
    );
    if let Some(parent) = settings.output.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&settings.output, &report).with_context(|| format!("writing {}", settings.output.display()))?;
    println!("{report}");
    eprintln!("converge: report written to {}", settings.output.display());
    Ok(())
}

/// The scaling curve: one converge per set count and variant, the counts interleaved so load from elsewhere on the
/// machine spreads over all of them.
async fn drive_scaling(settings: &Settings, machine: &Machine, ticks: f64, started: Instant) -> anyhow::Result<()> {
    let concurrency = ControllerOptions::default().concurrency;
    let mut runs = Vec::new();
    for _ in 0..settings.rounds {
        for &parents in &settings.scaling {
            let sized = Settings {
                parents,
                ..settings.clone()
            };
            for variant in [Variant::Native, Variant::Wasm] {
                runs.push(converge(&sized, variant, concurrency, ticks).await?);
            }
        }
    }
    let report = render_scaling(settings, machine, &runs, started.elapsed());
    if let Some(parent) = settings.output.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&settings.output, &report).with_context(|| format!("writing {}", settings.output.display()))?;
    println!("{report}");
    eprintln!("converge: scaling report written to {}", settings.output.display());
    Ok(())
}

fn render_scaling(settings: &Settings, machine: &Machine, runs: &[ConvergeRun], total: Duration) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Benchmark: converge time as the number of ConfigMapSets grows\n\n\
         Generated by `make bench-scaling` (`CONVERGE_SCALING={} cargo bench -p wasm-reconciler --bench converge`, \
         `host/benches/converge.rs`); do not edit.\n\n\
         - Date: {}\n- Commit: {}\n- Machine: {} CPUs (`nproc`), {}, Linux {}\n\
         - Load: N ConfigMapSets × {} replicas created {} at a time into a fresh embedded API server, then {} \
         isolated sets; default concurrency {}; {} round(s); API latency {} ms per request\n- Whole run: {:.0} s\n",
        settings
            .scaling
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(","),
        machine.date,
        machine.commit,
        machine.cpus,
        machine.cpu_model,
        machine.kernel,
        settings.replicas,
        settings.in_flight,
        settings.isolated,
        ControllerOptions::default().concurrency,
        settings.rounds,
        settings.api_latency_ms,
        total.as_secs_f64(),
    );
    let _ = writeln!(
        out,
        "Medians over rounds. *Per set* divides the converge time (first create → last set Ready) by the number of \
         sets; a flat column means converge time grows linearly with the sets.\n\n\
         | sets | variant | converge time | ms per set | per set vs the smallest count | parents/s | reconciles per set \
         | API writes per set | burst p50 / p99 create → Ready | host peak RSS | API server peak RSS | CPU s: host / API \
         server | load before |\n|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|"
    );
    let mut baseline: HashMap<Variant, f64> = HashMap::new();
    for &parents in &settings.scaling {
        for variant in [Variant::Native, Variant::Wasm] {
            let these: Vec<&ConvergeRun> = runs
                .iter()
                .filter(|run| run.parents == parents && run.variant == variant)
                .collect();
            let Some(time) = median(
                these
                    .iter()
                    .filter_map(|run| run.converge.map(|t| t.as_secs_f64()))
                    .collect(),
            ) else {
                let _ = writeln!(
                    out,
                    "| {parents} | {} | timed out | | | | | | | | | | |",
                    variant.as_str()
                );
                continue;
            };
            let per_set = time * 1000.0 / parents as f64;
            let relative = *baseline.entry(variant).or_insert(per_set);
            let middle = |value: &dyn Fn(&ConvergeRun) -> f64| median(these.iter().map(|run| value(run)).collect());
            let representative = these
                .iter()
                .min_by(|a, b| {
                    let distance =
                        |run: &ConvergeRun| (run.converge.map_or(f64::INFINITY, |t| t.as_secs_f64()) - time).abs();
                    distance(a).total_cmp(&distance(b))
                })
                .expect("a run with a converge time");
            let _ = writeln!(
                out,
                "| {parents} | {} | {time:.2} s | {per_set:.2} | {:.2}× | {:.0} | {:.2} | {:.2} | {} | {} | {} | {:.1} / \
                 {:.1} | {} |",
                variant.as_str(),
                per_set / relative,
                parents as f64 / time,
                middle(&ConvergeRun::reconciles_per_set).unwrap_or_default(),
                middle(&|run| run.writes as f64 / run.parents as f64).unwrap_or_default(),
                representative.burst.ready.cell(),
                mib(these.iter().map(|run| run.host_end.peak_kib).max().unwrap_or(0)),
                mib(these.iter().map(|run| run.apiserver_end.peak_kib).max().unwrap_or(0)),
                middle(&|run| run.cpu.host).unwrap_or_default(),
                middle(&|run| run.cpu.apiserver).unwrap_or_default(),
                representative.load_before,
            );
        }
    }
    let _ = writeln!(
        out,
        "\nThe burst latency and load columns are those of the round closest to the median converge time. Method \
         as in [converge.md](converge.md): separate processes for API server, host and load driver, every run on a \
         fresh API server."
    );
    out
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn seconds(duration: Duration) -> String {
    format!("{:.2} s", duration.as_secs_f64())
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}

/// Converge-time ratio wasm / native, median over rounds.
fn converge_ratio(runs: &[ConvergeRun]) -> Option<f64> {
    let times = |variant: Variant| -> Option<Vec<f64>> {
        runs.iter()
            .filter(|run| run.variant == variant)
            .map(|run| run.converge.map(|time| time.as_secs_f64()))
            .collect()
    };
    Some(median(times(Variant::Wasm)?)? / median(times(Variant::Native)?)?)
}

fn render_report(
    settings: &Settings,
    machine: &Machine,
    runs: &[ConvergeRun],
    wide_runs: &[ConvergeRun],
    cache: &CacheRun,
    calls: &[CallCost],
    total: Duration,
) -> String {
    let mut out = String::new();
    let ratio = converge_ratio(runs);
    let wasm_rate = median(
        runs.iter()
            .filter(|run| run.variant == Variant::Wasm)
            .filter_map(ConvergeRun::parents_per_second)
            .collect(),
    );
    let peak_host = runs.iter().map(|run| run.host_end.peak_kib).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "# Benchmark: converging ConfigMapSets, wasm vs native\n\n\
         Generated by `cargo bench -p wasm-reconciler --bench converge` (`host/benches/converge.rs`); do not edit.\n\n\
         - Date: {}\n- Commit: {}\n- Machine: {} CPUs (`nproc`), {}, Linux {}\n\
         - Load: {} ConfigMapSets × {} replicas, created {} at a time; {} isolated sets; {} cached ConfigMaps; \
         {} round(s); API latency {} ms per request\n- Whole run: {:.0} s\n",
        machine.date,
        machine.commit,
        machine.cpus,
        machine.cpu_model,
        machine.kernel,
        settings.parents,
        settings.replicas,
        settings.in_flight,
        settings.isolated,
        settings.cached,
        settings.rounds,
        settings.api_latency_ms,
        total.as_secs_f64(),
    );

    let _ = writeln!(
        out,
        "## Aims\n\n| aim | measured | met |\n|---|---|---|\n\
         | wasm/native converge time ≤ 1.2× | {} | {} |\n\
         | ≥ 300 parents/s (wasm) | {} | {} |\n\
         | ≤ 150 MiB host RSS with {} cached objects | {} | {} |\n",
        ratio.map_or_else(|| "timed out".into(), |r| format!("{r:.3}×")),
        verdict(ratio.is_some_and(|r| r <= 1.2)),
        wasm_rate.map_or_else(|| "timed out".into(), |r| format!("{r:.0} parents/s")),
        verdict(wasm_rate.is_some_and(|r| r >= 300.0)),
        cache.objects,
        mib(cache.controller_kib),
        verdict(cache.controller_kib <= 150 * 1024),
    );

    let apply_ceiling = cache
        .applies
        .iter()
        .find(|apply| apply.in_flight == ControllerOptions::default().concurrency)
        .map(|apply| apply.per_second);
    let _ = writeln!(
        out,
        "## Summary (medians over {} round(s), default concurrency {})\n\n| | native | wasm |\n|---|---|---|",
        settings.rounds,
        ControllerOptions::default().concurrency,
    );
    let summary_row = |out: &mut String,
                       runs: &[ConvergeRun],
                       label: &str,
                       value: &dyn Fn(&ConvergeRun) -> Option<f64>,
                       digits: usize| {
        let cell = |variant: Variant| {
            median(
                runs.iter()
                    .filter(|run| run.variant == variant)
                    .filter_map(value)
                    .collect(),
            )
            .map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
        };
        let _ = writeln!(out, "| {label} | {} | {} |", cell(Variant::Native), cell(Variant::Wasm));
    };
    let converge_seconds = |run: &ConvergeRun| run.converge.map(|t| t.as_secs_f64());
    let occupancy = |run: &ConvergeRun| run.worker_occupancy().map(|s| s * 100.0);
    summary_row(&mut out, runs, "converge time (s)", &converge_seconds, 2);
    summary_row(&mut out, runs, "parents/s", &ConvergeRun::parents_per_second, 0);
    summary_row(&mut out, runs, "worker occupancy (%)", &occupancy, 0);
    summary_row(
        &mut out,
        runs,
        "host writes per set (finalizer, children, status, events)",
        &|run| Some(run.host_writes_per_set()),
        2,
    );
    summary_row(
        &mut out,
        runs,
        "rough ceiling (parents/s): API-alone applies/s at the same concurrency ÷ host writes per set",
        &|run| apply_ceiling.map(|per_second| per_second / run.host_writes_per_set().max(1.0)),
        0,
    );
    if !wide_runs.is_empty() {
        let wide = settings.wide_concurrency;
        summary_row(
            &mut out,
            wide_runs,
            &format!("converge time (s), {wide} workers"),
            &converge_seconds,
            2,
        );
        summary_row(
            &mut out,
            wide_runs,
            &format!("parents/s, {wide} workers"),
            &ConvergeRun::parents_per_second,
            0,
        );
        summary_row(
            &mut out,
            wide_runs,
            &format!("worker occupancy (%), {wide} workers"),
            &occupancy,
            0,
        );
        let _ = writeln!(
            out,
            "| wasm/native converge time, {wide} workers | {} | |",
            converge_ratio(wide_runs).map_or_else(|| "–".into(), |r| format!("{r:.3}×"))
        );
    }
    out.push('\n');

    let _ = writeln!(
        out,
        "## Converge {} sets × {} replicas\n",
        settings.parents, settings.replicas
    );
    converge_table(&mut out, runs);
    let _ = writeln!(
        out,
        "\nHost peak RSS over all runs: {}. Burst percentiles are over the {} sets of the burst; isolated ones \
         over {} sets created one at a time on the idle host, each Ready before the next (with so few samples \
         p99 is close to the maximum).\n",
        mib(peak_host),
        settings.parents,
        settings.isolated,
    );

    if !wide_runs.is_empty() {
        let _ = writeln!(
            out,
            "## The same load with {} concurrent reconciles\n\n\
             `ControllerOptions::concurrency` raised from the default {} to {}, in every round: shows whether the \
             workers, rather than the API server or the plugin, bound the rate.\n",
            settings.wide_concurrency,
            ControllerOptions::default().concurrency,
            settings.wide_concurrency,
        );
        converge_table(&mut out, wide_runs);
        out.push('\n');
    }

    let _ = writeln!(
        out,
        "## Host memory with {} cached ConfigMaps\n\n\
         | | value |\n|---|---|\n\
         | objects cached | {} |\n\
         | mean cached JSON per object (managedFields stripped) | {} bytes |\n\
         | initial list and sync | {} |\n\
         | RSS before the cache (client ready) | {} |\n\
         | RSS with the cache synced | {} |\n\
         | RSS attributable to the cache | {} ({} bytes per object) |\n\
         | peak RSS while syncing (VmHWM) | {} |\n\
         | RSS with the wasm configmapset controller on top | {} |\n\
         | peak RSS of that host (VmHWM) | {} |\n",
        settings.cached,
        cache.objects,
        cache.json_bytes.checked_div(cache.objects).unwrap_or(0),
        seconds(cache.sync),
        mib(cache.before_kib),
        mib(cache.cache_kib),
        mib(cache.cache_kib.saturating_sub(cache.before_kib)),
        (cache.cache_kib.saturating_sub(cache.before_kib) * 1024)
            .checked_div(cache.objects)
            .unwrap_or(0),
        mib(cache.cache_peak_kib),
        mib(cache.controller_kib),
        mib(cache.controller_peak_kib),
    );

    let _ = writeln!(
        out,
        "## The API server alone\n\n\
         Filling the cluster above: {:.0} ConfigMap creates/s with {} in flight. Server-side applies of new \
         ConfigMaps sent straight from the load driver, {APPLIES_PER_LEVEL} per level, after that host stopped:\n\n\
         | in flight | latency p50 / p99 | applies/s |\n|---|---|---|",
        cache.creates_per_second, settings.in_flight,
    );
    for apply in &cache.applies {
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} |",
            apply.in_flight,
            apply.latency.cell(),
            apply.per_second
        );
    }
    out.push('\n');

    if !calls.is_empty() {
        let _ = writeln!(
            out,
            "## One reconcile call, no API server\n\n\
             Mean over {PLUGIN_CALLS} calls on one thread (encode view → call → decode outcome; wasm in a fresh \
             instance per call).\n\n| world view | wasm | native | ratio |\n|---|---|---|---|"
        );
        for call in calls {
            let _ = writeln!(
                out,
                "| {} | {:.1} µs | {:.1} µs | {:.1}× |",
                call.view,
                call.wasm.as_secs_f64() * 1e6,
                call.native.as_secs_f64() * 1e6,
                call.wasm.as_secs_f64() / call.native.as_secs_f64().max(1e-9),
            );
        }
        out.push('\n');
    }

    out.push_str(METHOD);
    out
}

/// One column per run.
fn converge_table(out: &mut String, runs: &[ConvergeRun]) {
    let mut header = String::from("| | ");
    let mut rule = String::from("|---|");
    let mut rounds: HashMap<Variant, usize> = HashMap::new();
    for run in runs {
        let round = rounds.entry(run.variant).or_default();
        *round += 1;
        let _ = write!(
            header,
            "{} #{round}, {} workers | ",
            run.variant.as_str(),
            run.concurrency
        );
        rule.push_str("---|");
    }
    let _ = writeln!(out, "{}\n{rule}", header.trim_end());
    let row = |out: &mut String, label: &str, cell: &dyn Fn(&ConvergeRun) -> String| {
        let cells: Vec<String> = runs.iter().map(cell).collect();
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
    };
    row(out, "converge time (first create → last Ready)", &|run| {
        run.converge
            .map_or_else(|| format!("timed out ({} Ready)", run.ready), seconds)
    });
    row(out, "parents/s", &|run| {
        run.parents_per_second()
            .map_or_else(|| "–".into(), |rate| format!("{rate:.0}"))
    });
    row(out, "reconciles/s", &|run| {
        run.reconciles_per_second()
            .map_or_else(|| "–".into(), |rate| format!("{rate:.0}"))
    });
    row(out, "reconciles per set (burst and isolated sets)", &|run| {
        format!("{:.2}", run.reconciles_per_set())
    });
    row(out, "worker occupancy (reconciles × mean ÷ workers × time)", &|run| {
        run.worker_occupancy()
            .map_or_else(|| "–".into(), |share| format!("{:.0}%", share * 100.0))
    });
    row(out, "API writes (revision delta) per set, create included", &|run| {
        format!("{:.2}", run.writes as f64 / run.parents as f64)
    });
    row(out, "creating the sets (client side)", &|run| seconds(run.creation));
    row(out, "children of the burst sets seen", &|run| run.children.to_string());
    type Group = fn(&ConvergeRun) -> &Latencies;
    type Stage = fn(&Latencies) -> &Percentiles;
    let groups: [(&str, Group); 2] = [("burst", |run| &run.burst), ("isolated", |run| &run.isolated)];
    let stages: [(&str, Stage); 4] = [
        ("set seen by a watch", |l| &l.seen),
        ("first reconcile's first write", |l| &l.finalizer),
        ("first child seen", |l| &l.first_child),
        ("Ready seen", |l| &l.ready),
    ];
    for (group, latencies) in groups {
        for (stage, percentiles) in stages {
            row(out, &format!("{group} p50 / p99: create → {stage}"), &|run| {
                percentiles(latencies(run)).cell()
            });
        }
    }
    row(out, "reconciles (success / conflict / error)", &|run| {
        format!(
            "{} ({} / {} / {})",
            run.reconciles.total(),
            run.reconciles.success,
            run.reconciles.conflict,
            run.reconciles.error
        )
    });
    row(out, "mean reconcile (dequeue → last write)", &|run| {
        milliseconds(run.reconciles.mean)
    });
    row(out, "CPU during converge: API server", &|run| {
        format!("{:.1} s", run.cpu.apiserver)
    });
    row(out, "CPU during converge: host", &|run| {
        format!("{:.1} s", run.cpu.host)
    });
    row(out, "CPU during converge: load driver", &|run| {
        format!("{:.1} s", run.cpu.driver)
    });
    row(out, "host RSS after start (idle)", &|run| mib(run.host_idle.rss_kib));
    row(out, "host peak RSS (VmHWM)", &|run| mib(run.host_end.peak_kib));
    row(out, "host RSS after converge", &|run| mib(run.host_end.rss_kib));
    row(out, "API server RSS before the host started", &|run| {
        mib(run.apiserver_idle.rss_kib)
    });
    row(out, "API server peak RSS (VmHWM)", &|run| {
        mib(run.apiserver_end.peak_kib)
    });
    row(out, "load average before → after", &|run| {
        format!("{} → {}", run.load_before, run.load_after)
    });
}

fn verdict(met: bool) -> &'static str {
    if met { "yes" } else { "no" }
}

/// How the numbers are taken; appended to the report.
const METHOD: &str = "\
## Method

- **Processes.** The benchmark binary re-executes itself in three roles so that every party is measured on its \
own: a fresh in-memory embedded API server per run (`ApiServer::builder().build()`, serving HTTP on \
127.0.0.1), the host (`Caches` + one `Controller` for `configmapset`, `ControllerOptions::default()` unless \
stated, reached over HTTP through a kubeconfig exactly like `wasm-reconciler run`), and the load driver (the \
parent process). All three share the machine's CPUs; `wasm-reconciler dev` runs the API server and the host in \
one process, which these numbers split apart.
- **Variants.** `wasm`: the `configmapset` component built by `wasm-reconciler-artifacts` (`wasm-release` \
profile), loaded with `PluginEngine::load` and default limits, a fresh instance per reconcile. `native`: the same \
`ConfigMapSetReconciler` linked into the host as `NativePlugin`, called through the same world-view encoding, \
outcome decoding, workqueue, caches and API writes. Each run gets its own API server and host process; rounds \
alternate native and wasm, and the summary and the aims use the median over rounds.
- **Converge time.** The driver creates the sets through the kube client over HTTP with bounded parallelism, and \
watches sets and ConfigMaps (kube `watcher`). Converge time runs from just before the first create call to the \
receive time of the last set's first version with `Ready=True`; parents/s is sets divided by it. API writes are \
the growth of the API server's revision counter over the same span (every committed write increments it).
- **Event-to-reconcile latency.** The runtime is not instrumented. The start of a set's first reconcile is \
observed from outside: the first thing that reconcile does is add the plugin's finalizer to the set, so \
*create → first reconcile's first write* is the time from the create call's return (client clock) to the driver's \
watch receiving the first version of the set carrying the finalizer. It over-states the wait for the reconcile by \
one finalizer PATCH round trip plus one watch delivery; *create → set seen by a watch* measures a watch delivery \
on its own (an event received before the create call returned counts as 0). *create → first child seen* is the \
receive time of the first ConfigMap controlled by the set (creationTimestamp has only second resolution, so \
receive times are used throughout). Under the burst, latency is dominated by the wait in the workqueue; the \
isolated sets show the latency of an idle host.
- **Worker occupancy** is reconciles × mean reconcile time (both from the host's Prometheus metrics) ÷ (workers × \
converge time). Near 100% means the workers were never idle: the rate is bounded by how many reconciles run at \
once and how long each one takes, which is mostly its API round trips, made one after another.
- **Host RSS.** `VmRSS` and `VmHWM` of the host process from `/proc/<pid>/status`: after the controller started \
and its caches synced (idle), and at the end of the converge. The host process holds only the host (no API server, \
no load driver); the API server's own RSS is listed separately.
- **Cached objects.** A fresh API server gets N ConfigMaps (two labels, five data keys). A separate host process \
builds its kube client and makes two requests (baseline `VmRSS`), then starts a `Caches` and the v1/ConfigMap \
`KindCache` (`get_or_start`, `wait_synced`), waits 0.5 s and reads `VmRSS` again: the difference is the memory \
attributable to the cache (the parsed objects, their JSON text, the indexes, and whatever the allocator kept \
from the initial list). It then starts the wasm configmapset controller on the same caches (it owns \
ConfigMaps, so it shares that cache) and reads `VmRSS` once more: the total a host with that many cached objects \
needs.
- **The API server alone.** Server-side applies of new ConfigMaps sent by the driver with 1, 4 and 16 in flight, \
no host running: what the API server answers when nothing else competes for it.
- **Plugin calls.** Both variants called directly, without an API server, on the first and the steady-state \
world view of a converged set taken from the cluster (managedFields stripped, as the cache does).
- **Caveats.** A shared 2-CPU machine: other work on it shows in the load averages and makes runs noisy. The \
driver's two watches add load to the API server that a real deployment would not have.
";
