//! `plugin check`: a plugin run offline on its fixtures under the oracles that catch controller bugs before a
//! cluster does. Each fixture's world ([`world`]: the embedded API server's object rules and the host's applier, in
//! memory) is reconciled until it settles, every view twice; then the spec is mutated from the CRD's schema
//! ([`mutation`]) and the worlds are compared ([`compare`]):
//!
//! - **determinism**: the same view reconciled twice gives the same outcome, byte for byte;
//! - **stability**: once the outcome is applied, reconciling again changes no child and no status, writes nothing,
//!   and asks for no requeue sooner than `min_idle_requeue` (a requeue of a state with nothing to do is churn);
//! - **differential** (Acto's oracle): a sequence of specs, each reconciled until it settles from the state the
//!   previous one left, ends where a fresh apply of the last spec ends (same children, same status modulo
//!   timestamps and generations);
//! - **recovery**: a spec the schema refuses (stored past validation, as objects stored before a schema tightened
//!   are) or the plugin rejects, then a revert to the spec before, returns the world to where it was;
//! - **crashes**: a trap, a timeout, memory exhaustion or an invalid outcome on any world is a finding;
//! - **cleanup**: a primary with the plugin's finalizer, deleted, is finalized and goes.
//!
//! Sequences are numbered per fixture: first one per valid single mutation of the fixture's spec, then the random
//! ones, drawn from a [`random::SplitMix64`] seeded with the seed, the fixture and the number, so that a seed and a
//! number replay one sequence exactly.

pub mod compare;
pub mod mutation;
pub mod random;
pub mod world;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use self::compare::{EndState, value_differences};
use self::mutation::{Mutation, SchemaError, SpecSchema, ValuePool};
use self::random::SplitMix64;
use self::world::{Applied, Setup, Start, World, WorldError};
use crate::fixture::WorldFixture;
use crate::plugin::{Outcome, Plugin, ReconcileError};

/// How thorough a check is, and what it replays.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Seed of the random sequences.
    pub seed: u64,
    /// Random sequences per fixture.
    pub random_sequences: usize,
    /// Steps of each random sequence.
    pub steps: usize,
    /// Reconciles allowed for a world to settle.
    pub max_rounds: usize,
    /// The shortest requeue a settled state may ask for without being churn.
    pub min_idle_requeue: Duration,
    /// Run only this sequence of each fixture (besides the fixture's own stability), to replay a finding.
    pub only_sequence: Option<usize>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            seed: 1,
            random_sequences: 12,
            steps: 4,
            max_rounds: 40,
            min_idle_requeue: Duration::from_secs(60),
            only_sequence: None,
        }
    }
}

/// One fixture to check.
#[derive(Debug, Clone)]
pub struct FixtureInput {
    /// Where it was read from (named in the report).
    pub path: PathBuf,
    /// The fixture.
    pub fixture: WorldFixture,
}

/// Why a check could not run (a finding is not an error).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A CRD given is not one the API server accepts.
    #[error("CRD {name} is invalid: {problems}")]
    InvalidCrd {
        /// Its name.
        name: String,
        /// The API server's objections.
        problems: String,
    },
    /// The primary's schema could not be read.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// A fixture's world could not be set up.
    #[error("fixture {path}")]
    Fixture {
        /// The fixture.
        path: PathBuf,
        /// The cause.
        #[source]
        source: WorldError,
    },
    /// A fixture's primary spec is refused by its own CRD.
    #[error("fixture {path}: the primary's spec is invalid by its CRD: {problems}")]
    InvalidSpec {
        /// The fixture.
        path: PathBuf,
        /// The API server's objections.
        problems: String,
    },
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FindingKind {
    /// The same view gave two different outcomes.
    Nondeterministic,
    /// A world did not settle within the allowed reconciles.
    NotSettled,
    /// The plugin keeps failing on a world a fixture says is valid.
    Failing,
    /// The host refuses the plugin's outcome (a child out of its scope), or the API server refuses to store what it
    /// asks for (a child or status its schema refuses), on a spec the CRD accepts.
    Refused,
    /// A settled state asks for a requeue sooner than the threshold.
    RequeueChurn,
    /// A settled state still writes (the API server drops or rewrites what is sent).
    IdleWrites,
    /// A sequence of specs ends elsewhere than a fresh apply of its last spec.
    Differential,
    /// An invalid spec and a revert do not return the world to where it was.
    Recovery,
    /// The plugin trapped, ran out of time or memory, or returned an invalid outcome.
    Crash,
    /// A deleted primary is not finalized.
    Cleanup,
}

impl FindingKind {
    fn label(self) -> &'static str {
        match self {
            Self::Nondeterministic => "determinism",
            Self::NotSettled => "stability",
            Self::Failing => "failure",
            Self::Refused => "refused",
            Self::RequeueChurn => "requeue churn",
            Self::IdleWrites => "idle writes",
            Self::Differential => "differential",
            Self::Recovery => "recovery",
            Self::Crash => "crash",
            Self::Cleanup => "cleanup",
        }
    }
}

/// A mutation sequence, as the report names it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SequenceRecord {
    /// Its number within the fixture (`--sequence`).
    pub id: usize,
    /// `single` (one mutation of the fixture's spec), `random`, or `invalid` (a spec the schema refuses, then the
    /// revert).
    pub origin: &'static str,
    /// Each step, readable.
    pub steps: Vec<String>,
    /// Each step's mutation.
    pub mutations: Vec<Mutation>,
}

/// One thing found wrong.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// What kind.
    pub kind: FindingKind,
    /// The fixture it was found from.
    pub fixture: PathBuf,
    /// Where: the fixture's own world, or a sequence and its step.
    pub context: String,
    /// The sequence that reproduces it, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<SequenceRecord>,
    /// One line.
    pub summary: String,
    /// The evidence, a line each.
    pub details: Vec<String>,
    /// The command that replays it (filled in by the command line).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub replay: String,
    /// How often the same finding came up.
    pub occurrences: usize,
}

/// What was run on one fixture.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FixtureSummary {
    /// The fixture.
    pub fixture: PathBuf,
    /// Reconciles until the fixture's own world settled (`None`: it did not).
    pub settled_after: Option<usize>,
    /// Sequences of one mutation of the fixture's spec.
    pub single_sequences: usize,
    /// Random sequences.
    pub random_sequences: usize,
    /// Specs the schema refuses, tried for recovery.
    pub invalid_specs: usize,
    /// Of those, how many the API server refused (as it should).
    pub refused_by_the_api_server: usize,
    /// Steps the plugin rejected with an error, each followed by a revert.
    pub rejected_steps: usize,
    /// Reconciles run in all, each of them twice.
    pub reconciles: usize,
    /// Why mutation was skipped, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutation_skipped: Option<String>,
}

/// The result of a check.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The kind the plugin reconciles.
    pub primary: String,
    /// The seed.
    pub seed: u64,
    /// Per fixture, what ran.
    pub fixtures: Vec<FixtureSummary>,
    /// What was found.
    pub findings: Vec<Finding>,
}

/// How a world's reconciles ended.
#[derive(Debug, Clone)]
enum Settle {
    /// A reconcile changed nothing: the outcome's requeue and the writes the host still sent.
    Quiet {
        requeue: Option<Duration>,
        idle_writes: Vec<String>,
    },
    /// The primary is gone (finalized), or released without the plugin's finalizer.
    Gone,
    /// The plugin fails and nothing changes any more.
    Failing(String),
    /// The host refuses the plugin's outcome (out of its scope), or the API server refuses a write of it, and
    /// nothing changes any more.
    Refused(String),
    /// Still changing after the allowed reconciles: the last round's changes.
    NotSettled(Vec<String>),
}

/// The end of [`Checker::settle`]: how, after how many reconciles, and whether the plugin left children alone.
#[derive(Debug, Clone)]
struct Settled {
    end: Settle,
    rounds: usize,
    left_children_alone: bool,
}

/// Where a world is, for the findings made in it.
#[derive(Debug, Clone)]
struct Context {
    fixture: PathBuf,
    place: String,
    sequence: Option<SequenceRecord>,
}

/// Runs the check of one plugin.
struct Checker<'a> {
    plugin: &'a Plugin,
    crds: Vec<Value>,
    options: &'a CheckOptions,
    findings: Vec<Finding>,
    reconciles: usize,
    /// End states of fresh applies, by fixture and spec text.
    fresh: HashMap<(PathBuf, String), EndState>,
}

/// Checks `plugin` on `fixtures`, with the primary's and other custom kinds' `crds`.
pub fn check(
    plugin: &Plugin,
    crds: Vec<Value>,
    fixtures: &[FixtureInput],
    options: &CheckOptions,
) -> Result<Report, CheckError> {
    for crd in &crds {
        let problems = wasm_reconciler_apiserver::registry::crd::validate(crd);
        if !problems.is_empty() {
            return Err(CheckError::InvalidCrd {
                name: crd
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("(unnamed)")
                    .to_owned(),
                problems: problems
                    .iter()
                    .map(|problem| problem.line())
                    .collect::<Vec<_>>()
                    .join("; "),
            });
        }
    }
    let spec = plugin.spec();
    // A custom primary kind without its CRD is refused when its world is set up, naming --crd; a built-in one is
    // checked without mutation.
    let defines_primary = crds.iter().any(|crd| {
        crd.pointer("/spec/group").and_then(Value::as_str) == Some(spec.primary.group.as_str())
            && crd.pointer("/spec/names/kind").and_then(Value::as_str) == Some(spec.primary.kind.as_str())
    });
    let schema = if defines_primary {
        Some(SpecSchema::from_crds(&crds, &spec.primary)?)
    } else {
        None
    };
    let mut pool = ValuePool::default();
    for input in fixtures {
        if let Some(spec) = input.fixture.primary.get("spec") {
            pool.add(spec);
        }
    }
    let mut checker = Checker {
        plugin,
        crds,
        options,
        findings: Vec::new(),
        reconciles: 0,
        fresh: HashMap::new(),
    };
    let mut summaries = Vec::new();
    for input in fixtures {
        summaries.push(checker.check_fixture(input, schema.as_ref(), &pool)?);
    }
    Ok(Report {
        primary: spec.primary.to_string(),
        seed: options.seed,
        fixtures: summaries,
        findings: checker.findings,
    })
}

impl Checker<'_> {
    fn setup(&self, fixture: &WorldFixture) -> Arc<Setup> {
        Arc::new(Setup {
            crds: self.crds.clone(),
            spec: self.plugin.spec().clone(),
            plugin: self.plugin.name().to_owned(),
            config: fixture.config().to_string(),
        })
    }

    fn world(&self, input: &FixtureInput, start: &Start) -> Result<World, CheckError> {
        World::new(self.setup(&input.fixture), start).map_err(|source| CheckError::Fixture {
            path: input.path.clone(),
            source,
        })
    }

    fn check_fixture(
        &mut self,
        input: &FixtureInput,
        schema: Option<&SpecSchema>,
        pool: &ValuePool,
    ) -> Result<FixtureSummary, CheckError> {
        let reconciles_before = self.reconciles;
        let fixture = &input.fixture;
        let mut summary = FixtureSummary {
            fixture: input.path.clone(),
            ..FixtureSummary::default()
        };
        let kind = crate::plugin::Gvk::of_object(&fixture.primary);
        if kind.as_ref() != Some(&self.plugin.spec().primary) {
            return Err(CheckError::Fixture {
                path: input.path.clone(),
                source: WorldError::Mismatch(format!(
                    "the fixture's primary is a {}, but the plugin reconciles {}",
                    kind.map_or_else(|| "kindless object".to_owned(), |kind| kind.to_string()),
                    self.plugin.spec().primary
                )),
            });
        }
        let spec = fixture.primary.get("spec").cloned().unwrap_or(Value::Null);
        if let Some(schema) = schema {
            let problems = schema.problems(&spec);
            if !problems.is_empty() {
                return Err(CheckError::InvalidSpec {
                    path: input.path.clone(),
                    problems: problems.join("; "),
                });
            }
        }

        // The fixture's own world: settle it, then delete it if the plugin has a finalizer.
        let start = Start {
            primary: fixture.primary.clone(),
            children: fixture.children.clone(),
            objects: fixture.objects.clone(),
            deleting: fixture.deleting,
            attempt: fixture.attempt,
        };
        let context = Context {
            fixture: input.path.clone(),
            place: "the fixture's world".into(),
            sequence: None,
        };
        let mut world = self.world(input, &start)?;
        let settled = self.settle(&mut world, &context);
        summary.settled_after = self.judge_stability(&settled, &context, fixture.deleting);
        if !fixture.deleting && matches!(settled.end, Settle::Quiet { .. }) && self.plugin.spec().finalizer.is_some() {
            world.delete_primary();
            let context = Context {
                place: "the fixture's world, deleted".into(),
                ..context.clone()
            };
            let cleanup = self.settle(&mut world, &context);
            if !matches!(cleanup.end, Settle::Gone) {
                self.cleanup_finding(&cleanup, &context);
            }
        }

        // Mutation, from a fresh apply of the fixture's spec.
        let Some(schema) = schema else {
            summary.mutation_skipped = Some("no CRD for the primary's kind".into());
            summary.reconciles = self.reconciles - reconciles_before;
            return Ok(summary);
        };
        if fixture.deleting {
            summary.mutation_skipped = Some("the fixture's primary is being deleted".into());
            summary.reconciles = self.reconciles - reconciles_before;
            return Ok(summary);
        }
        let (mut base, base_settled) = self.fresh_world(input, &spec)?;
        let base_context = Context {
            fixture: input.path.clone(),
            place: "a fresh apply of the fixture's spec, deleted".into(),
            sequence: None,
        };
        self.finish(&mut base, &base_context);
        if !matches!(base_settled.end, Settle::Quiet { .. }) {
            summary.mutation_skipped = Some(format!(
                "a fresh apply of the fixture's spec does not settle ({})",
                describe_end(&base_settled.end)
            ));
            summary.reconciles = self.reconciles - reconciles_before;
            return Ok(summary);
        }

        let singles = schema.valid_mutations(&spec, pool);
        summary.single_sequences = singles.len();
        let mut sequences: Vec<(usize, &'static str, Vec<Mutation>)> = singles
            .into_iter()
            .enumerate()
            .map(|(index, mutation)| (index + 1, "single", vec![mutation]))
            .collect();
        let fixture_word = input
            .path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        for _ in 0..self.options.random_sequences {
            let id = sequences.len() + 1;
            let mut generator = SplitMix64::new(self.options.seed, &[&fixture_word, &id.to_string()]);
            let mut current = spec.clone();
            let mut steps = Vec::new();
            for _ in 0..self.options.steps {
                let candidates = schema.valid_mutations(&current, pool);
                if candidates.is_empty() {
                    break;
                }
                let mutation = candidates[generator.below(candidates.len())].clone();
                current = mutation.apply_to(&current);
                steps.push(mutation);
            }
            sequences.push((id, "random", steps));
        }
        summary.random_sequences = self.options.random_sequences;
        for (id, origin, steps) in &sequences {
            if self.options.only_sequence.is_some_and(|only| only != *id) {
                continue;
            }
            let record = SequenceRecord {
                id: *id,
                origin,
                steps: steps.iter().map(ToString::to_string).collect(),
                mutations: steps.clone(),
            };
            summary.rejected_steps += self.run_sequence(input, &spec, record)?;
        }

        let invalid = schema.invalid_mutations(&spec);
        let first_invalid = sequences.len() + 1;
        for (offset, mutation) in invalid.into_iter().enumerate() {
            let id = first_invalid + offset;
            if self.options.only_sequence.is_some_and(|only| only != id) {
                continue;
            }
            summary.invalid_specs += 1;
            let record = SequenceRecord {
                id,
                origin: "invalid",
                steps: vec![mutation.to_string(), "revert to the fixture's spec".into()],
                mutations: vec![mutation.clone()],
            };
            if self.run_invalid(input, &spec, &mutation, record)? {
                summary.refused_by_the_api_server += 1;
            }
        }
        summary.reconciles = self.reconciles - reconciles_before;
        Ok(summary)
    }

    /// Reports what a settled fixture world says about stability; the reconciles it took when it settled.
    fn judge_stability(&mut self, settled: &Settled, context: &Context, deleting: bool) -> Option<usize> {
        match &settled.end {
            Settle::Quiet { requeue, idle_writes } => {
                if deleting {
                    self.cleanup_finding(settled, context);
                    return None;
                }
                self.judge_quiet(*requeue, idle_writes, context);
                Some(settled.rounds)
            }
            Settle::Gone => Some(settled.rounds),
            Settle::Failing(error) => {
                self.add(
                    FindingKind::Failing,
                    context,
                    "the plugin fails on a world its fixture calls valid".into(),
                    vec![error.clone()],
                );
                None
            }
            Settle::Refused(refusal) => {
                self.refused_finding(refusal, context);
                None
            }
            Settle::NotSettled(changes) => {
                self.add(
                    FindingKind::NotSettled,
                    context,
                    format!(
                        "the world still changes after {} reconciles (each reconcile undoes or redoes something)",
                        settled.rounds
                    ),
                    changes.clone(),
                );
                None
            }
        }
    }

    fn judge_quiet(&mut self, requeue: Option<Duration>, idle_writes: &[String], context: &Context) {
        if let Some(delay) = requeue
            && delay < self.options.min_idle_requeue
        {
            self.add(
                FindingKind::RequeueChurn,
                context,
                format!(
                    "a settled state asks for a requeue after {} ms, though nothing is left to do",
                    delay.as_millis()
                ),
                vec![format!(
                    "requeue only while work remains; poll an outside system with describe().resync or a requeue of \
                     at least {} s",
                    self.options.min_idle_requeue.as_secs()
                )],
            );
        }
        if !idle_writes.is_empty() {
            self.add(
                FindingKind::IdleWrites,
                context,
                "a settled state still makes the host write on every reconcile".into(),
                idle_writes.to_vec(),
            );
        }
    }

    fn refused_finding(&mut self, refusal: &str, context: &Context) {
        self.add(
            FindingKind::Refused,
            context,
            "what the plugin asks for cannot be written".into(),
            vec![refusal.to_owned()],
        );
    }

    fn cleanup_finding(&mut self, settled: &Settled, context: &Context) {
        let why = match &settled.end {
            Settle::Quiet { requeue: None, .. } => {
                "the plugin answers without finalized() and without a requeue, and nothing changes, so the object \
                 keeps its finalizer forever"
                    .to_owned()
            }
            other => describe_end(other),
        };
        self.add(
            FindingKind::Cleanup,
            context,
            "the deleted primary is never finalized".into(),
            vec![why],
        );
    }

    /// A world holding a fresh apply of `spec` (no children, no status), settled.
    fn fresh_world(&mut self, input: &FixtureInput, spec: &Value) -> Result<(World, Settled), CheckError> {
        let mut primary = input.fixture.primary.clone();
        primary["spec"] = spec.clone();
        if let Some(fields) = primary.as_object_mut() {
            fields.remove("status");
        }
        let start = Start {
            primary,
            children: Vec::new(),
            objects: input.fixture.objects.clone(),
            deleting: false,
            attempt: 0,
        };
        let mut world = self.world(input, &start)?;
        let context = Context {
            fixture: input.path.clone(),
            place: format!("a fresh apply of spec {}", compare::short(spec)),
            sequence: None,
        };
        let settled = self.settle(&mut world, &context);
        Ok((world, settled))
    }

    /// The end state of a fresh apply of `spec`, computed once per fixture and spec.
    fn fresh_end(&mut self, input: &FixtureInput, spec: &Value) -> Result<EndState, CheckError> {
        let key = (input.path.clone(), spec.to_string());
        if let Some(end) = self.fresh.get(&key) {
            return Ok(end.clone());
        }
        let (mut world, _) = self.fresh_world(input, spec)?;
        let end = end_state(&world);
        self.fresh.insert(key, end.clone());
        let context = Context {
            fixture: input.path.clone(),
            place: format!("a fresh apply of spec {}, deleted", compare::short(spec)),
            sequence: None,
        };
        self.finish(&mut world, &context);
        Ok(end)
    }

    /// With the plugin's finalizer: deletes the world's primary and reconciles until it is gone, which also cleans
    /// up what a plugin keeps outside the cluster; a cleanup finding when it does not go.
    fn finish(&mut self, world: &mut World, context: &Context) {
        if self.plugin.spec().finalizer.is_none() || world.primary().is_none() {
            return;
        }
        world.delete_primary();
        let settled = self.settle(world, context);
        if !matches!(settled.end, Settle::Gone) {
            self.cleanup_finding(&settled, context);
        }
    }

    /// Runs one sequence from a fresh apply of the fixture's spec and compares where it ends with a fresh apply of
    /// its last spec; a step the plugin rejects is reverted and must return the world to where it was. Returns the
    /// number of rejected steps.
    fn run_sequence(
        &mut self,
        input: &FixtureInput,
        base: &Value,
        record: SequenceRecord,
    ) -> Result<usize, CheckError> {
        let (mut world, _) = self.fresh_world(input, base)?;
        let mut current = base.clone();
        let mut notes = Vec::new();
        let mut rejected = 0;
        for (index, mutation) in record.mutations.iter().enumerate() {
            let step = index + 1;
            let context = Context {
                fixture: input.path.clone(),
                place: format!("sequence {} ({}), step {step}", record.id, record.origin),
                sequence: Some(record.clone()),
            };
            let before = end_state(&world);
            let next = mutation.apply_to(&current);
            if let Err(message) = world.update_spec(&next) {
                notes.push(format!("step {step} refused by the API server: {message}"));
                continue;
            }
            let settled = self.settle(&mut world, &context);
            if settled.left_children_alone {
                notes.push(format!(
                    "after step {step} ({mutation}) the plugin answered \"leave children alone\" (no desired set), \
                     so the host kept the children it had"
                ));
            }
            match &settled.end {
                Settle::Quiet { requeue, idle_writes } => {
                    self.judge_quiet(*requeue, idle_writes, &context);
                    current = next;
                }
                Settle::Failing(error) => {
                    rejected += 1;
                    notes.push(format!("step {step} rejected by the plugin: {error}; reverted"));
                    self.revert_and_compare(&mut world, &current, &before, &context, error)?;
                    break;
                }
                Settle::Refused(refusal) => {
                    self.refused_finding(refusal, &context);
                    notes.push(format!("step {step}: {refusal}; reverted"));
                    self.revert_and_compare(&mut world, &current, &before, &context, refusal)?;
                    break;
                }
                Settle::NotSettled(changes) => {
                    self.add(
                        FindingKind::NotSettled,
                        &context,
                        format!("the world still changes {} reconciles after the step", settled.rounds),
                        changes.clone(),
                    );
                    return Ok(rejected);
                }
                Settle::Gone => return Ok(rejected),
            }
        }
        let ended = end_state(&world);
        let fresh = self.fresh_end(input, &current)?;
        let differences = ended.differences(&fresh, "the sequence", "a fresh apply");
        if !differences.is_empty() {
            let context = Context {
                fixture: input.path.clone(),
                place: format!("sequence {} ({})", record.id, record.origin),
                sequence: Some(record.clone()),
            };
            let mut details = differences;
            details.extend(notes);
            self.add(
                FindingKind::Differential,
                &context,
                "the sequence ends elsewhere than a fresh apply of its last spec".into(),
                details,
            );
        }
        let context = Context {
            fixture: input.path.clone(),
            place: format!("sequence {} ({}), deleted at its end", record.id, record.origin),
            sequence: Some(record),
        };
        self.finish(&mut world, &context);
        Ok(rejected)
    }

    /// From a fresh apply of the fixture's spec: a spec the schema refuses, first through the API server (which
    /// should refuse it), then stored past validation and reconciled, then the revert. Returns whether the API
    /// server refused it.
    fn run_invalid(
        &mut self,
        input: &FixtureInput,
        base: &Value,
        mutation: &Mutation,
        record: SequenceRecord,
    ) -> Result<bool, CheckError> {
        let (mut world, _) = self.fresh_world(input, base)?;
        let before = end_state(&world);
        let invalid = mutation.apply_to(base);
        let context = Context {
            fixture: input.path.clone(),
            place: format!("sequence {} (invalid spec, stored past validation)", record.id),
            sequence: Some(record),
        };
        let refused = world.update_spec(&invalid).is_err();
        if refused {
            world.force_spec(&invalid);
        }
        let settled = self.settle(&mut world, &context);
        let outcome = match &settled.end {
            Settle::Failing(error) | Settle::Refused(error) => error.clone(),
            Settle::NotSettled(changes) => {
                self.add(
                    FindingKind::NotSettled,
                    &context,
                    format!(
                        "the world still changes {} reconciles after the invalid spec",
                        settled.rounds
                    ),
                    changes.clone(),
                );
                return Ok(refused);
            }
            _ => "the plugin accepted it".into(),
        };
        self.revert_and_compare(&mut world, base, &before, &context, &outcome)?;
        let context = Context {
            place: format!("{}, deleted after the revert", context.place),
            ..context
        };
        self.finish(&mut world, &context);
        Ok(refused)
    }

    /// Reverts the spec to `spec`, settles, and reports a recovery finding when the world is not back at `before`.
    fn revert_and_compare(
        &mut self,
        world: &mut World,
        spec: &Value,
        before: &EndState,
        context: &Context,
        what_happened: &str,
    ) -> Result<(), CheckError> {
        if let Err(message) = world.update_spec(spec) {
            world.force_spec(spec);
            tracing::debug!(%message, "reverting through the API server failed; stored directly");
        }
        let context = Context {
            place: format!("{}, reverted", context.place),
            ..context.clone()
        };
        let settled = self.settle(world, &context);
        let after = end_state(world);
        let differences = after.differences(before, "after the revert", "before");
        if !differences.is_empty() || !matches!(settled.end, Settle::Quiet { .. }) {
            let mut details = vec![format!("with the invalid spec: {what_happened}")];
            if !matches!(settled.end, Settle::Quiet { .. }) {
                details.push(format!("after the revert: {}", describe_end(&settled.end)));
            }
            details.extend(differences);
            self.add(
                FindingKind::Recovery,
                &context,
                "reverting to the previous spec does not return the world to where it was".into(),
                details,
            );
        }
        Ok(())
    }

    /// Reconciles `world` until a reconcile changes nothing, the primary is gone, or `max_rounds` reconciles ran;
    /// every view is reconciled twice (determinism), and crashes are reported.
    fn settle(&mut self, world: &mut World, context: &Context) -> Settled {
        let owns_kinds = !self.plugin.spec().owns.is_empty();
        let mut left_children_alone = false;
        let mut last_changes = Vec::new();
        for round in 1..=self.options.max_rounds {
            if world.prepare().is_none() {
                return Settled {
                    end: Settle::Gone,
                    rounds: round - 1,
                    left_children_alone,
                };
            }
            let Some((view, reader)) = world.view() else {
                return Settled {
                    end: Settle::Gone,
                    rounds: round - 1,
                    left_children_alone,
                };
            };
            // A contract 0.2 plugin may change the outside world while it reconciles (its `writes` counter says
            // so): then the second call meets another world than the first, and determinism is judged on a second
            // and a third call, both after the change. A second call that writes again is idle writing.
            let writes = || self.plugin.grants().counters.writes.get();
            let before = writes();
            let first = self.plugin.reconcile(view.clone(), reader.clone());
            let wrote_outside = writes() > before;
            let between = writes();
            let second = self.plugin.reconcile(view.clone(), reader.clone());
            self.reconciles += 1;
            if wrote_outside {
                let rewrites = writes() - between;
                let third = self.plugin.reconcile(view, reader);
                self.judge_determinism(&second, &third, context);
                if rewrites > 0 {
                    self.add(
                        FindingKind::IdleWrites,
                        context,
                        "the plugin writes to the outside again when reconciling what it just wrote".into(),
                        vec![format!(
                            "{rewrites} request(s) with a method that changes something, on a reconcile of the \
                             same view right after the one that made the change"
                        )],
                    );
                }
            } else {
                self.judge_determinism(&first, &second, context);
            }
            self.judge_crash(&first, context);
            if let Ok(outcome) = &first
                && outcome.children.is_none()
                && owns_kinds
            {
                left_children_alone = true;
            }
            let Applied {
                changes,
                idle_writes,
                refused,
            } = world.apply(&first);
            if changes.is_empty() && !wrote_outside {
                let end = match (&first, refused) {
                    (Err(error), _) => Settle::Failing(crate::error_chain(error)),
                    (Ok(_), Some(refused)) => Settle::Refused(refused),
                    (Ok(outcome), None) => Settle::Quiet {
                        requeue: outcome.requeue_after,
                        idle_writes,
                    },
                };
                return Settled {
                    end,
                    rounds: round,
                    left_children_alone,
                };
            }
            last_changes = changes;
            if wrote_outside {
                last_changes.push("the plugin sent requests that change the outside world".into());
            }
        }
        Settled {
            end: Settle::NotSettled(last_changes),
            rounds: self.options.max_rounds,
            left_children_alone,
        }
    }

    fn judge_determinism(
        &mut self,
        first: &Result<Outcome, ReconcileError>,
        second: &Result<Outcome, ReconcileError>,
        context: &Context,
    ) {
        let text = |result: &Result<Outcome, ReconcileError>| match result {
            Ok(outcome) => serde_json::to_value(outcome).unwrap_or(Value::Null),
            Err(error) => Value::String(format!("error: {}", crate::error_chain(error))),
        };
        let (first, second) = (text(first), text(second));
        // Byte for byte: two JSON trees with the same entries in another order are equal as values, not as text.
        let (first_bytes, second_bytes) = (first.to_string(), second.to_string());
        if first_bytes != second_bytes {
            let mut details = value_differences(&first, &second);
            if details.is_empty() {
                details.push("the same values in another order (object keys or list items)".into());
            }
            details.truncate(12);
            self.add(
                FindingKind::Nondeterministic,
                context,
                "the same view gave two different outcomes".into(),
                details
                    .into_iter()
                    .map(|line| format!("outcome{line} (first vs second call)"))
                    .collect(),
            );
        }
    }

    fn judge_crash(&mut self, result: &Result<Outcome, ReconcileError>, context: &Context) {
        if let Err(error) = result
            && !matches!(error, ReconcileError::Plugin(_))
        {
            self.add(
                FindingKind::Crash,
                context,
                format!("the plugin did not answer: {}", error.reason()),
                vec![crate::error_chain(error)],
            );
        }
    }

    /// Records a finding, or counts it again when the same kind, summary and details came up before for the fixture
    /// (the first occurrence, with its sequence, is kept).
    fn add(&mut self, kind: FindingKind, context: &Context, summary: String, details: Vec<String>) {
        // Two outcomes of one view differ in other details each time: one finding per fixture says it all.
        let same_details = kind == FindingKind::Nondeterministic;
        if let Some(existing) = self.findings.iter_mut().find(|finding| {
            finding.kind == kind
                && finding.fixture == context.fixture
                && finding.summary == summary
                && (same_details || finding.details == details)
        }) {
            existing.occurrences += 1;
            return;
        }
        self.findings.push(Finding {
            kind,
            fixture: context.fixture.clone(),
            context: context.place.clone(),
            sequence: context.sequence.clone(),
            summary,
            details,
            replay: String::new(),
            occurrences: 1,
        });
    }
}

fn end_state(world: &World) -> EndState {
    EndState::of(world.primary().as_ref(), &world.children())
}

fn describe_end(end: &Settle) -> String {
    match end {
        Settle::Quiet {
            requeue: Some(delay), ..
        } => format!("settled, asking for a requeue after {} ms", delay.as_millis()),
        Settle::Quiet { requeue: None, .. } => "settled".into(),
        Settle::Gone => "the primary is gone".into(),
        Settle::Failing(error) => format!("the plugin fails: {error}"),
        Settle::Refused(refusal) => format!("the outcome is refused: {refusal}"),
        Settle::NotSettled(changes) => format!("still changing ({})", changes.join("; ")),
    }
}

impl Report {
    /// The report as text: a line per fixture, then each finding with the sequence that reproduces it.
    pub fn text(&self, plugin: &str) -> String {
        let mut text = format!("plugin check {plugin}: {} (seed {})\n", self.primary, self.seed);
        for summary in &self.fixtures {
            text.push_str(&format!("  {}: ", summary.fixture.display()));
            match summary.settled_after {
                Some(rounds) => text.push_str(&format!("settled after {rounds} reconcile(s)")),
                None => text.push_str("did not settle"),
            }
            match &summary.mutation_skipped {
                Some(why) => text.push_str(&format!("; no mutation ({why})")),
                None => text.push_str(&format!(
                    "; {} single-mutation and {} random sequences ({} step(s) rejected by the plugin and reverted); \
                     {} invalid specs ({} refused by the API server, all stored past validation and reverted)",
                    summary.single_sequences,
                    summary.random_sequences,
                    summary.rejected_steps,
                    summary.invalid_specs,
                    summary.refused_by_the_api_server
                )),
            }
            text.push_str(&format!("; {} reconciles, each twice\n", summary.reconciles));
        }
        if self.findings.is_empty() {
            text.push_str("no findings\n");
            return text;
        }
        text.push_str(&format!("{} finding(s):\n", self.findings.len()));
        for (index, finding) in self.findings.iter().enumerate() {
            text.push_str(&format!(
                "\n{}. [{}] {}: {}\n   in {}{}\n",
                index + 1,
                finding.kind.label(),
                finding.fixture.display(),
                finding.summary,
                finding.context,
                if finding.occurrences > 1 {
                    format!(" (and {} more time(s))", finding.occurrences - 1)
                } else {
                    String::new()
                }
            ));
            if let Some(sequence) = &finding.sequence {
                for (number, step) in sequence.steps.iter().enumerate() {
                    text.push_str(&format!("   step {}: {step}\n", number + 1));
                }
            }
            for detail in &finding.details {
                text.push_str(&format!("   - {detail}\n"));
            }
            if !finding.replay.is_empty() {
                text.push_str(&format!("   replay: {}\n", finding.replay));
            }
        }
        text
    }
}
