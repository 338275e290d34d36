//! Serving: the axum router (usable in-process as a tower Service) and HTTP on loopback.

pub mod encode;
pub mod handlers;
pub mod request;
pub mod watch;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use tokio_util::sync::CancellationToken;

use crate::cluster::Cluster;

/// Cancelled when the HTTP listener a request arrived on shuts down (ends its watches).
#[derive(Debug, Clone)]
pub struct ListenerShutdown(pub CancellationToken);

/// The router over a cluster.
pub fn router(cluster: Arc<Cluster>) -> Router {
    Router::new().fallback(move |request: Request| {
        let cluster = cluster.clone();
        async move { handlers::handle(cluster, request).await }
    })
}

/// A running HTTP server; dropping it stops the server.
#[derive(Debug)]
pub struct ServingHandle {
    addr: SocketAddr,
    token: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ServingHandle {
    pub(crate) fn new(addr: SocketAddr, token: CancellationToken, task: tokio::task::JoinHandle<()>) -> Self {
        ServingHandle {
            addr,
            token,
            task: Some(task),
        }
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stop accepting, end open watches, and wait for the server task.
    pub async fn shutdown(mut self) {
        self.token.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ServingHandle {
    fn drop(&mut self) {
        self.token.cancel();
    }
}
