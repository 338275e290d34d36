//! A recording front for the embedded API server: the same router behind a middleware that notes every request
//! (method, path, query, the body of writes) and its response status, served on loopback with a kubeconfig, so
//! a host pointed at it can be audited without changing the API server.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::Value;
use wasm_reconciler_apiserver::{ApiServer, write_kubeconfig};

/// Largest request body kept for inspection (packed plugins are well under it).
const MAX_RECORDED_BODY: usize = 4 * 1024 * 1024;

/// One request as the API server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The raw query, without `?`.
    pub query: String,
    /// The JSON body of a write, when it had one.
    pub body: Option<Value>,
    /// The response status.
    pub status: u16,
    /// When the request arrived.
    pub received: std::time::SystemTime,
}

/// The requests recorded so far. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Recording(Arc<Mutex<Vec<RecordedRequest>>>);

impl Recording {
    /// Everything recorded so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The recording front, serving until dropped.
#[derive(Debug)]
pub struct RecordingFront {
    /// Requests seen so far.
    pub recording: Recording,
    /// A kubeconfig pointing at the front.
    pub kubeconfig: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RecordingFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RecordingFront {
    /// Serves `server`'s router behind the recorder on a loopback port; writes its kubeconfig into `dir`.
    pub async fn start(server: &ApiServer, dir: &Path) -> anyhow::Result<Self> {
        let recording = Recording::default();
        let router = server
            .router()
            .layer(axum::middleware::from_fn_with_state(recording.clone(), record));
        let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                eprintln!("the recording front stopped: {error}");
            }
        });
        let kubeconfig = dir.join("recorded-kubeconfig");
        write_kubeconfig(&kubeconfig, &url, None)?;
        Ok(Self {
            recording,
            kubeconfig,
            task,
        })
    }
}

async fn record(State(recording): State<Recording>, request: Request, next: Next) -> Response {
    let received = std::time::SystemTime::now();
    let method = request.method().as_str().to_owned();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    let (parts, body) = request.into_parts();
    let (body, recorded_body) = if matches!(method.as_str(), "POST" | "PUT" | "PATCH") {
        match axum::body::to_bytes(body, MAX_RECORDED_BODY).await {
            Ok(bytes) => {
                let json = serde_json::from_slice(&bytes).ok();
                (Body::from(bytes), json)
            }
            Err(_) => (Body::empty(), None),
        }
    } else {
        (body, None)
    };
    let response = next.run(Request::from_parts(parts, body)).await;
    recording
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(RecordedRequest {
            method,
            path,
            query,
            body: recorded_body,
            status: response.status().as_u16(),
            received,
        });
    response
}
