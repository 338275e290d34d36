//! Throughput benchmark (not a test): creates and updates with 10 concurrent watchers, and list
//! latency at 10,000 objects, all through the in-process router (no sockets). Writes its numbers
//! to `docs/benchmarks/apiserver.md`.
//!
//! Run with `cargo bench -p wasm-reconciler-apiserver --bench throughput`.

use std::time::{Duration, Instant};

use axum::body::Body;
use futures::StreamExt;
use http::Request;
use http_body_util::BodyExt;
use tower::ServiceExt;
use wasm_reconciler_apiserver::ApiServer;

const WATCHERS: usize = 10;
const WRITERS: usize = 8;
const OBJECTS: usize = 10_000;
const LIST_RUNS: usize = 20;

async fn send(router: &axum::Router, request: Request<Body>) -> (u16, bytes::Bytes) {
    let response = router.clone().oneshot(request).await.expect("router is infallible");
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.expect("body").to_bytes();
    (status, body)
}

fn create(name: &str) -> Request<Body> {
    let body = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","labels":{{"bench":"yes"}}}},"data":{{"key":"value-0"}}}}"#
    );
    Request::post("/api/v1/namespaces/default/configmaps?fieldManager=bench")
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap()
}

fn update(name: &str, round: usize) -> Request<Body> {
    let body = format!(r#"{{"data":{{"key":"value-{round}"}}}}"#);
    Request::patch(format!(
        "/api/v1/namespaces/default/configmaps/{name}?fieldManager=bench"
    ))
    .header("content-type", "application/merge-patch+json")
    .body(Body::from(body))
    .unwrap()
}

/// Start `WATCHERS` watches from the current resourceVersion; each counts events until `expected`.
async fn start_watchers(server: &ApiServer, expected: usize) -> Vec<tokio::task::JoinHandle<usize>> {
    let router = server.router();
    let version = server.resource_version();
    let mut handles = Vec::new();
    for _ in 0..WATCHERS {
        let request = Request::get(format!(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={version}"
        ))
        .body(Body::empty())
        .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let mut stream = response.into_body().into_data_stream();
        handles.push(tokio::spawn(async move {
            let mut events = 0;
            while events < expected {
                match stream.next().await {
                    Some(Ok(chunk)) => events += chunk.iter().filter(|b| **b == b'\n').count(),
                    _ => break,
                }
            }
            events
        }));
    }
    handles
}

async fn run_writes(
    router: &axum::Router,
    make: impl Fn(usize) -> Request<Body> + Send + Sync + Clone + 'static,
) -> Duration {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let router = router.clone();
        let make = make.clone();
        tasks.push(tokio::spawn(async move {
            let mut index = writer;
            while index < OBJECTS {
                let (status, body) = send(&router, make(index)).await;
                assert!(
                    status < 300,
                    "write failed: {status} {}",
                    String::from_utf8_lossy(&body)
                );
                index += WRITERS;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    started.elapsed()
}

async fn wait_watchers(handles: Vec<tokio::task::JoinHandle<usize>>, expected: usize) -> Duration {
    let started = Instant::now();
    for handle in handles {
        let seen = handle.await.unwrap();
        assert!(seen >= expected, "a watcher saw {seen} of {expected} events");
    }
    started.elapsed()
}

async fn list_latency(router: &axum::Router, accept: &str) -> (Duration, Duration, usize) {
    let mut samples = Vec::new();
    let mut size = 0;
    for _ in 0..LIST_RUNS {
        let request = Request::get("/api/v1/namespaces/default/configmaps")
            .header("accept", accept)
            .body(Body::empty())
            .unwrap();
        let started = Instant::now();
        let (status, body) = send(router, request).await;
        samples.push(started.elapsed());
        assert_eq!(status, 200);
        size = body.len();
    }
    samples.sort();
    (samples[LIST_RUNS / 2], samples[LIST_RUNS * 9 / 10], size)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = ApiServer::builder().build().await.unwrap();
        let router = server.router();

        let watchers = start_watchers(&server, OBJECTS).await;
        let create_time = run_writes(&router, |i| create(&format!("cm-{i:05}"))).await;
        let create_drain = wait_watchers(watchers, OBJECTS).await;

        let watchers = start_watchers(&server, OBJECTS).await;
        let update_time = run_writes(&router, |i| update(&format!("cm-{i:05}"), 1)).await;
        let update_drain = wait_watchers(watchers, OBJECTS).await;

        let (json_median, json_p90, json_size) = list_latency(&router, "application/json").await;
        let (table_median, table_p90, _) =
            list_latency(&router, "application/json;as=Table;v=v1;g=meta.k8s.io,application/json").await;

        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let rate = |time: Duration| OBJECTS as f64 / time.as_secs_f64();
        let report = format!(
            "# API server benchmark\n\n\
             Generated by `cargo bench -p wasm-reconciler-apiserver --bench throughput` (release build,\n\
             in-memory store, requests through the in-process axum router: no sockets, no client library).\n\n\
             Machine: {cores} cores (`nproc`), {os}/{arch}.\n\n\
             ## Writes with {WATCHERS} concurrent watchers\n\n\
             {WRITERS} concurrent writers, {OBJECTS} ConfigMaps; every watcher receives every event.\n\n\
             | operation | writes done | writes/s | all watchers have every event | writes/s end to end |\n\
             | --- | --- | --- | --- | --- |\n\
             | create | {create_ms:.0} ms | {create_rate:.0} | {create_drain_ms:.0} ms later | {create_total:.0} |\n\
             | update (merge patch) | {update_ms:.0} ms | {update_rate:.0} | {update_drain_ms:.0} ms later | {update_total:.0} |\n\n\
             Each write records managedFields, bumps the resourceVersion, appends to the watch history and\n\
             fans out to the watchers, which encode each event as JSON.\n\n\
             ## List latency at {OBJECTS} objects\n\n\
             | representation | median | p90 | response size |\n\
             | --- | --- | --- | --- |\n\
             | JSON list | {json_median_ms:.1} ms | {json_p90_ms:.1} ms | {json_kib} KiB |\n\
             | Table (kubectl get) | {table_median_ms:.1} ms | {table_p90_ms:.1} ms | |\n",
            os = std::env::consts::OS,
            arch = std::env::consts::ARCH,
            create_ms = create_time.as_secs_f64() * 1000.0,
            create_rate = rate(create_time),
            create_drain_ms = create_drain.as_secs_f64() * 1000.0,
            update_ms = update_time.as_secs_f64() * 1000.0,
            update_rate = rate(update_time),
            update_drain_ms = update_drain.as_secs_f64() * 1000.0,
            create_total = rate(create_time + create_drain),
            update_total = rate(update_time + update_drain),
            json_median_ms = json_median.as_secs_f64() * 1000.0,
            json_p90_ms = json_p90.as_secs_f64() * 1000.0,
            json_kib = json_size / 1024,
            table_median_ms = table_median.as_secs_f64() * 1000.0,
            table_p90_ms = table_p90.as_secs_f64() * 1000.0,
        );
        print!("{report}");
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/benchmarks/apiserver.md");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, report).unwrap();
        println!("wrote {}", path.display());
    });
}
