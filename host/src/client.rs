//! How the host talks to the API server: the one way its clients are made, for its own account and for the
//! accounts it impersonates.

/// The client the host uses: kube's built-in retry of 429/503/504 (up to 15 attempts, delays up to 1000 s inside
/// one request) is turned off, because it would hold a worker far longer than the workqueue's own per-key backoff,
/// which retries failed reconciles anyway; watches and leader election have their own backoff too.
pub fn host_client(mut config: kube::Config) -> Result<kube::Client, kube::Error> {
    config.default_retry = false;
    kube::Client::try_from(config)
}
