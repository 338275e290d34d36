//! An embedded Kubernetes-compatible API server: in-process (a tower Service for `kube::Client`)
//! or over HTTP on loopback for `kubectl`, in memory or durable in a data directory.
//!
//! Data flow: `server` (routing, negotiation, watch streams) → `lifecycle` (what a write does to an
//! object) → `storage` (resourceVersion, durable commit, watch history); `registry` says which kinds
//! exist (built-ins and CRDs), `gc` runs owner-reference collection and namespace termination.
//!
//! ```no_run
//! # async fn example() -> Result<(), wasm_reconciler_apiserver::Error> {
//! use wasm_reconciler_apiserver::ApiServer;
//! let server = ApiServer::builder().build().await?;
//! let serving = server.serve("127.0.0.1:0".parse().unwrap()).await?;
//! println!("kubectl --server {} get namespaces", serving.url());
//! # Ok(()) }
//! ```

pub mod cluster;
pub mod error;
pub mod fault;
pub mod gc;
mod go_format;
pub mod jsonpath;
pub mod kubeconfig;
pub mod lifecycle;
pub mod object;
pub mod openapi;
pub mod patch;
pub mod protobuf;
pub mod registry;
pub mod schema;
pub mod selector;
pub mod server;
pub mod standalone;
pub mod storage;
pub mod table;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use cluster::{Cluster, Settings};
pub use fault::{Faults, WriteFault};
pub use kubeconfig::{CONTEXT_NAME, write_kubeconfig};
pub use server::ServingHandle;
pub use standalone::{ApiserverArgs, run_standalone};
use storage::Store;

/// Failure to start or run the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The durable store could not be opened.
    #[error("cannot open the data directory")]
    Storage(#[from] storage::StorageError),
    /// The listener could not bind.
    #[error("cannot listen on {addr}")]
    Bind {
        /// Requested address.
        addr: SocketAddr,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The kubeconfig could not be written.
    #[error(transparent)]
    Kubeconfig(#[from] kubeconfig::KubeconfigError),
    /// Waiting for a shutdown signal failed.
    #[error("cannot wait for shutdown signals")]
    Signal(#[source] std::io::Error),
}

/// Default number of events kept per resource for watches to resume from.
pub const DEFAULT_WATCH_HISTORY: usize = 10_000;

/// Configures an [`ApiServer`].
#[derive(Debug, Clone)]
pub struct ApiServerBuilder {
    data_dir: Option<PathBuf>,
    bearer_token: Option<String>,
    watch_history: usize,
    bookmark_interval: Duration,
}

impl Default for ApiServerBuilder {
    fn default() -> Self {
        ApiServerBuilder {
            data_dir: None,
            bearer_token: None,
            watch_history: DEFAULT_WATCH_HISTORY,
            bookmark_interval: Duration::from_secs(30),
        }
    }
}

impl ApiServerBuilder {
    /// Keep objects durably in this directory (None = in memory).
    pub fn data_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.data_dir = dir;
        self
    }

    /// Require this bearer token on every request (None = no authentication).
    pub fn bearer_token(mut self, token: Option<String>) -> Self {
        self.bearer_token = token;
        self
    }

    /// Events kept per resource for watches to resume from; older resourceVersions get 410 Gone.
    pub fn watch_history(mut self, events: usize) -> Self {
        self.watch_history = events;
        self
    }

    /// How often watches with `allowWatchBookmarks` get a BOOKMARK.
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// Open storage, create the default namespaces, and start the garbage collector.
    /// Must run inside a tokio runtime.
    pub async fn build(self) -> Result<ApiServer, Error> {
        let store = match &self.data_dir {
            Some(dir) => {
                let dir = dir.clone();
                let history = self.watch_history;
                tokio::task::spawn_blocking(move || Store::open(&dir, history))
                    .await
                    .expect("store opening does not panic")?
            }
            None => Store::in_memory(self.watch_history),
        };
        let cluster = Arc::new(Cluster::new(
            store,
            Settings {
                bearer_token: self.bearer_token,
                bookmark_interval: self.bookmark_interval,
            },
        ));
        cluster.bootstrap();
        gc::spawn(&cluster);
        Ok(ApiServer { cluster })
    }
}

/// A running API server (cheap to clone; all clones share state).
#[derive(Debug, Clone)]
pub struct ApiServer {
    cluster: Arc<Cluster>,
}

impl ApiServer {
    /// Start configuring a server.
    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    /// The router: a `tower::Service` for in-process clients (`kube::Client::new(router, "default")`).
    pub fn router(&self) -> axum::Router {
        server::router(self.cluster.clone())
    }

    /// Serve HTTP on `addr` (use port 0 for a free port) until the handle is shut down or dropped.
    pub async fn serve(&self, addr: SocketAddr) -> Result<ServingHandle, Error> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let bound = listener.local_addr().map_err(|source| Error::Bind { addr, source })?;
        let token = CancellationToken::new();
        let router = self
            .router()
            .layer(axum::Extension(server::ListenerShutdown(token.clone())));
        let shutdown = token.clone();
        let task = tokio::spawn(async move {
            let result = axum::serve(listener, router)
                .with_graceful_shutdown(async move { shutdown.cancelled().await })
                .await;
            if let Err(error) = result {
                tracing::error!(%error, "HTTP server failed");
            }
        });
        tracing::info!(addr = %bound, "serving Kubernetes API");
        Ok(ServingHandle::new(bound, token, task))
    }

    /// Fault injection for tests of clients.
    pub fn faults(&self) -> Faults {
        Faults {
            cluster: self.cluster.clone(),
        }
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.cluster.store.revision()
    }

    /// Whether objects are kept in a data directory.
    pub fn is_durable(&self) -> bool {
        self.cluster.store.is_durable()
    }

    /// Run one garbage-collection pass now (the collector also runs on its own after deletes).
    pub fn collect_garbage(&self) {
        gc::collect(&self.cluster);
    }
}
