//! Probing a host's telemetry endpoint (`/metrics`, `/healthz`, `/readyz`) as a kubelet or Prometheus would.

use std::net::{Ipv4Addr, SocketAddr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A loopback address with a port that was free a moment ago, for a host's telemetry endpoint.
pub fn free_local_addr() -> SocketAddr {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binding a loopback port");
    listener.local_addr().expect("a bound address")
}

/// `GET path` over HTTP/1.0: the status code and the body, or `None` when nothing answers.
pub async fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    http_request(addr, "GET", path, &[], "").await
}

/// One HTTP/1.0 request with `headers` and `body` (sent with its `Content-Length` when not empty): the status code
/// and the body, or `None` when nothing answers.
pub async fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Option<(u16, String)> {
    let mut head = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream.write_all(head.as_bytes()).await.ok()?;
    stream.write_all(body.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.ok()?;
    let response = String::from_utf8_lossy(&response);
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// The value of the sample `series` (a metric name with its labels exactly as exposed) in a `/metrics` body.
pub fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.split_whitespace().next()?.parse().ok()
    })
}

/// The sum of every sample of `metric` whose labels include all of `labels` (`key="value"` pairs).
pub fn sum_samples(metrics: &str, metric: &str, labels: &[&str]) -> f64 {
    metrics
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(metric)?.strip_prefix('{')?;
            let (label_text, value) = rest.split_once("} ")?;
            let present: Vec<&str> = label_text.split(',').collect();
            labels
                .iter()
                .all(|wanted| present.contains(wanted))
                .then(|| value.split_whitespace().next()?.parse::<f64>().ok())?
        })
        .sum()
}

/// Prefix of the metrics a host exports only in sharded mode (`docs/metrics.md`, "Sharded mode").
pub const SHARDED_ONLY: &str = "wasm_reconciler_shard_";

/// The metric names `docs/metrics.md` documents (the first column of its tables).
pub fn documented_metrics() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md");
    let text = std::fs::read_to_string(path).expect("docs/metrics.md is readable");
    text.lines()
        .filter_map(|line| {
            line.strip_prefix("| `")?
                .split_once('`')
                .map(|(name, _)| name.to_owned())
        })
        .filter(|name| name.starts_with("wasm_reconciler_"))
        .collect()
}

/// Whether `metrics` (a `/metrics` body) holds a sample of `name`: the series itself, or a histogram's
/// `_bucket`, `_sum` and `_count` series.
pub fn exported(metrics: &str, name: &str) -> bool {
    metrics.lines().filter(|line| !line.starts_with('#')).any(|line| {
        line.strip_prefix(name).is_some_and(|rest| {
            rest.starts_with(['{', ' ']) || ["_bucket{", "_sum{", "_count{"].iter().any(|s| rest.starts_with(s))
        })
    })
}
