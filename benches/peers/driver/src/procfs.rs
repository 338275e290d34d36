//! CPU time and memory of a process, and facts about the machine, read from `/proc`.

use std::path::Path;

/// Clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, 100 on every Linux architecture we run on).
const TICKS_PER_SECOND: f64 = 100.0;

/// Errors reading `/proc`.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// The file could not be read (the process may have exited).
    #[error("reading {path}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file lacks a field.
    #[error("{path} has no {field}")]
    Missing {
        /// The file.
        path: String,
        /// The field.
        field: &'static str,
    },
}

type Result<T, E = ProcError> = std::result::Result<T, E>;

/// One reading of a process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// User + system CPU time so far, in seconds.
    pub cpu_seconds: f64,
    /// Resident set size now (`VmRSS`), in bytes.
    pub rss_bytes: u64,
    /// Peak resident set size so far (`VmHWM`), in bytes.
    pub peak_rss_bytes: u64,
}

/// Reads CPU time and memory of `pid`.
pub fn sample(pid: u32) -> Result<Sample> {
    let stat_path = format!("/proc/{pid}/stat");
    let stat = read(&stat_path)?;
    let cpu_seconds = parse_cpu_seconds(&stat).ok_or(ProcError::Missing {
        path: stat_path,
        field: "utime and stime",
    })?;
    let status_path = format!("/proc/{pid}/status");
    let status = read(&status_path)?;
    let kib = |field: &'static str| {
        status_field_kib(&status, field).ok_or_else(|| ProcError::Missing {
            path: status_path.clone(),
            field,
        })
    };
    Ok(Sample {
        cpu_seconds,
        rss_bytes: kib("VmRSS")? * 1024,
        peak_rss_bytes: kib("VmHWM")? * 1024,
    })
}

/// `utime + stime` of a `/proc/<pid>/stat` line, in seconds. The command name may hold spaces and parentheses, so
/// fields are counted after the last `)`: there `state` is field 3, `utime` 14 and `stime` 15.
fn parse_cpu_seconds(stat: &str) -> Option<f64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    #[allow(clippy::cast_precision_loss)]
    Some((utime + stime) as f64 / TICKS_PER_SECOND)
}

/// A `Name:   1234 kB` field of `/proc/<pid>/status`, in KiB.
fn status_field_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let value = line.strip_prefix(field)?.strip_prefix(':')?;
        value.split_whitespace().next()?.parse().ok()
    })
}

/// The 1, 5 and 15 minute load averages.
pub fn load_average() -> String {
    read("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// Processes whose command name (`/proc/<pid>/comm`) is one of `names`.
pub fn pids_named(names: &[&str]) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| read(&format!("/proc/{pid}/comm")).is_ok_and(|comm| names.contains(&comm.trim())))
        .collect()
}

/// CPUs, CPU model and kernel of this machine.
#[derive(Debug, Clone)]
pub struct Machine {
    /// Online CPUs (`nproc`).
    pub cpus: usize,
    /// `model name` of the first CPU.
    pub model: String,
    /// Kernel release.
    pub kernel: String,
}

impl Machine {
    /// Reads them.
    pub fn read() -> Self {
        let model = read("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find_map(|line| line.strip_prefix("model name"))
                    .and_then(|rest| rest.split_once(':'))
                    .map(|(_, model)| model.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown CPU".to_owned());
        Self {
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            model,
            kernel: read("/proc/sys/kernel/osrelease")
                .map(|release| release.trim().to_owned())
                .unwrap_or_else(|_| "unknown".to_owned()),
        }
    }
}

fn read(path: &str) -> Result<String> {
    std::fs::read_to_string(Path::new(path)).map_err(|source| ProcError::Read {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_counted_after_the_command_name() {
        let stat = "4242 (kopf (py) x) S 1 4242 4242 0 -1 4194560 9000 0 0 0 250 50 0 0 20 0 9 0 100 0 0";
        assert_eq!(parse_cpu_seconds(stat), Some(3.0));
    }

    #[test]
    fn status_fields_are_read_in_kib() {
        let status = "Name:\tpython\nVmHWM:\t  51200 kB\nVmRSS:\t  40960 kB\n";
        assert_eq!(status_field_kib(status, "VmHWM"), Some(51_200));
        assert_eq!(status_field_kib(status, "VmRSS"), Some(40_960));
        assert_eq!(status_field_kib(status, "VmSwap"), None);
    }

    #[test]
    fn processes_are_found_by_name() {
        let comm = read(&format!("/proc/{}/comm", std::process::id())).expect("own comm");
        assert!(pids_named(&[comm.trim()]).contains(&std::process::id()));
        assert!(pids_named(&["no-such-process-name"]).is_empty());
    }

    #[test]
    fn this_process_can_be_sampled() {
        let sample = sample(std::process::id()).expect("own /proc entry");
        assert!(sample.rss_bytes > 0 && sample.peak_rss_bytes >= sample.rss_bytes);
    }
}
