//! `dnsrecord`: a wasm-reconciler plugin keeping `DNSRecord` objects as record sets in PowerDNS, the way
//! ExternalDNS keeps Services and Ingresses in DNS providers.
//!
//! A `DNSRecord` (`examples.wasm-reconciler.io/v1alpha1`) names a zone, a name, a type, a TTL and records. The
//! plugin reads the zone through PowerDNS's HTTP API (the host grants the plugin that one server in its settings
//! and hands it the API key as a variable from a Secret), writes the record set when it differs, and records in
//! its status which record set it keeps. It writes only record sets it owns, marked with the object's uid, and a
//! finalizer deletes the record set from PowerDNS before the object goes. When PowerDNS cannot be reached the
//! reconcile fails, so the host backs off and says why on the object, until it answers again.

pub mod powerdns;
pub mod resource;
pub mod zone;

use std::time::Duration;

use serde::Deserialize;
use wasm_reconciler_sdk::{Condition, ControllerSpec, Error, Event, Gvk, Outcome, Reconciler, WorldView, variables};

use crate::powerdns::{Config, PowerDns};
#[cfg(feature = "crd")]
pub use crate::resource::{DNSRecord, crd_yaml};
pub use crate::resource::{DNSRecordSpec, DNSRecordStatus};
use crate::zone::{Desired, Owner, Plan, SetKey, canonical_zone};

/// How often a record set is compared with PowerDNS even when nothing changed in the cluster (someone may have
/// edited the zone).
const RESYNC: Duration = Duration::from_secs(300);

/// The plugin: reconciles `DNSRecord`s against PowerDNS.
#[derive(Debug)]
pub struct DnsRecordReconciler;

/// The part of a `DNSRecord` the plugin reads.
#[derive(Deserialize)]
struct DnsRecordObject {
    spec: DNSRecordSpec,
    #[serde(default)]
    status: DNSRecordStatus,
}

impl Reconciler for DnsRecordReconciler {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(Gvk::new(resource::GROUP, resource::VERSION, resource::KIND))
            .finalizer(resource::FINALIZER)
            .resync(RESYNC)
    }

    fn reconcile(view: WorldView) -> Result<Outcome, Error> {
        let config: Config = view
            .config()
            .map_err(|error| error.context("the plugin configuration (config.yaml)"))?;
        let object: DnsRecordObject = view.primary()?;
        let owner = Owner {
            key: format!("{}/{}", view.namespace().unwrap_or_default(), view.name()),
            uid: view
                .uid()
                .ok_or_else(|| Error::msg("the DNSRecord has no uid"))?
                .to_owned(),
        };
        let api_key = variables::get(&config.api_key_variable)?;
        let powerdns = PowerDns::new(&config, api_key);
        if view.deleting() {
            return clean_up(&powerdns, &object, &owner);
        }
        let desired = match Desired::from_spec(&object.spec) {
            Ok(desired) => desired,
            Err(problem) => {
                return Ok(Outcome::new().leave_children_alone().condition(Condition::status_false(
                    "Ready",
                    "InvalidSpec",
                    problem,
                )));
            }
        };
        converge(&powerdns, &object.status, &desired, &owner)
    }
}

/// The record set the status says this object keeps, if any.
fn kept(status: &DNSRecordStatus) -> Option<(String, SetKey)> {
    Some((
        status.zone.clone()?,
        SetKey {
            fqdn: status.fqdn.clone()?,
            record_type: status.record_type.clone()?,
        },
    ))
}

fn status_of(desired: &Desired) -> DNSRecordStatus {
    DNSRecordStatus {
        fqdn: Some(desired.key.fqdn.clone()),
        record_type: Some(desired.key.record_type.clone()),
        zone: Some(desired.zone.clone()),
        ..DNSRecordStatus::default()
    }
}

fn converge(powerdns: &PowerDns, status: &DNSRecordStatus, desired: &Desired, owner: &Owner) -> Result<Outcome, Error> {
    let Some(zone) = powerdns.zone(&desired.zone)? else {
        return Err(Error::msg(format!("PowerDNS has no zone {}", desired.zone)));
    };
    let previous = kept(status);
    // A record set kept in another zone is cleaned up there first.
    if let Some((previous_zone, previous_key)) = &previous
        && *previous_zone != desired.zone
        && let Some(old_zone) = powerdns.zone(previous_zone)?
    {
        let changes = zone::clean_up(&old_zone, std::slice::from_ref(previous_key), owner);
        if !changes.is_empty() {
            powerdns.patch(previous_zone, &changes)?;
        }
    }
    let previous_here = previous
        .as_ref()
        .filter(|(previous_zone, _)| *previous_zone == desired.zone)
        .map(|(_, key)| key);
    let summary = format!(
        "{} has {} record{}",
        desired.key,
        desired.records.len(),
        if desired.records.len() == 1 { "" } else { "s" }
    );
    let outcome = match zone::converge(&zone, desired, previous_here, owner) {
        Plan::InSync => Outcome::new()
            .leave_children_alone()
            .status(&status_of(desired))
            .condition(Condition::status_true("Ready", "RecordInSync", summary)),
        Plan::Write { changes, created } => {
            powerdns.patch(&desired.zone, &changes)?;
            let (reason, verb) = if created {
                ("RecordCreated", "created")
            } else {
                ("RecordUpdated", "updated")
            };
            Outcome::new()
                .leave_children_alone()
                .status(&status_of(desired))
                .condition(Condition::status_true("Ready", "RecordInSync", summary))
                .event(Event::normal(reason, format!("{} {verb} in PowerDNS", desired.key)))
        }
        Plan::Conflict(key) => {
            let message = format!("{key} exists in PowerDNS and is not managed by this DNSRecord; it is left alone");
            // The status keeps naming what the object still owns, so that nothing it wrote is orphaned.
            Outcome::new()
                .leave_children_alone()
                .condition(Condition::status_false("Ready", "RecordConflict", message.clone()))
                .event(Event::warning("RecordConflict", message))
                .requeue_after(Duration::from_secs(60))
        }
    };
    Ok(outcome)
}

/// The finalizer's cleanup: deletes the record sets this object keeps (the spec's, and the one its status names),
/// then lets the object go. A zone that no longer exists holds nothing to clean up.
fn clean_up(powerdns: &PowerDns, object: &DnsRecordObject, owner: &Owner) -> Result<Outcome, Error> {
    let mut targets: Vec<(String, SetKey)> = Vec::new();
    if let Ok(desired) = Desired::from_spec(&object.spec) {
        targets.push((desired.zone, desired.key));
    }
    if let Some(kept) = kept(&object.status)
        && !targets.contains(&kept)
    {
        targets.push(kept);
    }
    let mut deleted = Vec::new();
    let mut zones: Vec<&str> = targets.iter().map(|(zone, _)| zone.as_str()).collect();
    zones.dedup();
    for zone_name in zones {
        let Some(zone) = powerdns.zone(&canonical_zone(zone_name))? else {
            continue;
        };
        let keys: Vec<SetKey> = targets
            .iter()
            .filter(|(zone, _)| zone == zone_name)
            .map(|(_, key)| key.clone())
            .collect();
        let changes = zone::clean_up(&zone, &keys, owner);
        if !changes.is_empty() {
            powerdns.patch(zone_name, &changes)?;
            deleted.extend(
                changes
                    .iter()
                    .map(|change| format!("{} {}", change.name, change.record_type)),
            );
        }
    }
    let mut outcome = Outcome::new().leave_children_alone().finalized();
    if !deleted.is_empty() {
        outcome = outcome.event(Event::normal(
            "RecordDeleted",
            format!("{} deleted from PowerDNS", deleted.join(", ")),
        ));
    }
    Ok(outcome)
}

wasm_reconciler_sdk::export_reconciler!(DnsRecordReconciler, contract = "0.2");

#[cfg(test)]
mod tests;
