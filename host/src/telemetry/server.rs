//! The telemetry HTTP server: `GET /metrics` (OpenMetrics), `GET /healthz` (liveness), `GET /readyz` (readiness).

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;

use super::{Health, Metrics};

/// Content type of `/metrics`: the OpenMetrics text format.
pub const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone)]
struct Telemetry {
    metrics: Metrics,
    health: Health,
}

/// The routes `/metrics`, `/healthz` and `/readyz`, for mounting or for tests.
pub fn router(metrics: Metrics, health: Health) -> Router {
    Router::new()
        .route("/metrics", get(metrics_handler))
        .route("/healthz", get(healthz_handler))
        .route("/readyz", get(readyz_handler))
        .with_state(Telemetry { metrics, health })
}

async fn metrics_handler(State(telemetry): State<Telemetry>) -> Response {
    (
        [(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)],
        telemetry.metrics.encode(),
    )
        .into_response()
}

async fn healthz_handler(State(telemetry): State<Telemetry>) -> Response {
    if telemetry.health.is_live() {
        (StatusCode::OK, "ok\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not live\n").into_response()
    }
}

async fn readyz_handler(State(telemetry): State<Telemetry>) -> Response {
    match telemetry.health.readiness() {
        Ok(readiness) => (StatusCode::OK, format!("{}\n", readiness.text())).into_response(),
        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, format!("{reason}\n")).into_response(),
    }
}

/// The telemetry server bound to its socket, not yet serving: [`MetricsServer::local_addr`] tells the port
/// when it was bound to port 0.
#[derive(Debug)]
pub struct MetricsServer {
    listener: TcpListener,
    router: Router,
}

impl MetricsServer {
    /// Binds `addr`; the error names the address.
    pub async fn bind(addr: SocketAddr, metrics: Metrics, health: Health) -> io::Result<Self> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|error| io::Error::new(error.kind(), format!("binding the metrics server to {addr}: {error}")))?;
        Ok(Self {
            listener,
            router: router(metrics, health),
        })
    }

    /// The address the server is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then finishes the requests in flight and returns.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) -> io::Result<()> {
        let address = self.local_addr()?;
        tracing::info!(%address, "serving /metrics, /healthz and /readyz");
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await?;
        tracing::info!(%address, "telemetry server stopped");
        Ok(())
    }
}

/// Binds `addr` and serves `/metrics`, `/healthz` and `/readyz` until `shutdown` completes.
pub async fn serve(
    addr: SocketAddr,
    metrics: Metrics,
    health: Health,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    MetricsServer::bind(addr, metrics, health).await?.run(shutdown).await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::body::{Body, to_bytes};
    use axum::http::Request;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tower::ServiceExt;

    use super::*;
    use crate::runtime::Completion;

    const TIMEOUT: Duration = Duration::from_secs(10);

    async fn get_path(router: Router, path: &str) -> (StatusCode, Option<String>, String) {
        let request = Request::get(path).body(Body::empty()).expect("request");
        let response = router.oneshot(request).await.expect("infallible router");
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|value| value.to_str().expect("ascii content type").to_owned());
        let body = to_bytes(response.into_body(), usize::MAX).await.expect("body");
        (
            status,
            content_type,
            String::from_utf8(body.to_vec()).expect("utf-8 body"),
        )
    }

    #[tokio::test]
    async fn metrics_are_served_as_openmetrics_text() {
        let metrics = Metrics::new();
        metrics.record_reconcile("webapp", &Completion::DONE, Duration::from_millis(4));
        let (status, content_type, body) = get_path(router(metrics, Health::new()), "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(content_type.as_deref(), Some(OPENMETRICS_CONTENT_TYPE));
        assert!(body.contains("wasm_reconciler_reconcile_total{plugin=\"webapp\",result=\"success\"} 1\n"));
        assert!(body.ends_with("# EOF\n"));
    }

    #[tokio::test]
    async fn healthz_follows_liveness() {
        let health = Health::new();
        let app = router(Metrics::new(), health.clone());
        assert_eq!(get_path(app.clone(), "/healthz").await.0, StatusCode::OK);
        assert_eq!(get_path(app.clone(), "/healthz").await.2, "ok\n");
        health.set_live(false);
        assert_eq!(get_path(app, "/healthz").await.0, StatusCode::SERVICE_UNAVAILABLE);
    }

    #[tokio::test]
    async fn readyz_waits_for_the_caches() {
        let health = Health::new();
        let app = router(Metrics::new(), health.clone());
        let (status, _, body) = get_path(app.clone(), "/readyz").await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, "caches not synced\n")
        );
        health.set_synced(true);
        let (status, _, body) = get_path(app, "/readyz").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "ok\n"));
    }

    #[tokio::test]
    async fn readyz_with_leader_election_says_standby_then_waits_for_the_leaders_caches() {
        let health = Health::new();
        health.set_leader_election(true);
        let app = router(Metrics::new(), health.clone());
        let (status, _, body) = get_path(app.clone(), "/readyz").await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::OK, "ok: standby, another replica holds the Lease\n")
        );
        health.set_leader(true);
        let (status, _, body) = get_path(app.clone(), "/readyz").await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, "caches not synced\n")
        );
        health.set_synced(true);
        assert_eq!(get_path(app, "/readyz").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn unknown_paths_are_not_found() {
        let (status, _, _) = get_path(router(Metrics::new(), Health::new()), "/debug").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    async fn http_get(addr: SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write request");
        let mut response = String::new();
        stream.read_to_string(&mut response).await.expect("read response");
        response
    }

    #[tokio::test]
    async fn serves_over_a_real_socket_and_stops_on_shutdown() {
        let metrics = Metrics::new();
        let health = Health::new();
        health.set_synced(true);
        metrics.set_leader(true);
        let server = MetricsServer::bind(SocketAddr::from(([127, 0, 0, 1], 0)), metrics, health)
            .await
            .expect("bind");
        let addr = server.local_addr().expect("local address");
        assert_ne!(addr.port(), 0);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(server.run(async move {
            stopped.await.ok();
        }));

        let ready = tokio::time::timeout(TIMEOUT, http_get(addr, "/readyz"))
            .await
            .expect("in time");
        assert!(ready.starts_with("HTTP/1.1 200 OK\r\n"), "{ready}");
        assert!(ready.ends_with("\r\n\r\nok\n"), "{ready}");
        let scraped = tokio::time::timeout(TIMEOUT, http_get(addr, "/metrics"))
            .await
            .expect("in time");
        assert!(
            scraped.contains(&format!("content-type: {OPENMETRICS_CONTENT_TYPE}\r\n")),
            "{scraped}"
        );
        assert!(scraped.contains("\nwasm_reconciler_leader 1\n"), "{scraped}");

        stop.send(()).expect("server still running");
        let result = tokio::time::timeout(TIMEOUT, serving)
            .await
            .expect("stops in time")
            .expect("task");
        assert!(result.is_ok(), "{result:?}");
        assert!(
            tokio::net::TcpStream::connect(addr).await.is_err(),
            "the socket is closed after shutdown"
        );
    }

    #[tokio::test]
    async fn binding_a_taken_port_names_the_address() {
        let taken = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = taken.local_addr().expect("address");
        let error = serve(addr, Metrics::new(), Health::new(), std::future::pending())
            .await
            .expect_err("port in use");
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);
        assert!(error.to_string().contains(&addr.to_string()), "{error}");
    }
}
