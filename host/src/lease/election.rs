//! Leader election on a `coordination.k8s.io` Lease, feeding a [`Fence`]: the holder renews every renew period (at
//! least twice per fence window; each write guarded by the resourceVersion it read), candidates take the Lease
//! once it is released or once they have seen no change to it for a whole lease duration on their own clock (never
//! by comparing another replica's wall-clock timestamps), and the fence opens only from the moment a successful
//! renewal was sent.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;

use super::fence::{BootInstant, Fence};

/// How often a candidate looks at the Lease.
pub const RETRY: Duration = Duration::from_secs(2);
/// How long the release on the way out may take.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// One Lease to hold.
#[derive(Debug, Clone)]
pub struct Election {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub lease_name: String,
    /// This replica's identity, written as the holder.
    pub identity: String,
    /// How long the Lease is valid without renewal.
    pub lease_duration: Duration,
    /// How often the holder renews it.
    pub renew_every: Duration,
}

/// What a candidate last saw of a Lease held by someone else, and when (on this replica's clock).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Observed {
    resource_version: String,
    seen: BootInstant,
}

/// Competes for the Lease until `stop` turns true, then releases it if held. The receiver is true while this
/// replica holds the role and its fence is open; `fence` is opened and closed alongside.
pub fn spawn(
    client: kube::Client,
    election: Election,
    fence: Fence,
    mut stop: watch::Receiver<bool>,
) -> (watch::Receiver<bool>, tokio::task::JoinHandle<()>) {
    let (held_tx, held_rx) = watch::channel(false);
    let task = tokio::spawn(async move {
        let leases: Api<Lease> = Api::namespaced(client, &election.namespace);
        let name = election.lease_name.as_str();
        let mut observed: Option<Observed> = None;
        let period = renewal_period(election.lease_duration, election.renew_every);
        loop {
            if *stop.borrow() {
                break;
            }
            let holding = *held_tx.borrow();
            let sent = BootInstant::now();
            let attempt = tokio::time::timeout(
                period.min(RETRY * 2),
                try_hold(&leases, &election, holding, &mut observed),
            )
            .await;
            let renewed = matches!(attempt, Ok(Ok(true)));
            match attempt {
                Ok(Ok(true)) => {
                    if holding {
                        fence.renewed(sent);
                    } else {
                        fence.acquired(sent);
                        tracing::info!(lease = %name, identity = %election.identity, "acquired the Lease");
                        held_tx.send_replace(true);
                    }
                }
                Ok(Ok(false)) => {
                    if holding {
                        tracing::warn!(lease = %name, identity = %election.identity, "the Lease was taken over; stopping");
                        fence.lost();
                        held_tx.send_replace(false);
                    }
                }
                Ok(Err(error)) => {
                    tracing::warn!(lease = %name, error = %crate::error_chain(&error), "could not read or write the Lease");
                }
                Err(_) => tracing::warn!(lease = %name, "the Lease request timed out"),
            }
            // The holder renews on schedule, or sooner when a renewal failed (before its fence closes); a candidate
            // looks again after the retry period.
            let pause = match fence.closes_at() {
                Some(_) if *held_tx.borrow() && renewed => period.saturating_sub(sent_elapsed(sent)),
                Some(_) => Duration::from_millis(500),
                None => RETRY,
            };
            let closes_in = fence
                .closes_at()
                .map(|closes| closes.since(BootInstant::now()))
                .filter(|_| *held_tx.borrow());
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = sleep_opt(closes_in) => {}
                _ = stop.changed() => {}
            }
            if *held_tx.borrow() && fence.check().is_err() {
                tracing::warn!(lease = %name, identity = %election.identity, "the Lease was not renewed in time; stopped writing");
                fence.lost();
                held_tx.send_replace(false);
            }
        }
        let held = *held_tx.borrow();
        fence.lost();
        held_tx.send_replace(false);
        if held {
            match tokio::time::timeout(RELEASE_TIMEOUT, release(&leases, name, &election.identity)).await {
                Ok(Ok(())) => tracing::info!(lease = %name, "released the Lease"),
                Ok(Err(error)) => {
                    tracing::warn!(lease = %name, error = %crate::error_chain(&error), "could not release the Lease")
                }
                Err(_) => tracing::warn!(lease = %name, "releasing the Lease timed out"),
            }
        }
    });
    (held_rx, task)
}

/// How often a holder renews: every `renew_every`, and at least twice within the fence's window (three quarters of
/// the lease duration), so that one slow or failed renewal does not close the fence.
pub fn renewal_period(lease_duration: Duration, renew_every: Duration) -> Duration {
    renew_every.min((lease_duration - lease_duration / 4) / 2)
}

fn sent_elapsed(sent: BootInstant) -> Duration {
    BootInstant::now().since(sent)
}

async fn sleep_opt(duration: Option<Duration>) {
    match duration {
        Some(duration) => tokio::time::sleep(duration).await,
        None => std::future::pending().await,
    }
}

/// One round: renews the Lease when `holding`, else takes it if it is free or its holder has let it lapse.
/// `Ok(true)`: this replica holds it now; `Ok(false)`: someone else does.
async fn try_hold(
    leases: &Api<Lease>,
    election: &Election,
    holding: bool,
    observed: &mut Option<Observed>,
) -> Result<bool, kube::Error> {
    let now = MicroTime(Timestamp::now());
    let seconds = i32::try_from(election.lease_duration.as_secs()).unwrap_or(i32::MAX);
    let Some(mut lease) = leases.get_opt(&election.lease_name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(election.lease_name.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(election.identity.clone()),
                lease_duration_seconds: Some(seconds),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        return conflict_is_false(leases.create(&PostParams::default(), &lease).await);
    };
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
    let mine = holder.as_deref() == Some(election.identity.as_str());
    if holding && !mine {
        return Ok(false);
    }
    if !mine && let Some(holder) = &holder {
        // Held by another: it lapses once nothing about it has changed for a whole lease duration, as seen here.
        let version = lease.metadata.resource_version.clone().unwrap_or_default();
        let now_here = BootInstant::now();
        let since = match observed {
            Some(seen) if seen.resource_version == version => now_here.since(seen.seen),
            _ => {
                *observed = Some(Observed {
                    resource_version: version,
                    seen: now_here,
                });
                Duration::ZERO
            }
        };
        let duration = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map_or(election.lease_duration, Duration::from_secs);
        if since < duration {
            return Ok(false);
        }
        tracing::info!(lease = %election.lease_name, %holder, "the holder let the Lease lapse; taking it over");
    }
    if !mine {
        spec.acquire_time = Some(now.clone());
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        spec.holder_identity = Some(election.identity.clone());
    }
    spec.lease_duration_seconds = Some(seconds);
    spec.renew_time = Some(now);
    // `replace` carries the resourceVersion read above: a concurrent change makes it a conflict.
    let result = leases
        .replace(&election.lease_name, &PostParams::default(), &lease)
        .await;
    if result.is_ok() {
        *observed = None;
    }
    conflict_is_false(result)
}

/// A conflict (409) means another replica wrote the Lease first: not held.
fn conflict_is_false(result: Result<Lease, kube::Error>) -> Result<bool, kube::Error> {
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error),
    }
}

/// Clears the holder if it is still `identity`, so a successor takes over at once instead of after the duration.
async fn release(leases: &Api<Lease>, name: &str, identity: &str) -> Result<(), kube::Error> {
    let Some(mut lease) = leases.get_opt(name).await? else {
        return Ok(());
    };
    let Some(spec) = &mut lease.spec else { return Ok(()) };
    if spec.holder_identity.as_deref() != Some(identity) {
        return Ok(());
    }
    spec.holder_identity = None;
    leases.replace(name, &PostParams::default(), &lease).await.map(drop)
}
