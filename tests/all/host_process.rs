//! The host as a separate process, started with the `wasm-reconciler run` command line a user types, so a test can
//! do to it what happens to real processes: `kill -9`, freeze (`SIGSTOP`) and thaw (`SIGCONT`), graceful stop.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;

use crate::harness::wait_for;
use crate::telemetry_probe::{free_local_addr, http_get};

/// The `wasm-reconciler` binary cargo built beside this test binary (`target/<profile>/wasm-reconciler`).
pub fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binaries live in target/<profile>/deps");
    let binary = profile_dir.join("wasm-reconciler");
    assert!(
        binary.exists(),
        "{} is missing: build it with `cargo build -p wasm-reconciler` (make test does)",
        binary.display()
    );
    binary
}

/// One running `wasm-reconciler run`; killed when dropped.
pub struct HostProcess {
    pub identity: String,
    pub telemetry: SocketAddr,
    pub log: PathBuf,
    child: std::process::Child,
}

impl HostProcess {
    /// Starts `wasm-reconciler run --kubeconfig KUBECONFIG --identity IDENTITY --metrics-addr … ARGS…`, logging
    /// JSON lines to `dir/<identity>.log` (appended to, so a restarted host's log follows its predecessor's).
    pub fn start(dir: &Path, kubeconfig: &Path, identity: &str, args: &[&str]) -> anyhow::Result<Self> {
        Self::start_with_env(dir, kubeconfig, identity, args, &[])
    }

    /// [`HostProcess::start`] with `env` added to its environment.
    pub fn start_with_env(
        dir: &Path,
        kubeconfig: &Path,
        identity: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let telemetry = free_local_addr();
        let log = dir.join(format!("{identity}.log"));
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&log)?;
        let child = std::process::Command::new(binary())
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args([
                "--identity",
                identity,
                "--metrics-addr",
                &telemetry.to_string(),
                "--log-format",
                "json",
            ])
            .args(args)
            .env("RUST_LOG", "info,wasm_reconciler=debug")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .context("starting wasm-reconciler run")?;
        Ok(Self {
            identity: identity.to_owned(),
            telemetry,
            log,
            child,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`STOP`, `CONT`, `KILL`, `TERM`).
    pub fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{signal} {} failed", self.pid());
    }

    /// Kills it with SIGKILL and reaps it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops it as Kubernetes does (SIGTERM) and waits up to `timeout` for it to exit; whether it exited successfully.
    pub async fn terminate(mut self, timeout: Duration) -> bool {
        self.signal("TERM");
        let child = &mut self.child;
        let status = wait_for(timeout, &format!("{} to exit after SIGTERM", self.identity), || {
            let exited = child.try_wait().ok().flatten();
            async move { exited }
        })
        .await;
        status.success()
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until its log has a line whose `message` is one of `messages`.
    pub async fn wait_logged(&self, messages: &[&str], timeout: Duration) {
        wait_for(
            timeout,
            &format!("{} to log one of {messages:?}", self.identity),
            || async {
                self.log_text()
                    .lines()
                    .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                    .any(|line| messages.iter().any(|m| line["message"] == *m))
                    .then_some(())
            },
        )
        .await;
    }

    /// Waits until `/readyz` says it reconciles (`200 ok`: the leader or a shard member with synced caches).
    pub async fn wait_ready(&self, timeout: Duration) {
        wait_for(
            timeout,
            &format!("{} to be Ready and reconciling", self.identity),
            || async {
                matches!(http_get(self.telemetry, "/readyz").await, Some((200, body)) if body.trim() == "ok")
                    .then_some(())
            },
        )
        .await;
    }

    /// The resident memory of the process, in bytes.
    pub fn resident_bytes(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let kib: u64 = status
            .lines()
            .find(|line| line.starts_with("VmRSS:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        Some(kib * 1024)
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        // A frozen process would not die of SIGTERM; SIGKILL works on stopped processes too.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
