//! Plays one step against one server and records what it answered: status code and body of a request, exit code
//! and output of kubectl, the events of a watch.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use axum::http;
use futures::{AsyncBufReadExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

use super::scenario::{Action, Output, Request, Step, Variables, Wait};
use crate::harness::{Cluster, kubectl_binary};

/// One of the two servers, with a client that never retries (a 429 or 504 is an answer to record).
pub struct Server {
    /// `real` or `embedded`.
    pub label: &'static str,
    /// The cluster (kept alive for the run).
    pub cluster: Cluster,
    client: kube::Client,
    discovery_cache: PathBuf,
}

impl Server {
    /// Wraps a started cluster.
    pub async fn new(label: &'static str, cluster: Cluster) -> anyhow::Result<Self> {
        let kubeconfig = kube::config::Kubeconfig::read_from(&cluster.kubeconfig)?;
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
        config.default_retry = false;
        let client = kube::Client::try_from(config)?;
        let discovery_cache = cluster.dir.path().join("kubectl-cache");
        Ok(Self {
            label,
            cluster,
            client,
            discovery_cache,
        })
    }

    /// Creates a namespace and waits for the `default` ServiceAccount and `kube-root-ca.crt` ConfigMap that both
    /// servers' controllers add (pods cannot be created before the ServiceAccount exists).
    pub async fn create_namespace(&self, name: &str) -> anyhow::Result<()> {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        let created = self
            .send(
                "POST",
                "/api/v1/namespaces",
                Some(body.to_string().into_bytes()),
                None,
                None,
            )
            .await?;
        anyhow::ensure!(
            created["code"] == 201,
            "creating namespace {name} on the {} server: {created}",
            self.label
        );
        // Both servers' controllers give a new namespace its default ServiceAccount and kube-root-ca.crt soon after
        // it is created; scenarios start once they are there.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        for (what, path) in [
            (
                "default ServiceAccount",
                format!("/api/v1/namespaces/{name}/serviceaccounts/default"),
            ),
            (
                "kube-root-ca.crt ConfigMap",
                format!("/api/v1/namespaces/{name}/configmaps/kube-root-ca.crt"),
            ),
        ] {
            while self.send("GET", &path, None, None, None).await?["code"] != 200 {
                anyhow::ensure!(
                    tokio::time::Instant::now() < deadline,
                    "namespace {name} got no {what} within 60s on the {} server",
                    self.label
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    /// Plays a step; the answer is `{code, contentType, warnings, body}` for requests and waits,
    /// `{exit, stdout, stderr}` for kubectl, `{code, events}` for watches.
    pub async fn play(&self, step: &Step, variables: &Variables) -> anyhow::Result<Value> {
        match step.action()? {
            Action::Request(request) => self.request(request, variables).await,
            Action::Kubectl(args) => {
                self.kubectl(args, step.stdin.as_deref(), step.output(), variables)
                    .await
            }
            Action::Watch(request) => self.watch(request, variables).await,
            Action::Wait(wait) => self.wait(wait, variables).await,
        }
    }

    async fn request(&self, request: &Request, variables: &Variables) -> anyhow::Result<Value> {
        let path = variables.substitute(&request.path)?;
        let body = match (&request.body, &request.raw) {
            (Some(body), _) => Some(variables.substitute_value(body)?.to_string().into_bytes()),
            (None, Some(raw)) => Some(variables.substitute(raw)?.into_bytes()),
            (None, None) => None,
        };
        let content_type = request
            .content_type
            .as_deref()
            .or(body.as_ref().map(|_| "application/json"));
        self.send(&request.method, &path, body, content_type, request.accept.as_deref())
            .await
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        content_type: Option<&str>,
        accept: Option<&str>,
    ) -> anyhow::Result<Value> {
        let mut builder = http::Request::builder().method(method).uri(path);
        if let Some(content_type) = content_type {
            builder = builder.header(http::header::CONTENT_TYPE, content_type);
        }
        builder = builder.header(http::header::ACCEPT, accept.unwrap_or("application/json"));
        let request = builder.body(kube::client::Body::from(body.unwrap_or_default()))?;
        let response = self
            .client
            .send(request)
            .await
            .with_context(|| format!("{method} {path} on the {} server", self.label))?;
        let code = response.status().as_u16();
        let header = |name: http::header::HeaderName| {
            response
                .headers()
                .get_all(name)
                .iter()
                .filter_map(|value| value.to_str().ok().map(str::to_owned))
                .collect::<Vec<_>>()
        };
        let content_type = header(http::header::CONTENT_TYPE).join(",");
        let warnings: Vec<String> = header(http::header::WARNING)
            .iter()
            .map(|warning| warning_text(warning))
            .collect();
        let bytes = response.into_body().collect_bytes().await?;
        let body = serde_json::from_slice::<Value>(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        let mut recorded = json!({"code": code, "contentType": content_type, "body": body});
        if !warnings.is_empty() {
            recorded["warnings"] = json!(warnings);
        }
        Ok(recorded)
    }

    async fn kubectl(
        &self,
        args: &[String],
        stdin: Option<&str>,
        output: Output,
        variables: &Variables,
    ) -> anyhow::Result<Value> {
        let args: Vec<String> = args
            .iter()
            .map(|arg| variables.substitute(arg))
            .collect::<anyhow::Result<_>>()?;
        let stdin = stdin.map(|text| variables.substitute(text)).transpose()?;
        let mut command = tokio::process::Command::new(kubectl_binary());
        command
            .args(&args)
            .env("KUBECONFIG", &self.cluster.kubeconfig)
            .env("KUBECACHEDIR", &self.discovery_cache)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .with_context(|| format!("running kubectl ({})", kubectl_binary().display()))?;
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().context("kubectl stdin")?;
            pipe.write_all(text.as_bytes()).await?;
            drop(pipe);
        }
        let finished = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
            .await
            .with_context(|| format!("kubectl {} did not finish within 120s", args.join(" ")))??;
        let stdout = String::from_utf8_lossy(&finished.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&finished.stderr);
        Ok(json!({
            "exit": finished.status.code(),
            "stdout": read_output(&stdout, output),
            "stderr": stderr.lines().collect::<Vec<_>>(),
        }))
    }

    async fn watch(&self, request: &Request, variables: &Variables) -> anyhow::Result<Value> {
        let path = variables.substitute(&request.path)?;
        anyhow::ensure!(
            path.contains("timeoutSeconds="),
            "watch {path} needs timeoutSeconds so that the server ends it"
        );
        let mut builder = http::Request::builder().method("GET").uri(&path);
        if let Some(accept) = &request.accept {
            builder = builder.header(http::header::ACCEPT, accept);
        }
        let stream = match self.client.request_stream(builder.body(Vec::new())?).await {
            Ok(stream) => stream,
            Err(kube::Error::Api(status)) => {
                return Ok(json!({"code": status.code, "body": serde_json::to_value(&status)?}));
            }
            Err(error) => return Err(error).with_context(|| format!("watch {path} on the {} server", self.label)),
        };
        let mut lines = stream.lines();
        let mut events = Vec::new();
        let read = async {
            while let Some(line) = lines.next().await {
                let line = line?;
                if !line.trim().is_empty() {
                    events.push(serde_json::from_str::<Value>(&line).unwrap_or(Value::String(line)));
                }
            }
            anyhow::Ok(())
        };
        tokio::time::timeout(Duration::from_secs(90), read)
            .await
            .with_context(|| format!("watch {path} on the {} server did not end within 90s", self.label))??;
        Ok(json!({"code": 200, "events": events}))
    }

    async fn wait(&self, wait: &Wait, variables: &Variables) -> anyhow::Result<Value> {
        let timeout = Duration::from_secs(wait.timeout.unwrap_or(60));
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let answer = self.request(&wait.request, variables).await?;
            if satisfied(wait, &answer) {
                return Ok(answer);
            }
            // A wait that never holds is a failed step, not an answer to compare: both servers timing out alike
            // would compare as identical while the step proved nothing.
            anyhow::ensure!(
                tokio::time::Instant::now() <= deadline,
                "the wait did not hold within {timeout:?} on the {} server; the last answer: {answer}",
                self.label
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Whether a polled answer meets the wait's condition.
fn satisfied(wait: &Wait, answer: &Value) -> bool {
    if let Some(code) = wait.code
        && answer["code"] != code
    {
        return false;
    }
    if let Some(pointer) = &wait.pointer {
        let found = answer.pointer(pointer);
        match wait.absent {
            Some(true) if found.is_some() => return false,
            Some(false) if found.is_none() => return false,
            _ => {}
        }
        if let Some(expected) = &wait.equals
            && found != Some(expected)
        {
            return false;
        }
    }
    true
}

/// The text of a `Warning` header (`299 - "text"`).
fn warning_text(header: &str) -> String {
    let quoted = header.split_once(" - ").map_or(header, |(_, rest)| rest).trim();
    quoted
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .map_or_else(
            || quoted.to_owned(),
            |inner| inner.replace("\\\"", "\"").replace("\\\\", "\\"),
        )
}

/// kubectl's standard output as structure: documents parsed, tables split into cells, text into lines.
fn read_output(stdout: &str, output: Output) -> Value {
    let lines = || Value::from(stdout.lines().collect::<Vec<_>>());
    match output {
        Output::Json => serde_json::from_str(stdout).unwrap_or_else(|_| lines()),
        Output::Yaml => serde_saphyr::from_str(stdout).unwrap_or_else(|_| lines()),
        Output::Text => lines(),
        Output::Table => Value::from(table_lines(stdout)),
    }
}

/// A kubectl table as cells: each header line (`NAME   …`) gives the columns' offsets for the lines below it, so
/// that empty cells stay in their column; lines before any header are split at runs of three spaces.
fn table_lines(stdout: &str) -> Vec<Value> {
    let mut offsets: Option<Vec<usize>> = None;
    let mut lines = Vec::new();
    for line in stdout.lines() {
        let line = line.trim_end();
        if is_header(line) {
            offsets = Some(column_offsets(line));
        }
        let cells = match &offsets {
            Some(offsets) if line.is_ascii() => {
                let mut cells: Vec<String> = offsets
                    .iter()
                    .enumerate()
                    .map(|(index, &start)| {
                        let end = offsets.get(index + 1).copied().unwrap_or(line.len()).min(line.len());
                        line.get(start.min(end)..end).unwrap_or_default().trim().to_owned()
                    })
                    .collect();
                if let Some(last) = cells.last_mut()
                    && let Some(&start) = offsets.last()
                {
                    *last = line.get(start..).unwrap_or_default().trim().to_owned();
                }
                cells
            }
            _ => split_cells(line),
        };
        lines.push(Value::from(cells));
    }
    lines
}

/// A table header: upper-case column names, the first `NAME` or `NAMESPACE`.
fn is_header(line: &str) -> bool {
    (line.starts_with("NAME ") || line.starts_with("NAMESPACE ") || line == "NAME") && line == line.to_uppercase()
}

/// Where each column of a header line starts: kubectl pads columns with at least three spaces.
fn column_offsets(header: &str) -> Vec<usize> {
    let mut offsets = vec![0];
    let bytes = header.as_bytes();
    let mut spaces = 0;
    for (index, byte) in bytes.iter().enumerate() {
        if *byte == b' ' {
            spaces += 1;
        } else {
            if spaces >= 3 {
                offsets.push(index);
            }
            spaces = 0;
        }
    }
    offsets
}

/// The cells of a line split at runs of three spaces.
fn split_cells(line: &str) -> Vec<String> {
    let mut cells = Vec::new();
    let mut rest = line;
    while let Some(gap) = rest.find("   ") {
        cells.push(rest[..gap].to_owned());
        rest = rest[gap..].trim_start();
    }
    if !rest.is_empty() || cells.is_empty() {
        cells.push(rest.to_owned());
    }
    cells
}
