//! A replica's membership Lease: created and renewed by the replica alone, read by the sharder.
//!
//! The replica counts itself a member only while its last successful renewal is recent enough that the sharder
//! cannot yet see the Lease expired: its member [`Fence`] closes a quarter of the lease duration before that. A
//! replica cut off from the API server, or paused, therefore stops writing before its objects are handed to others.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;

use super::{RING_LABEL, Sharding};
use crate::lease::{BootInstant, Fence};

/// Whether a Lease is held by a replica that renewed it recently enough, as of `now`.
pub fn is_live(lease: &Lease, now: Timestamp) -> bool {
    let Some(spec) = &lease.spec else { return false };
    if spec.holder_identity.as_deref().is_none_or(str::is_empty) {
        return false;
    }
    let (Some(renewed), Some(seconds)) = (&spec.renew_time, spec.lease_duration_seconds) else {
        return false;
    };
    now < renewed.0 + k8s_openapi::jiff::SignedDuration::from_secs(i64::from(seconds))
}

/// Renews the membership Lease of `identity` until `stop` turns true, then releases it. The receiver returned is
/// true while this replica is a member; `fence` opens with the first renewal, stays open for three quarters of a
/// lease duration after each successful one, and closes when they fail for that long.
pub fn spawn(
    client: kube::Client,
    sharding: &Sharding,
    identity: &str,
    fence: Fence,
    mut stop: watch::Receiver<bool>,
) -> (watch::Receiver<bool>, tokio::task::JoinHandle<()>) {
    let (member_tx, member_rx) = watch::channel(false);
    let leases: Api<Lease> = Api::namespaced(client, &sharding.namespace);
    let name = sharding.member_lease(identity);
    let ring = sharding.ring.clone();
    let identity = identity.to_owned();
    let duration = sharding.lease_duration;
    let renew_every = crate::lease::election::renewal_period(duration, sharding.renew_every);
    let task = tokio::spawn(async move {
        loop {
            if *stop.borrow() {
                break;
            }
            // Counted from the moment a successful renewal was sent: the Lease's renewTime is no earlier than that.
            let sent = BootInstant::now();
            let budget = fence
                .closes_at()
                .map_or(renew_every, |closes| closes.since(sent).max(Duration::from_millis(100)));
            match tokio::time::timeout(
                budget.min(renew_every),
                renew(&leases, &name, &ring, &identity, duration),
            )
            .await
            {
                Ok(Ok(())) => {
                    if *member_tx.borrow() {
                        fence.renewed(sent);
                    } else {
                        fence.acquired(sent);
                        tracing::info!(lease = %name, identity = %identity, "joined the ring");
                        member_tx.send_replace(true);
                    }
                }
                Ok(Err(error)) => {
                    tracing::warn!(lease = %name, error = %crate::error_chain(&error), "could not renew the membership Lease");
                }
                Err(_) => tracing::warn!(lease = %name, "renewing the membership Lease timed out"),
            }
            let renewed_in_time = fence.closes_at().is_some_and(|closes| closes > sent.plus(renew_every));
            let pause = if renewed_in_time {
                renew_every.saturating_sub(BootInstant::now().since(sent))
            } else {
                Duration::from_millis(500)
            };
            let closes_in = fence.closes_at().map(|closes| closes.since(BootInstant::now()));
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = tokio::time::sleep(closes_in.unwrap_or(pause)), if closes_in.is_some() => {}
                _ = stop.changed() => {}
            }
            if *member_tx.borrow() && fence.check().is_err() {
                tracing::warn!(lease = %name, identity = %identity, "membership Lease not renewed in time; stopped reconciling");
                fence.lost();
                member_tx.send_replace(false);
            }
        }
        fence.lost();
        member_tx.send_replace(false);
        match tokio::time::timeout(Duration::from_secs(5), release(&leases, &name)).await {
            Ok(Ok(())) => tracing::info!(lease = %name, "left the ring"),
            Ok(Err(error)) => {
                tracing::warn!(lease = %name, error = %crate::error_chain(&error), "could not release the membership Lease")
            }
            Err(_) => tracing::warn!(lease = %name, "releasing the membership Lease timed out"),
        }
    });
    (member_rx, task)
}

/// Creates the Lease held by `identity`, or renews it (taking it over if it was released or names someone else).
async fn renew(
    leases: &Api<Lease>,
    name: &str,
    ring: &str,
    identity: &str,
    duration: Duration,
) -> Result<(), kube::Error> {
    let now = MicroTime(Timestamp::now());
    let seconds = i32::try_from(duration.as_secs()).unwrap_or(i32::MAX);
    match leases.get_opt(name).await? {
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    labels: Some([(RING_LABEL.to_owned(), ring.to_owned())].into()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(identity.to_owned()),
                    lease_duration_seconds: Some(seconds),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            leases.create(&PostParams::default(), &lease).await.map(drop)
        }
        Some(mut lease) => {
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            if spec.holder_identity.as_deref() != Some(identity) {
                spec.holder_identity = Some(identity.to_owned());
                spec.acquire_time = Some(now.clone());
                spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            }
            spec.lease_duration_seconds = Some(seconds);
            spec.renew_time = Some(now);
            lease
                .metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(RING_LABEL.to_owned(), ring.to_owned());
            leases.replace(name, &PostParams::default(), &lease).await.map(drop)
        }
    }
}

/// Clears the holder, so the sharder moves this replica's objects at once instead of after the lease duration.
async fn release(leases: &Api<Lease>, name: &str) -> Result<(), kube::Error> {
    let Some(mut lease) = leases.get_opt(name).await? else {
        return Ok(());
    };
    if let Some(spec) = &mut lease.spec {
        spec.holder_identity = None;
    }
    leases.replace(name, &PostParams::default(), &lease).await.map(drop)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::SignedDuration;

    use super::*;

    fn lease(holder: Option<&str>, renewed: Timestamp, seconds: i32) -> Lease {
        Lease {
            metadata: ObjectMeta::default(),
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                renew_time: Some(MicroTime(renewed)),
                lease_duration_seconds: Some(seconds),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn a_lease_is_live_until_its_duration_after_the_last_renewal() {
        let renewed = Timestamp::from_second(1_800_000_000).unwrap();
        let live = lease(Some("host-a"), renewed, 15);
        assert!(is_live(&live, renewed));
        assert!(is_live(&live, renewed + SignedDuration::from_secs(14)));
        assert!(!is_live(&live, renewed + SignedDuration::from_secs(15)));
        assert!(
            !is_live(&lease(None, renewed, 15), renewed),
            "a released Lease is not live"
        );
        assert!(!is_live(&lease(Some(""), renewed, 15), renewed));
        assert!(!is_live(&Lease::default(), renewed));
    }
}
