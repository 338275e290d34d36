//! A test plugin whose answer depends on the time, as a plugin that expires things does: an Echo with
//! `spec.expiresAtMs` is `Pending` until the wall clock passes it, then `Expired`. It asks for no requeue, so only
//! the resyncs of its unchanged world can find it expired. Each status also carries a hash of a constant under a
//! fresh `HashMap` seed (`seededHash`), which stays the same from call to call only if the seed does.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use wasm_reconciler_sdk::{ControllerSpec, Error, Gvk, Outcome, Reconciler, WorldView, export_reconciler};

/// The clock reconciler.
#[derive(Debug)]
pub struct Clock;

impl Reconciler for Clock {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(Gvk::new("test.wasm-reconciler.io", "v1", "Echo")).resync(Duration::from_secs(3600))
    }

    fn reconcile(view: WorldView) -> Result<Outcome, Error> {
        let expires_at = view.primary_json()["spec"]["expiresAtMs"]
            .as_u64()
            .ok_or_else(|| Error::msg("spec.expiresAtMs must be a number of milliseconds"))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|error| Error::msg(format_args!("the clock is before 1970: {error}")))?;
        let phase = if now.as_millis() >= u128::from(expires_at) {
            "Expired"
        } else {
            "Pending"
        };
        let seeded_hash = RandomState::new().hash_one("wasm-reconciler");
        Ok(Outcome::new()
            .leave_children_alone()
            .status(&json!({"phase": phase, "seededHash": seeded_hash.to_string()})))
    }
}

export_reconciler!(Clock);
