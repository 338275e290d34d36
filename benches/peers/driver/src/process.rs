//! Processes the driver starts: the embedded API server and the contenders, each logging to its own file.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::procfs::{self, Sample};

/// Errors of starting and watching processes.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// A log file could not be created.
    #[error("creating the log file {path}")]
    Log {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The program could not be started.
    #[error("starting {program}")]
    Spawn {
        /// The program.
        program: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The process exited while it should run.
    #[error("{name} exited ({status}); its log is {log}")]
    Exited {
        /// What it was.
        name: String,
        /// How it ended.
        status: String,
        /// Its log file.
        log: PathBuf,
    },
    /// The embedded API server did not say where it listens.
    #[error("the embedded API server printed no address within {0:?}; its log is {1}")]
    NoAddress(Duration, PathBuf),
    /// `/proc` could not be read.
    #[error(transparent)]
    Proc(#[from] procfs::ProcError),
}

type Result<T, E = ProcessError> = std::result::Result<T, E>;

/// A process started by the driver; killed when dropped.
#[derive(Debug)]
pub struct Running {
    name: String,
    child: Child,
    pid: u32,
    log: PathBuf,
    started: Instant,
}

impl Running {
    /// Starts `command` with stdout and stderr appended to `log`.
    pub fn spawn(name: &str, mut command: Command, log: &Path) -> Result<Self> {
        let file = File::create(log).map_err(|source| ProcessError::Log {
            path: log.to_owned(),
            source,
        })?;
        let stderr = file.try_clone().map_err(|source| ProcessError::Log {
            path: log.to_owned(),
            source,
        })?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true);
        Self::spawn_configured(name, command, log)
    }

    fn spawn_configured(name: &str, mut command: Command, log: &Path) -> Result<Self> {
        let program = command.as_std().get_program().to_string_lossy().into_owned();
        let started = Instant::now();
        let child = command
            .spawn()
            .map_err(|source| ProcessError::Spawn { program, source })?;
        let pid = child.id().unwrap_or_default();
        tracing::debug!(name, pid, log = %log.display(), "started");
        Ok(Self {
            name: name.to_owned(),
            child,
            pid,
            log: log.to_owned(),
            started,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Time since start.
    pub fn age(&self) -> Duration {
        self.started.elapsed()
    }

    /// Its log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Fails if the process has exited.
    pub fn check_alive(&mut self) -> Result<()> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(self.exited(status.to_string())),
            Err(error) => Err(self.exited(error.to_string())),
        }
    }

    /// CPU time and memory now.
    pub fn sample(&mut self) -> Result<Sample> {
        self.check_alive()?;
        Ok(procfs::sample(self.pid)?)
    }

    /// Kills the process and waits for it.
    pub async fn stop(mut self) {
        if let Err(error) = self.child.start_kill() {
            tracing::debug!(name = %self.name, %error, "already gone");
        }
        let _ = self.child.wait().await;
    }

    fn exited(&self, status: String) -> ProcessError {
        ProcessError::Exited {
            name: self.name.clone(),
            status,
            log: self.log.clone(),
        }
    }
}

/// `wasm-reconciler apiserver` on a free port of 127.0.0.1, in memory.
#[derive(Debug)]
pub struct EmbeddedApiServer {
    /// The process.
    pub process: Running,
    /// A kubeconfig for it.
    pub kubeconfig: PathBuf,
}

impl EmbeddedApiServer {
    /// Starts it and waits until it prints its address (and so has written the kubeconfig).
    pub async fn start(host_binary: &Path, work_dir: &Path) -> Result<Self> {
        let kubeconfig = work_dir.join("apiserver.kubeconfig");
        let log = work_dir.join("logs").join("apiserver.log");
        let mut command = Command::new(host_binary);
        command
            .args(["apiserver", "--port", "0", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .env_remove("WASM_RECONCILER_APISERVER_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(File::create(&log).map_err(|source| ProcessError::Log {
                path: log.clone(),
                source,
            })?))
            .kill_on_drop(true);
        let mut process = Running::spawn_configured("embedded API server", command, &log)?;
        let stdout = process
            .child
            .stdout
            .take()
            .ok_or_else(|| process.exited("no stdout".to_owned()))?;
        let mut lines = BufReader::new(stdout).lines();
        let wait = Duration::from_secs(60);
        let announced = tokio::time::timeout(wait, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("Wrote kubeconfig") {
                    return true;
                }
            }
            false
        })
        .await;
        if !matches!(announced, Ok(true)) {
            process.check_alive()?;
            return Err(ProcessError::NoAddress(wait, log));
        }
        // Keep reading so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self { process, kubeconfig })
    }
}
