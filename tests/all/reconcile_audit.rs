//! An audit of reconciles across the hosts of this test process: a tracing layer that records when each host's
//! `reconcile` span (plugin, object, shard) opened and closed, so a test can check that no object was reconciled
//! by two replicas at once.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// One reconcile: which replica (`shard`) reconciled which object of which plugin, from `start` to `end` (`None`
/// while running, or when its host was killed mid-reconcile).
#[derive(Debug, Clone)]
pub struct Reconcile {
    pub plugin: String,
    pub object: String,
    pub shard: String,
    pub start: Instant,
    pub end: Option<Instant>,
}

static RECONCILES: Mutex<Vec<Reconcile>> = Mutex::new(Vec::new());

/// Every reconcile of a sharded host seen so far, `plugin`'s only.
pub fn reconciles(plugin: &str) -> Vec<Reconcile> {
    RECONCILES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|r| r.plugin == plugin)
        .cloned()
        .collect()
}

/// Pairs of reconciles of one object by two replicas whose times overlap. A reconcile still open counts as
/// running until `open_until(shard)`: now for a live replica, the moment it was killed for a killed one.
pub fn overlaps(reconciles: &[Reconcile], open_until: impl Fn(&str) -> Instant) -> Vec<(Reconcile, Reconcile)> {
    let mut by_object: BTreeMap<&str, Vec<&Reconcile>> = BTreeMap::new();
    for reconcile in reconciles {
        by_object.entry(&reconcile.object).or_default().push(reconcile);
    }
    let mut found = Vec::new();
    for (_, mut runs) in by_object {
        runs.sort_by_key(|r| r.start);
        for (i, first) in runs.iter().enumerate() {
            let first_end = first.end.unwrap_or_else(|| open_until(&first.shard));
            for second in &runs[i + 1..] {
                if second.start >= first_end {
                    break;
                }
                if second.shard != first.shard {
                    found.push(((*first).clone(), (*second).clone()));
                }
            }
        }
    }
    found
}

/// The layer: add it to the test subscriber.
pub struct AuditLayer;

#[derive(Default)]
struct Fields {
    plugin: Option<String>,
    object: Option<String>,
    shard: Option<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record(field, value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.record(field, format!("{value:?}"));
    }
}

impl Fields {
    fn record(&mut self, field: &Field, value: String) {
        match field.name() {
            "plugin" => self.plugin = Some(value),
            "object" => self.object = Some(value),
            "shard" => self.shard = Some(value),
            _ => {}
        }
    }
}

/// Where a recorded reconcile sits in [`RECONCILES`].
struct Slot(usize);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for AuditLayer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != "reconcile" {
            return;
        }
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        let Some(fields) = extensions.get_mut::<Fields>() else {
            return;
        };
        values.record(fields);
        // The shard is recorded right after the span opens; that is when the reconcile counts as started.
        if let (Some(plugin), Some(object), Some(shard)) = (&fields.plugin, &fields.object, &fields.shard) {
            let reconcile = Reconcile {
                plugin: plugin.clone(),
                object: object.clone(),
                shard: shard.clone(),
                start: Instant::now(),
                end: None,
            };
            let mut all = RECONCILES.lock().unwrap_or_else(PoisonError::into_inner);
            all.push(reconcile);
            let slot = Slot(all.len() - 1);
            drop(all);
            extensions.insert(slot);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        if let Some(Slot(index)) = span.extensions().get::<Slot>() {
            RECONCILES.lock().unwrap_or_else(PoisonError::into_inner)[*index].end = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn run(object: &str, shard: &str, base: Instant, from: u64, to: Option<u64>) -> Reconcile {
        Reconcile {
            plugin: "p".into(),
            object: object.into(),
            shard: shard.into(),
            start: base + Duration::from_millis(from),
            end: to.map(|to| base + Duration::from_millis(to)),
        }
    }

    #[test]
    fn overlaps_are_found_only_across_replicas_of_one_object() {
        let base = Instant::now();
        let runs = [
            run("a", "host-a", base, 0, Some(10)),
            run("a", "host-b", base, 10, Some(20)),
            run("a", "host-a", base, 15, Some(16)),
            run("b", "host-a", base, 0, Some(30)),
            run("b", "host-a", base, 5, Some(6)),
            run("c", "host-c", base, 0, None),
            run("c", "host-a", base, 50, Some(60)),
        ];
        let killed_at = base + Duration::from_millis(40);
        let found = overlaps(&runs, |shard| {
            if shard == "host-c" {
                killed_at
            } else {
                base + Duration::from_secs(1)
            }
        });
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].0.shard.as_str(), found[0].1.shard.as_str()),
            ("host-b", "host-a")
        );
        let found = overlaps(&runs, |_| base + Duration::from_secs(1));
        assert_eq!(found.len(), 2, "an open run of a live replica overlaps what follows it");
    }
}
