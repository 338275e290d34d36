//! One benchmark run: the API server, then every contender in turn for each round (converge N sets, delete
//! them), then every contender again on a cluster holding many ConfigMaps, measuring memory at rest.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use kube::Client;

use crate::contender::{Contender, Programs};
use crate::load::{self, SetTracker};
use crate::process::{EmbeddedApiServer, Running};
use crate::procfs::{self, Machine, Sample};
use crate::proxy::{Counts, Proxy, RequestLog};

/// The API server to run against.
#[derive(Debug, Clone)]
pub enum Server {
    /// `wasm-reconciler apiserver`, started by the driver.
    Embedded,
    /// An API server already running, reached through this kubeconfig.
    Kubeconfig(PathBuf),
}

/// The knobs of a run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The API server.
    pub server: Server,
    /// Contenders, in report order.
    pub contenders: Vec<Contender>,
    /// ConfigMapSets per converge.
    pub sets: usize,
    /// Replicas per set.
    pub replicas: u32,
    /// Creations and deletions in flight.
    pub in_flight: usize,
    /// Rounds; every contender runs once per round.
    pub rounds: usize,
    /// ConfigMaps in the cluster for the memory-at-rest measurements, ascending (empty skips them).
    pub cached_config_maps: Vec<usize>,
    /// How long a contender must make no request and use (almost) no CPU to count as idle.
    pub quiet: Duration,
    /// Longest wait for a converge or a deletion.
    pub phase_timeout: Duration,
    /// Programs of the contenders.
    pub programs: Programs,
    /// The ConfigMapSet CRD.
    pub crd: PathBuf,
    /// Logs, kubeconfigs and the plugin directory.
    pub work_dir: PathBuf,
}

/// What one contender did in one round.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Who.
    pub contender: Contender,
    /// Which round (from 1).
    pub round: usize,
    /// Start until ready (watches open) and idle.
    pub startup: Duration,
    /// At rest after start.
    pub idle: Sample,
    /// First create until the last set was seen Ready; `None` when it timed out.
    pub converge: Option<Duration>,
    /// Requests from the first create until the contender was idle again.
    pub converge_requests: Counts,
    /// CPU seconds over the same span.
    pub converge_cpu: f64,
    /// CPU seconds of the embedded API server over the same span (`None` for an API server elsewhere).
    pub converge_server_cpu: Option<f64>,
    /// At rest after the converge.
    pub after_converge: Sample,
    /// First delete until the last set was gone; `None` when it timed out.
    pub delete: Option<Duration>,
    /// Requests from the first delete until the contender was idle again.
    pub delete_requests: Counts,
    /// CPU seconds over the same span.
    pub delete_cpu: f64,
    /// CPU seconds of the embedded API server over the same span.
    pub delete_server_cpu: Option<f64>,
    /// At the end (its `peak_rss_bytes` is the peak of the whole run).
    pub end: Sample,
    /// Load average before and after.
    pub load: (String, String),
}

/// One contender started on a cluster holding many ConfigMaps.
#[derive(Debug, Clone)]
pub struct CachedResult {
    /// Who.
    pub contender: Contender,
    /// Which round (from 1).
    pub round: usize,
    /// ConfigMaps in the cluster.
    pub cached: usize,
    /// Start until ready and idle.
    pub startup: Duration,
    /// At rest.
    pub sample: Sample,
    /// Requests until idle.
    pub requests: Counts,
}

/// Everything a run measured.
#[derive(Debug)]
pub struct Outcome {
    /// The knobs.
    pub settings: Settings,
    /// The machine.
    pub machine: Machine,
    /// Load average at the start and at the end.
    pub load: (String, String),
    /// When it started (UTC).
    pub started: chrono::DateTime<chrono::Utc>,
    /// How long it took.
    pub elapsed: Duration,
    /// Converge runs, in the order they ran.
    pub runs: Vec<RunResult>,
    /// Memory-at-rest runs.
    pub cached: Vec<CachedResult>,
    /// Kubernetes version the API server reports.
    pub server_version: String,
}

/// Runs the whole benchmark.
pub async fn run(settings: Settings) -> Result<Outcome> {
    let started = chrono::Utc::now();
    let clock = Instant::now();
    let machine = Machine::read();
    let load_before = procfs::load_average();
    settings.programs.check(&settings.contenders)?;
    let Prepared {
        plugins_dir,
        embedded: server,
        client,
        upstream,
        server_version,
    } = prepare(&settings.server, &settings.programs, &settings.work_dir, &settings.crd).await?;

    let bench = Bench {
        settings: &settings,
        server_pid: server.as_ref().map(|server| server.process.pid()),
        client,
        upstream,
        plugins_dir,
    };
    let mut runs = Vec::new();
    for round in 1..=settings.rounds {
        for contender in rotated(&settings.contenders, round - 1) {
            tracing::info!(contender = contender.label(), round, "converge run");
            let result = bench.converge_run(contender, round).await?;
            tracing::info!(
                contender = contender.label(),
                round,
                converge_s = result.converge.map(|d| d.as_secs_f64()),
                requests_per_set = ratio(result.converge_requests.total(), settings.sets),
                cpu_s = result.converge_cpu,
                "converged"
            );
            runs.push(result);
        }
    }
    let cached = if !settings.cached_config_maps.is_empty() {
        bench.cached_runs().await?
    } else {
        Vec::new()
    };
    if let Some(server) = server {
        server.process.stop().await;
    }
    Ok(Outcome {
        load: (load_before, procfs::load_average()),
        started,
        elapsed: clock.elapsed(),
        machine,
        runs,
        cached,
        server_version,
        settings,
    })
}

/// What every run starts from: the plugin directory, the API server (started when embedded), the driver's and
/// the proxy's clients, and the CRD installed.
pub struct Prepared {
    /// `--plugins-dir` for `wasm-reconciler run`.
    pub plugins_dir: PathBuf,
    /// The embedded API server, when the driver started one.
    pub embedded: Option<EmbeddedApiServer>,
    /// The driver's client.
    pub client: Client,
    /// The proxies' client.
    pub upstream: Client,
    /// Kubernetes version the API server reports.
    pub server_version: String,
}

/// Creates the work directory's logs and plugin directory, starts or reaches the API server and installs the CRD.
pub async fn prepare(server: &Server, programs: &Programs, work_dir: &Path, crd: &Path) -> Result<Prepared> {
    std::fs::create_dir_all(work_dir.join("logs")).with_context(|| format!("creating {}", work_dir.display()))?;
    let plugins_dir = programs.prepare_plugin_dir(work_dir)?;
    let (kubeconfig, embedded) = match server {
        Server::Embedded => {
            let server = EmbeddedApiServer::start(&programs.host, work_dir).await?;
            tracing::info!(kubeconfig = %server.kubeconfig.display(), "embedded API server started");
            (server.kubeconfig.clone(), Some(server))
        }
        Server::Kubeconfig(path) => (path.clone(), None),
    };
    let client = client_from(&kubeconfig, true).await?;
    let upstream = client_from(&kubeconfig, false).await?;
    let server_version = client
        .apiserver_version()
        .await
        .map(|info| info.git_version)
        .context("asking the API server for its version")?;
    load::install_crd(&client, crd).await?;
    Ok(Prepared {
        plugins_dir,
        embedded,
        client,
        upstream,
        server_version,
    })
}

/// Contenders starting at `offset`, so that no contender always goes first.
fn rotated(contenders: &[Contender], offset: usize) -> Vec<Contender> {
    let mut order = contenders.to_vec();
    if !order.is_empty() {
        let len = order.len();
        order.rotate_left(offset % len);
    }
    order
}

fn ratio(n: u64, sets: usize) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let value = n as f64 / sets.max(1) as f64;
    value
}

/// A kube client for the driver (`retry`: kube's own retries of 429/503) or for the proxy (no retries, no read
/// timeout: watches stay open as long as the contender wants).
async fn client_from(kubeconfig: &Path, retry: bool) -> Result<Client> {
    let file = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading kubeconfig {}", kubeconfig.display()))?;
    let mut config = kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default()).await?;
    if !retry {
        config.default_retry = false;
        config.read_timeout = None;
    }
    Ok(Client::try_from(config)?)
}

struct Bench<'a> {
    settings: &'a Settings,
    server_pid: Option<u32>,
    client: Client,
    upstream: Client,
    plugins_dir: PathBuf,
}

/// A contender running behind its own proxy.
struct Started {
    process: Running,
    proxy: Proxy,
    startup: Duration,
}

impl Bench<'_> {
    /// CPU seconds of the embedded API server so far.
    fn server_cpu(&self) -> Option<f64> {
        self.server_pid
            .and_then(|pid| procfs::sample(pid).ok())
            .map(|sample| sample.cpu_seconds)
    }

    async fn start(&self, contender: Contender, tag: &str, startup_timeout: Duration) -> Result<Started> {
        let proxy = Proxy::start(self.upstream.clone()).await?;
        let kubeconfig = self.settings.work_dir.join(format!("{tag}.kubeconfig"));
        std::fs::write(
            &kubeconfig,
            // JSON is YAML: every kubeconfig loader reads it.
            serde_json::to_string_pretty(&load::proxy_kubeconfig(&proxy.url()))?,
        )
        .with_context(|| format!("writing {}", kubeconfig.display()))?;
        let log = self.settings.work_dir.join("logs").join(format!("{tag}.log"));
        let mut process = self
            .settings
            .programs
            .start(contender, &kubeconfig, &self.plugins_dir, &log)?;
        let startup = wait_idle(
            &mut process,
            proxy.log(),
            self.settings.quiet,
            startup_timeout,
            contender.watched(),
        )
        .await
        .with_context(|| format!("{} did not become ready and idle", contender.label()))?;
        Ok(Started {
            process,
            proxy,
            startup,
        })
    }

    async fn converge_run(&self, contender: Contender, round: usize) -> Result<RunResult> {
        let settings = self.settings;
        let namespace = format!("peers-{}-r{round}", contender.slug());
        load::create_namespace(&self.client, &namespace).await?;
        let mut tracker = SetTracker::start(&self.client, &namespace).await?;
        let load_before = procfs::load_average();
        let Started {
            mut process,
            proxy,
            startup,
        } = self
            .start(
                contender,
                &format!("{}-r{round}", contender.slug()),
                Duration::from_secs(120),
            )
            .await?;
        let idle = process.sample()?;

        let requests_before = proxy.log().counts();
        let server_before = self.server_cpu();
        let first_create = Instant::now();
        load::create_sets(
            &self.client,
            &namespace,
            settings.sets,
            settings.replicas,
            settings.in_flight,
        )
        .await?;
        let sets = settings.sets;
        let converge = tracker
            .wait_for(settings.phase_timeout.saturating_sub(first_create.elapsed()), |tally| {
                tally.ready >= sets
            })
            .await
            .map(|_| first_create.elapsed());
        if converge.is_none() {
            tracing::warn!(contender = contender.label(), round, tally = ?tracker.tally(), log = %process.log().display(), "converge timed out");
        }
        settle(&mut process, proxy.log(), settings.quiet).await?;
        let after_converge = process.sample()?;
        let requests_converged = proxy.log().counts();
        let server_converged = self.server_cpu();

        let first_delete = Instant::now();
        load::delete_sets(&self.client, &namespace, settings.sets, settings.in_flight).await?;
        let delete = tracker
            .wait_for(settings.phase_timeout, |tally| tally.present == 0)
            .await
            .map(|_| first_delete.elapsed());
        if delete.is_none() {
            tracing::warn!(contender = contender.label(), round, tally = ?tracker.tally(), log = %process.log().display(), "deletion timed out");
        }
        settle(&mut process, proxy.log(), settings.quiet).await?;
        let end = process.sample()?;
        let requests_end = proxy.log().counts();
        let server_end = self.server_cpu();

        process.stop().await;
        proxy.stop();
        drop(tracker);
        if delete.is_none() {
            load::strip_finalizers(&self.client, &namespace).await?;
        }
        load::delete_namespace(&self.client, &namespace, Duration::from_secs(120)).await?;
        Ok(RunResult {
            contender,
            round,
            startup,
            idle,
            converge,
            converge_requests: requests_converged.since(&requests_before),
            converge_cpu: after_converge.cpu_seconds - idle.cpu_seconds,
            converge_server_cpu: server_converged
                .zip(server_before)
                .map(|(after, before)| after - before),
            after_converge,
            delete,
            delete_requests: requests_end.since(&requests_converged),
            delete_cpu: end.cpu_seconds - after_converge.cpu_seconds,
            delete_server_cpu: server_end.zip(server_converged).map(|(after, before)| after - before),
            end,
            load: (load_before, procfs::load_average()),
        })
    }

    async fn cached_runs(&self) -> Result<Vec<CachedResult>> {
        let settings = self.settings;
        let namespace = "peers-cached";
        load::create_namespace(&self.client, namespace).await?;
        let mut results = Vec::new();
        let mut filled = 0;
        for &count in &settings.cached_config_maps {
            let filling = Instant::now();
            load::create_filler_config_maps(&self.client, namespace, filled..count, settings.in_flight).await?;
            filled = count;
            tracing::info!(count, seconds = filling.elapsed().as_secs_f64(), "cluster filled");
            self.cached_rounds(count, &mut results).await?;
        }
        load::delete_namespace(&self.client, namespace, Duration::from_secs(300)).await?;
        Ok(results)
    }

    /// Every contender started on a cluster holding `count` filler ConfigMaps, once per round.
    async fn cached_rounds(&self, count: usize, results: &mut Vec<CachedResult>) -> Result<()> {
        let settings = self.settings;
        for round in 1..=settings.rounds {
            for contender in rotated(&settings.contenders, round - 1) {
                let tag = format!("{}-cached{count}-r{round}", contender.slug());
                let Started {
                    mut process,
                    proxy,
                    startup,
                } = self.start(contender, &tag, Duration::from_secs(300)).await?;
                let sample = process.sample()?;
                tracing::info!(
                    contender = contender.label(),
                    round,
                    count,
                    rss_mib = mib(sample.rss_bytes),
                    "at rest with the cache filled"
                );
                results.push(CachedResult {
                    contender,
                    round,
                    cached: count,
                    startup,
                    sample,
                    requests: proxy.log().counts(),
                });
                process.stop().await;
                proxy.stop();
            }
        }
        Ok(())
    }
}

/// MiB, for logs.
pub fn mib(bytes: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let value = bytes as f64 / (1024.0 * 1024.0);
    value
}

/// Waits for the contender to go quiet after a phase; a contender that keeps working is noted, not fatal.
async fn settle(process: &mut Running, log: &RequestLog, quiet: Duration) -> Result<()> {
    if let Err(error) = wait_idle(process, log, quiet, Duration::from_secs(60), &[]).await {
        process.check_alive()?;
        tracing::warn!(error = %format!("{error:#}"), "the contender did not settle; measuring anyway");
    }
    Ok(())
}

/// The CPU a contender may use while counted idle, as a share of one CPU over the quiet span.
const IDLE_CPU_SHARE: f64 = 0.05;

/// Waits until the contender has watches open on each of `watches`, has made no request for `quiet`, and used at
/// most 5% of a CPU over that span. Returns the time since it started.
pub async fn wait_idle(
    process: &mut Running,
    log: &RequestLog,
    quiet: Duration,
    timeout: Duration,
    watches: &[&str],
) -> Result<Duration> {
    let deadline = Instant::now() + timeout;
    let mut samples: VecDeque<(Instant, f64)> = VecDeque::new();
    loop {
        let now = Instant::now();
        let cpu = process.sample()?.cpu_seconds;
        samples.push_back((now, cpu));
        while samples.len() > 1 && samples[1].0 <= now - quiet {
            samples.pop_front();
        }
        let watching = log.watches(watches);
        let requests_quiet = log.quiet_for().is_some_and(|for_how_long| for_how_long >= quiet);
        let (oldest, oldest_cpu) = samples[0];
        let cpu_quiet = now - oldest >= quiet && cpu - oldest_cpu <= IDLE_CPU_SHARE * quiet.as_secs_f64();
        if watching && requests_quiet && cpu_quiet {
            return Ok(process.age());
        }
        if now > deadline {
            bail!(
                "not idle after {timeout:?} (watches open: {watching}, no requests for {quiet:?}: {requests_quiet}, \
                 CPU quiet: {cpu_quiet}); its log is {}",
                process.log().display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_rotate_the_starting_contender() {
        let all = Contender::ALL.to_vec();
        assert_eq!(rotated(&all, 0)[0], Contender::Wasm);
        assert_eq!(rotated(&all, 1)[0], Contender::KubeRuntime);
        assert_eq!(rotated(&all, 5)[0], Contender::KubeRuntime);
        assert_eq!(
            rotated(&all, 3),
            vec![
                Contender::Kopf,
                Contender::Wasm,
                Contender::KubeRuntime,
                Contender::ControllerRuntime
            ]
        );
    }
}
