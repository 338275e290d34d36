//! Shared helpers: servers, clients, and a kubectl runner.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use kube::Client;
use wasm_reconciler_apiserver::{ApiServer, ServingHandle, write_kubeconfig};

/// An in-memory server and a kube client talking to it in-process.
pub async fn in_process() -> (ApiServer, Client) {
    let server = ApiServer::builder().build().await.expect("server builds");
    let client = Client::new(server.router(), "default");
    settled(&client).await;
    (server, client)
}

/// Waits until the server's namespace controller has given `default` its `kube-root-ca.crt` ConfigMap, as a
/// cluster's does soon after start, so that what a test lists does not depend on that race.
pub async fn settled(client: &Client) {
    let config_maps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client.clone(), "default");
    eventually("default/kube-root-ca.crt", Duration::from_secs(10), || {
        let config_maps = config_maps.clone();
        async move { config_maps.get_opt("kube-root-ca.crt").await.ok().flatten() }
    })
    .await;
}

/// A kube client for a server.
pub fn client(server: &ApiServer) -> Client {
    Client::new(server.router(), "default")
}

/// Poll `check` until it returns Some, or panic after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The HTTP status code of a kube API error.
pub fn status_code<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.reason.clone(), status.message.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// kubectl driven against a served port with its own kubeconfig and discovery cache.
pub struct Kubectl {
    pub dir: tempfile::TempDir,
    pub serving: Option<ServingHandle>,
    pub server: ApiServer,
}

/// Result of one kubectl run.
#[derive(Debug)]
pub struct Run {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// The kubectl these tests run: the one `tests/kube/build.sh` builds beside the real control plane (the version the
/// project tests against), else the first on `PATH`. A kubectl that cannot run fails the test with a message naming
/// the tool and how to get it.
pub fn kubectl_binary() -> &'static Path {
    static KUBECTL: OnceLock<PathBuf> = OnceLock::new();
    KUBECTL.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kube/build.sh");
        let built = Command::new(&script)
            .arg("--print-bin-dir")
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()).join("kubectl"))
            .filter(|kubectl| kubectl.is_file());
        let kubectl = built.unwrap_or_else(|| PathBuf::from("kubectl"));
        match Command::new(&kubectl).args(["version", "--client"]).output() {
            Ok(output) if output.status.success() => kubectl,
            _ => panic!(
                "kubectl is needed for these tests and could not run ({}): build it with `make kube-harness` \
                 (tests/kube/build.sh) or put kubectl on PATH",
                kubectl.display()
            ),
        }
    })
}

impl Kubectl {
    /// Serve `server` on a free port and write a kubeconfig for it.
    pub async fn start_with(server: ApiServer, dir: tempfile::TempDir) -> Kubectl {
        settled(&client(&server)).await;
        let serving = server.serve("127.0.0.1:0".parse().unwrap()).await.expect("serves");
        write_kubeconfig(&dir.path().join("kubeconfig"), &serving.url(), None).expect("kubeconfig");
        Kubectl {
            dir,
            serving: Some(serving),
            server,
        }
    }

    /// An in-memory server served over HTTP.
    pub async fn start() -> Kubectl {
        let server = ApiServer::builder().build().await.expect("server builds");
        Kubectl::start_with(server, tempfile::tempdir().unwrap()).await
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Write a file into the test directory and return its path.
    pub fn file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(kubectl_binary());
        command
            .args(args)
            .env("KUBECONFIG", self.path("kubeconfig"))
            .env("KUBECACHEDIR", self.path("cache"))
            .env("HOME", self.dir.path())
            .current_dir(self.dir.path());
        command
    }

    /// Run kubectl to completion (off the async runtime).
    pub async fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, None).await
    }

    /// Run kubectl with standard input.
    pub async fn run_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut command = self.command(args);
        command.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let stdin = stdin.map(str::to_string);
        let output: Output = tokio::task::spawn_blocking(move || {
            let mut child = command.spawn().expect("kubectl runs");
            if let Some(input) = stdin {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
            }
            child.wait_with_output().expect("kubectl finishes")
        })
        .await
        .unwrap();
        Run {
            success: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Run and require success; returns stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args).await;
        assert!(run.success, "kubectl {args:?} failed: {}{}", run.stdout, run.stderr);
        run.stdout
    }

    /// Run and require failure; returns stderr.
    pub async fn fails(&self, args: &[&str]) -> String {
        let run = self.run(args).await;
        assert!(!run.success, "kubectl {args:?} unexpectedly succeeded: {}", run.stdout);
        run.stderr
    }

    /// Spawn a long-running kubectl (e.g. `get -w`).
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        let mut command = self.command(args);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command.spawn().expect("kubectl runs")
    }
}

/// Lines of a child's stdout, read on a thread.
pub struct Lines {
    receiver: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Lines {
    /// Start reading a child's stdout.
    pub fn of(child: &mut std::process::Child) -> Lines {
        use std::io::BufRead;
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Lines { receiver }
    }

    /// Lines up to and including the first that satisfies `predicate`; panics on timeout.
    pub async fn until(&mut self, timeout: Duration, predicate: impl Fn(&str) -> bool) -> Vec<String> {
        let mut lines = Vec::new();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.receiver.recv()).await {
                Ok(Some(line)) => {
                    let done = predicate(&line);
                    lines.push(line);
                    if done {
                        return lines;
                    }
                }
                Ok(None) | Err(_) => panic!("expected line not printed; got {lines:?}"),
            }
        }
    }
}
