//! What every benchmark here reads about the machine and its processes: the machine (cores, CPU, kernel,
//! commit, date), `/proc` memory and CPU readings, the load average; and the embedded API server as a process.

// Each benchmark includes this module and uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use tokio::process::{Child, Command};

/// The machine the numbers come from.
#[derive(Debug)]
pub struct Machine {
    pub date: String,
    pub cpus: usize,
    pub cpu_model: String,
    pub kernel: String,
    pub commit: String,
}

impl Machine {
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|line| line.strip_prefix("model name"))
            .and_then(|rest| rest.split_once(':'))
            .map_or_else(|| "unknown".to_owned(), |(_, model)| model.trim().to_owned());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "unknown".to_owned(), |text| text.trim().to_owned());
        let commit = std::process::Command::new("git")
            .args(["describe", "--always", "--dirty"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map_or_else(
                || "unknown".to_owned(),
                |output| String::from_utf8_lossy(&output.stdout).trim().to_owned(),
            );
        Self {
            date: k8s_openapi::jiff::Timestamp::now()
                .strftime("%Y-%m-%d %H:%M UTC")
                .to_string(),
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            cpu_model,
            kernel,
            commit,
        }
    }
}

/// The number in environment variable `name`, or `default` when it is not set.
pub fn env_number(name: &str, default: usize) -> anyhow::Result<usize> {
    std::env::var(name).map_or(Ok(default), |text| {
        text.parse().with_context(|| format!("{name}={text:?} is not a number"))
    })
}

/// Where a benchmark writes its results: environment variable `name`, or `docs/benchmarks/<file>`.
pub fn results_path(name: &str, file: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../docs/benchmarks")
            .join(file)
            .display()
            .to_string()
    })
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in KiB.
pub fn memory_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| anyhow!("no {field} in /proc/{pid}/status"))
}

/// Resident and peak resident memory of a process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    pub rss_kib: u64,
    pub peak_kib: u64,
}

impl Memory {
    pub fn of(pid: u32) -> anyhow::Result<Self> {
        Ok(Self {
            rss_kib: memory_kib(pid, "VmRSS")?,
            peak_kib: memory_kib(pid, "VmHWM")?,
        })
    }
}

/// Clock ticks per second of `/proc/<pid>/stat` times.
pub fn clock_ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|output| String::from_utf8_lossy(&output.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// User plus system CPU time a process has used (all threads), in seconds.
pub fn cpu_seconds(pid: u32, ticks_per_second: f64) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the parenthesised command name start at field 3 (state); utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |index: usize| -> anyhow::Result<f64> {
        Ok(fields
            .get(index)
            .ok_or_else(|| anyhow!("short /proc/{pid}/stat"))?
            .parse::<f64>()?)
    };
    Ok((ticks(11)? + ticks(12)?) / ticks_per_second)
}

/// The 1, 5 and 15 minute load averages.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The embedded API server in its own process, serving a kubeconfig in `dir`.
pub async fn start_api_server(dir: &Path) -> anyhow::Result<(Child, PathBuf)> {
    let kubeconfig = dir.join("kubeconfig");
    let child = Command::new(env!("CARGO_BIN_EXE_wasm-reconciler"))
        .args(["apiserver", "--port", "0", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting the embedded API server")?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !kubeconfig.exists() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the API server wrote no kubeconfig within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((child, kubeconfig))
}

/// The lines every results file starts its list with: date, commit, machine, load average before → now, run time.
pub fn write_run_lines(out: &mut String, machine: &Machine, load_before: &str, took: Duration) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "- Date: {}", machine.date);
    let _ = writeln!(out, "- Commit: {}", machine.commit);
    let _ = writeln!(
        out,
        "- Machine: {} CPUs (`nproc`), {}, Linux {}",
        machine.cpus, machine.cpu_model, machine.kernel
    );
    let _ = writeln!(out, "- Load average before → after: {load_before} → {}", load_average());
    let _ = writeln!(out, "- Whole run: {:.0} s", took.as_secs_f64());
}
