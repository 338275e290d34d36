//! `peers-bench`: runs the configmapset controller as a wasm plugin and as its kube-runtime, controller-runtime
//! and Kopf peers against one API server, one after another, and writes `docs/benchmarks/peers.md`.

mod bench;
mod contender;
mod load;
mod process;
mod procfs;
mod proxy;
mod report;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Parser;

use crate::bench::{Server, Settings};
use crate::contender::{Contender, Programs};

/// The repository root, from this crate's place in it.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// Benchmark the wasm plugin host against kube-runtime, controller-runtime and Kopf on the same controller.
#[derive(Debug, Parser)]
#[command(name = "peers-bench")]
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
    /// cargo's target directory (default: `CARGO_TARGET_DIR`, else `target` in the repository).
    #[arg(long, env = "CARGO_TARGET_DIR", value_name = "DIR")]
    target_dir: Option<PathBuf>,
    /// Where `make bench-peers` puts the Go binary and the Kopf venv.
    #[arg(long, value_name = "DIR")]
    peers_cache: Option<PathBuf>,
    /// Logs, kubeconfigs and the plugin directory (default: `<target>/peers-bench`).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// The results file.
    #[arg(long, default_value = "docs/benchmarks/peers.md", value_name = "FILE")]
    output: PathBuf,
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let repository = repository();
    let target = args.target_dir.clone().unwrap_or_else(|| repository.join("target"));
    let peers_cache = args.peers_cache.clone().unwrap_or_else(|| {
        std::env::var_os("HOME")
            .map_or_else(|| PathBuf::from("."), PathBuf::from)
            .join(".cache/wasm-reconciler/peers")
    });
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
        programs: Programs {
            host: target.join("release/wasm-reconciler"),
            plugin: target.join("wasm32-wasip2/wasm-release/configmapset.wasm"),
            kube_runtime: target.join("release/configmapset-kube-runtime"),
            controller_runtime: peers_cache.join("bin/configmapset-controller-runtime"),
            python: peers_cache.join("kopf-venv/bin/python"),
            kopf_dir: repository.join("benches/peers/kopf"),
        },
        crd: repository.join("plugins/configmapset/crd.yaml"),
        work_dir: args.work_dir.clone().unwrap_or_else(|| target.join("peers-bench")),
    };
    let versions = versions(&repository, &settings.programs);
    // On Ctrl-C or SIGTERM the run is dropped, and with it every process it started (they are killed on drop).
    let outcome = tokio::select! {
        outcome = bench::run(settings) => outcome?,
        signal = stop_signal() => {
            signal?;
            anyhow::bail!("stopped by a signal; the processes it started are stopped too")
        }
    };
    let markdown = report::render(&outcome, &versions);
    let output = if args.output.is_absolute() {
        args.output.clone()
    } else {
        std::fs::canonicalize(&repository)
            .unwrap_or(repository)
            .join(&args.output)
    };
    std::fs::write(&output, markdown).with_context(|| format!("writing {}", output.display()))?;
    println!("wrote {}", output.display());
    Ok(())
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
        commit: output(
            Path::new("git"),
            &["-C", &repository.display().to_string(), "rev-parse", "--short", "HEAD"],
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
