//! `peers-bench`: runs the configmapset controller as a wasm plugin and as its kube-runtime, controller-runtime
//! and Kopf peers against one API server, one after another, and writes `docs/benchmarks/peers.md`.

mod bench;
mod capacity;
mod capacity_report;
mod contender;
mod load;
mod process;
mod procfs;
mod proxy;
mod report;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};

use crate::bench::{Server, Settings};
use crate::capacity::{CapacitySettings, Setup, Slo};
use crate::contender::{Contender, Programs};

/// The repository root, from this crate's place in it.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// Benchmark the wasm plugin host against kube-runtime, controller-runtime and Kopf on the same controller.
#[derive(Debug, Parser)]
#[command(name = "peers-bench", args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    peers: Args,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Capacity at the service-level objectives (p99 queue ≤ 1 s, p99 reconcile ≤ 5 s): an open-loop churn of
    /// creates, spec edits and deletes raised in steps, for each contender and for 1–3 sharded replicas of the host
    /// (docs/benchmarks/capacity.md).
    Capacity(CapacityArgs),
}

/// Where things are, for every run.
#[derive(Debug, clap::Args)]
struct Places {
    /// cargo's target directory (default: `CARGO_TARGET_DIR`, else `target` in the repository).
    #[arg(long, env = "CARGO_TARGET_DIR", value_name = "DIR")]
    target_dir: Option<PathBuf>,
    /// Where `make bench-peers` puts the Go binary and the Kopf venv.
    #[arg(long, value_name = "DIR")]
    peers_cache: Option<PathBuf>,
    /// Logs, kubeconfigs and the plugin directory (default: `<target>/peers-bench`).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
}

/// The capacity run's knobs.
#[derive(Debug, clap::Args)]
struct CapacityArgs {
    /// Run against the API server of this kubeconfig (already running) instead of the embedded one.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Setups to run (comma-separated): wasm, native, kube-runtime, controller-runtime, kopf, sharded-N.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "wasm,native,kube-runtime,controller-runtime,kopf,sharded-1,sharded-2,sharded-3"
    )]
    setups: Vec<Setup>,
    /// Operations per second of the steps (comma-separated, ascending).
    #[arg(long, value_delimiter = ',', default_values_t = [10.0, 15.0, 20.0, 24.0, 28.0, 32.0, 36.0, 40.0, 48.0, 60.0, 80.0])]
    rates: Vec<f64>,
    /// Seconds each step issues operations.
    #[arg(long, default_value_t = 20.0)]
    step_seconds: f64,
    /// Seconds after a step its operations may take to finish.
    #[arg(long, default_value_t = 10.0)]
    grace_seconds: f64,
    /// Sets created and Ready before the first step.
    #[arg(long, default_value_t = 300)]
    population: usize,
    /// Replicas per set.
    #[arg(long, default_value_t = 3)]
    replicas: u32,
    /// Seconds without requests (and with at most 5% of a CPU) that count as idle after a start.
    #[arg(long, default_value_t = 1.0)]
    quiet_seconds: f64,
    #[command(flatten)]
    places: Places,
    /// The results file.
    #[arg(long, default_value = "docs/benchmarks/capacity.md", value_name = "FILE")]
    output: PathBuf,
}

/// The peer benchmark's knobs.
#[derive(Debug, clap::Args)]
struct Args {
    /// The API server: `embedded` starts `wasm-reconciler apiserver`; otherwise pass --kubeconfig.
    #[arg(long, default_value = "embedded", value_parser = ["embedded"], conflicts_with = "kubeconfig")]
    server: String,
    /// Run against the API server of this kubeconfig (already running) instead of the embedded one.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Contenders to run (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Contender::ALL)]
    contenders: Vec<Contender>,
    /// ConfigMapSets per converge.
    #[arg(long, default_value_t = 1000)]
    sets: usize,
    /// Replicas per set.
    #[arg(long, default_value_t = 3)]
    replicas: u32,
    /// Creations and deletions in flight.
    #[arg(long, default_value_t = 32)]
    in_flight: usize,
    /// Rounds (every contender runs once per round).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// ConfigMaps in the cluster for the memory-at-rest runs, one measurement per count (comma-separated, ascending;
    /// 0 skips them).
    #[arg(long, value_delimiter = ',', default_values_t = [10_000, 100_000])]
    cached_config_maps: Vec<usize>,
    /// Seconds without requests (and with at most 5% of a CPU) that count as idle.
    #[arg(long, default_value_t = 1.0)]
    quiet_seconds: f64,
    /// Longest wait for a converge or a deletion, in seconds.
    #[arg(long, default_value_t = 900)]
    phase_timeout_seconds: u64,
    #[command(flatten)]
    places: Places,
    /// The results file.
    #[arg(long, default_value = "docs/benchmarks/peers.md", value_name = "FILE")]
    output: PathBuf,
}

impl Places {
    /// The programs and the work directory.
    fn resolve(&self, repository: &Path) -> (Programs, PathBuf) {
        let target = self.target_dir.clone().unwrap_or_else(|| repository.join("target"));
        let peers_cache = self.peers_cache.clone().unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map_or_else(|| PathBuf::from("."), PathBuf::from)
                .join(".cache/wasm-reconciler/peers")
        });
        let programs = Programs {
            host: target.join("release/wasm-reconciler"),
            native_host: target.join("release/configmapset-native-host"),
            plugin: target.join("wasm32-wasip2/wasm-release/configmapset.wasm"),
            kube_runtime: target.join("release/configmapset-kube-runtime"),
            controller_runtime: peers_cache.join("bin/configmapset-controller-runtime"),
            python: peers_cache.join("kopf-venv/bin/python"),
            kopf_dir: repository.join("benches/peers/kopf"),
        };
        let work_dir = self.work_dir.clone().unwrap_or_else(|| target.join("peers-bench"));
        (programs, work_dir)
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let repository = repository();
    let (markdown, output) = match cli.command {
        Some(Command::Capacity(args)) => (capacity(&repository, &args).await?, args.output),
        None => (peers(&repository, &cli.peers).await?, cli.peers.output),
    };
    let output = if output.is_absolute() {
        output
    } else {
        std::fs::canonicalize(&repository).unwrap_or(repository).join(&output)
    };
    std::fs::write(&output, markdown).with_context(|| format!("writing {}", output.display()))?;
    println!("wrote {}", output.display());
    Ok(())
}

/// Runs `future` until it ends or a signal comes; on a signal it is dropped, and with it every process it started
/// (they are killed on drop).
async fn until_stopped<T>(future: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::select! {
        outcome = future => outcome,
        signal = stop_signal() => {
            signal?;
            anyhow::bail!("stopped by a signal; the processes it started are stopped too")
        }
    }
}

/// The peer benchmark; returns the report.
async fn peers(repository: &Path, args: &Args) -> Result<String> {
    let (programs, work_dir) = args.places.resolve(repository);
    let settings = Settings {
        server: args.kubeconfig.clone().map_or(Server::Embedded, Server::Kubeconfig),
        contenders: args.contenders.clone(),
        sets: args.sets,
        replicas: args.replicas,
        in_flight: args.in_flight,
        rounds: args.rounds.max(1),
        cached_config_maps: {
            let mut counts: Vec<usize> = args.cached_config_maps.iter().copied().filter(|&n| n > 0).collect();
            counts.sort_unstable();
            counts.dedup();
            counts
        },
        quiet: Duration::from_secs_f64(args.quiet_seconds),
        phase_timeout: Duration::from_secs(args.phase_timeout_seconds),
        programs,
        crd: repository.join("plugins/configmapset/crd.yaml"),
        work_dir,
    };
    let versions = versions(repository, &settings.programs);
    let outcome = until_stopped(bench::run(settings)).await?;
    Ok(report::render(&outcome, &versions))
}

/// The capacity benchmark; returns the report.
async fn capacity(repository: &Path, args: &CapacityArgs) -> Result<String> {
    let (programs, work_dir) = args.places.resolve(repository);
    let mut rates: Vec<f64> = args.rates.iter().copied().filter(|r| *r > 0.0).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    anyhow::ensure!(!rates.is_empty(), "--rates needs at least one rate above 0");
    let settings = CapacitySettings {
        server: args.kubeconfig.clone().map_or(Server::Embedded, Server::Kubeconfig),
        setups: args.setups.clone(),
        rates,
        step: Duration::from_secs_f64(args.step_seconds.max(1.0)),
        grace: Duration::from_secs_f64(args.grace_seconds.max(0.0)),
        population: args.population,
        replicas: args.replicas,
        slo: Slo {
            queue_p99: Duration::from_secs(1),
            reconcile_p99: Duration::from_secs(5),
        },
        quiet: Duration::from_secs_f64(args.quiet_seconds),
        programs,
        crd: repository.join("plugins/configmapset/crd.yaml"),
        work_dir,
    };
    let versions = versions(repository, &settings.programs);
    let outcome = until_stopped(capacity::run(settings)).await?;
    Ok(capacity_report::render(&outcome, &versions))
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stop_signal() -> Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result?,
        _ = terminate.recv() => {}
    }
    Ok(())
}

/// Versions of what is measured, from the repository's lock files and the built programs.
fn versions(repository: &Path, programs: &Programs) -> report::Versions {
    let read = |path: &str| std::fs::read_to_string(repository.join(path)).unwrap_or_default();
    let output = |program: &Path, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .output()
            .ok()
            .map(|out| {
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )
                .trim()
                .to_owned()
            })
            .unwrap_or_default()
    };
    let lock = read("Cargo.lock");
    let kube = lock
        .split("[[package]]")
        .find(|package| package.contains("name = \"kube\"\n"))
        .and_then(|package| package.lines().find_map(|line| line.strip_prefix("version = ")))
        .map_or_else(|| "?".to_owned(), |v| v.trim_matches('"').to_owned());
    let go_mod = read("benches/peers/controller-runtime/go.mod");
    let controller_runtime = go_mod
        .lines()
        .find_map(|line| line.trim().strip_prefix("sigs.k8s.io/controller-runtime "))
        .map_or_else(
            || "?".to_owned(),
            |v| v.split_whitespace().next().unwrap_or("?").to_owned(),
        );
    let requirements = read("benches/peers/kopf/requirements.txt");
    let pinned = |name: &str| {
        requirements
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}==")))
            .unwrap_or("?")
            .to_owned()
    };
    let go = output(
        Path::new("go"),
        &["version", &programs.controller_runtime.display().to_string()],
    );
    report::Versions {
        // `-dirty` when the working tree has changes: the numbers are then not quite of that commit.
        commit: output(
            Path::new("git"),
            &[
                "-C",
                &repository.display().to_string(),
                "describe",
                "--always",
                "--dirty",
                "--abbrev=7",
                "--exclude=*",
            ],
        ),
        kube,
        controller_runtime,
        go: go
            .rsplit(' ')
            .next()
            .filter(|v| v.starts_with("go"))
            .unwrap_or("Go")
            .to_owned(),
        kopf: format!("Kopf {} with kubernetes {}", pinned("kopf"), pinned("kubernetes")),
        python: output(&programs.python, &["--version"])
            .trim_start_matches("Python ")
            .to_owned(),
    }
}
