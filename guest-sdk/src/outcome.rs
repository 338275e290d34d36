//! The plugin's answer: desired children, status, conditions, events, requeue and finalization.

use std::cell::OnceCell;
use std::marker::PhantomData;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::head::Head;
use crate::{Condition, Error, Event};

/// The desired state for one primary object, built with chained calls.
///
/// **Children: a complete set, or leave them alone — say which.** A plugin that owns kinds answers each
/// reconcile with one of two choices, and must make it explicitly:
///
/// - [`children`](Self::children) declares the *complete* desired set, also when it is empty: the host
///   applies every child in it and deletes every owned child not in it. [`child`](Self::child) adds one
///   child to that set, and [`delete_all_children`](Self::delete_all_children) declares it empty. Add
///   every child you want on every reconcile, not only the changed ones.
/// - [`leave_children_alone`](Self::leave_children_alone) leaves the observed children as they are.
///
/// The choice is checked by the compiler. [`Outcome::new`] is an `Outcome<Undecided>`; the calls above make it
/// an [`Outcome`] (`Outcome<Decided>`), which is what [`Reconciler::reconcile`](crate::Reconciler::reconcile)
/// returns. So an outcome that says nothing about children, on any path of the plugin, does not compile:
///
/// ```compile_fail,E0308
/// use wasm_reconciler_sdk::{Error, Outcome, WorldView};
///
/// fn reconcile(view: WorldView) -> Result<Outcome, Error> {
///     // error[E0308]: expected `Outcome`, found `Outcome<Undecided>`
///     Ok(Outcome::new().status(&serde_json::json!({"name": view.name()})))
/// }
/// ```
///
/// Nor does a `child` loop (its outcome changes type on the first child, and the loop may run zero times,
/// which would declare nothing): build a set that comes from a loop with `children(iter)`, which declares the
/// set even when the iterator is empty. A plugin that owns no kind says `leave_children_alone()`: there are
/// none. Leaving children alone after declaring some does not compile either; declaring children after
/// leaving them alone is a build error, returned when the outcome is handed to the host.
///
/// k8s-openapi types serialise their `apiVersion` and `kind`; for your own serde types set them yourself.
/// A child must be a JSON object with `apiVersion`, `kind` and `metadata.name`; the host fills in the
/// namespace and the ownerReference.
///
/// Serialisation errors do not break the chain: the first one is kept and returned when the outcome is
/// handed to the host, which then records a plugin error.
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use serde_json::json;
/// use wasm_reconciler_sdk::{Condition, Event, Outcome};
///
/// let config_map = ConfigMap {
///     metadata: ObjectMeta { name: Some("app-config".into()), ..ObjectMeta::default() },
///     ..ConfigMap::default()
/// };
/// let outcome = Outcome::new()
///     .child(&config_map)
///     .status(&json!({"replicas": 1}))
///     .condition(Condition::status_true("Ready", "Synced", "all children applied"))
///     .event(Event::normal("Created", "created ConfigMap app-config"))
///     .requeue_after(Duration::from_secs(30));
///
/// let children = outcome.desired_children().unwrap();
/// assert_eq!(children[0]["kind"], "ConfigMap");
/// assert_eq!(outcome.requeue_interval(), Some(Duration::from_secs(30)));
///
/// // Scaling to zero: `children` declares the empty set, so the host deletes every owned child.
/// let replicas: Vec<ConfigMap> = Vec::new();
/// assert_eq!(Outcome::new().children(&replicas).desired_children(), Some(&[][..]));
/// // Waiting for something: say explicitly that the observed children stay.
/// let waiting = Outcome::new().leave_children_alone();
/// assert!(waiting.leaves_children_alone() && waiting.desired_children().is_none());
/// ```
#[derive(Debug, Clone)]
pub struct Outcome<Children = Decided> {
    /// Each desired child as handed to the host: whole JSON text, or a base and a merge patch.
    children: Option<Vec<DesiredChild>>,
    /// JSON text of the objects children are made from with [`child_from_base`](Self::child_from_base).
    bases: Vec<String>,
    /// Whether [`leave_children_alone`](Self::leave_children_alone) was called.
    leave_children_alone: bool,
    /// The status as JSON text.
    status: Option<String>,
    conditions: Vec<Condition>,
    events: Vec<Event>,
    requeue_after_ms: Option<u64>,
    finalized: bool,
    first_error: Option<Error>,
    /// JSON trees of the children and the status, built on first use of the accessors (tests read them).
    children_json: OnceCell<Option<Vec<Value>>>,
    status_json: OnceCell<Option<Value>>,
    choice: PhantomData<fn() -> Children>,
}

/// The state of an [`Outcome`] that has not yet said what to do with children: what [`Outcome::new`] makes.
/// It cannot be returned from [`Reconciler::reconcile`](crate::Reconciler::reconcile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undecided {}

/// The state of an [`Outcome`] that declared its children or leaves them alone: what
/// [`Reconciler::reconcile`](crate::Reconciler::reconcile) returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {}

impl Default for Outcome<Undecided> {
    fn default() -> Self {
        Self::new()
    }
}

/// Two outcomes are equal when they hand the host the same answer.
impl<Children> PartialEq for Outcome<Children> {
    fn eq(&self, other: &Self) -> bool {
        self.children == other.children
            && self.bases == other.bases
            && self.leave_children_alone == other.leave_children_alone
            && self.status == other.status
            && self.conditions == other.conditions
            && self.events == other.events
            && self.requeue_after_ms == other.requeue_after_ms
            && self.finalized == other.finalized
            && self.first_error == other.first_error
    }
}

impl Outcome<Undecided> {
    /// An outcome that reports nothing and has not yet said what to do with children: call
    /// [`children`](Self::children) (or [`child`](Self::child)) or
    /// [`leave_children_alone`](Self::leave_children_alone) before returning it.
    pub fn new() -> Self {
        Self {
            children: None,
            bases: Vec::new(),
            leave_children_alone: false,
            status: None,
            conditions: Vec::new(),
            events: Vec::new(),
            requeue_after_ms: None,
            finalized: false,
            first_error: None,
            children_json: OnceCell::new(),
            status_json: OnceCell::new(),
            choice: PhantomData,
        }
    }

    /// Leaves the observed children as they are: nothing is applied and nothing is deleted (the host still
    /// writes the status, conditions and events of this outcome). Only an outcome that declared no children
    /// can leave them alone.
    pub fn leave_children_alone(self) -> Outcome {
        let mut outcome = self.decide();
        outcome.leave_children_alone = true;
        outcome
    }
}

impl<Children> Outcome<Children> {
    /// The same outcome, having said what to do with children.
    fn decide(self) -> Outcome {
        Outcome {
            children: self.children,
            bases: self.bases,
            leave_children_alone: self.leave_children_alone,
            status: self.status,
            conditions: self.conditions,
            events: self.events,
            requeue_after_ms: self.requeue_after_ms,
            finalized: self.finalized,
            first_error: self.first_error,
            children_json: self.children_json,
            status_json: self.status_json,
            choice: PhantomData,
        }
    }

    /// Adds one desired child (any serialisable Kubernetes object) to the complete desired set.
    ///
    /// The child is serialised to JSON text here, once; the host parses that text. For children built in a
    /// loop, prefer [`children`](Self::children): a loop of `child` calls that runs zero times declares
    /// nothing.
    pub fn child(self, child: &impl Serialize) -> Outcome {
        let mut this = self.decide();
        this.check_not_left_alone();
        let position = this.children.as_ref().map_or(0, Vec::len);
        let child = serde_json::to_string(child)
            .map_err(Error::from)
            .and_then(|text| check_child(&text).map(|()| text))
            .map_err(|error| error.context(format_args!("desired child #{position}")));
        this.children_json = OnceCell::new();
        match child {
            Ok(child) => this
                .children
                .get_or_insert_with(Vec::new)
                .push(DesiredChild::Whole(child)),
            Err(error) => {
                this.children.get_or_insert_with(Vec::new);
                this.record(error);
            }
        }
        this
    }

    /// Declares the complete desired set of children (owned or borrowed: `&Vec<ConfigMap>`,
    /// `iter().map(build)`, ...), adding to children already added. Declares the set even when `children` is
    /// empty, which deletes every owned child.
    pub fn children<I>(self, children: I) -> Outcome
    where
        I: IntoIterator,
        I::Item: Serialize,
    {
        let mut this = self.decide();
        this.check_not_left_alone();
        this.children.get_or_insert_with(Vec::new);
        this.children_json = OnceCell::new();
        children.into_iter().fold(this, |outcome, child| outcome.child(&child))
    }

    /// Adds a base: an object (typically a template of several children) that children are made from with
    /// [`child_from_base`](Self::child_from_base). Bases are numbered from 0 in the order added; a base is not a
    /// child itself.
    ///
    /// A contract 0.3 plugin hands the host each base once and each child as its small patch, instead of every
    /// child whole; under 0.1 and 0.2 the SDK makes the children itself, with the same result.
    pub fn base(mut self, base: &(impl Serialize + ?Sized)) -> Self {
        let position = self.bases.len();
        match serde_json::to_string(base) {
            Ok(text) if text.starts_with('{') => self.bases.push(text),
            Ok(text) => {
                self.bases.push("{}".to_owned());
                self.record(Error::msg(format_args!(
                    "base {position}: must be a JSON object, got {text}"
                )));
            }
            Err(error) => {
                self.bases.push("{}".to_owned());
                self.record(Error::from(error).context(format_args!("base {position}")));
            }
        }
        self
    }

    /// Adds one desired child: a copy of base number `base` (see [`base`](Self::base)) with the JSON merge patch
    /// `merge_patch` applied (RFC 7386: object fields replace, or remove when `null`). The resulting object needs
    /// an `apiVersion`, a `kind` and a `metadata.name`, as every child does.
    ///
    /// ```
    /// use serde_json::json;
    /// use wasm_reconciler_sdk::Outcome;
    ///
    /// let template = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}});
    /// let outcome = Outcome::new()
    ///     .base(&template)
    ///     .child_from_base(0, &json!({"metadata": {"name": "web-0"}}))
    ///     .child_from_base(0, &json!({"metadata": {"name": "web-1"}, "data": {"b": "2"}}));
    /// let children = outcome.desired_children().unwrap();
    /// assert_eq!(children[0], json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-0"},
    ///     "data": {"a": "1"}}));
    /// assert_eq!(children[1]["data"], json!({"a": "1", "b": "2"}));
    /// ```
    pub fn child_from_base(self, base: usize, merge_patch: &(impl Serialize + ?Sized)) -> Outcome {
        let mut this = self.decide();
        this.check_not_left_alone();
        let position = this.children.as_ref().map_or(0, Vec::len);
        this.children_json = OnceCell::new();
        let children = this.children.get_or_insert_with(Vec::new);
        if base >= this.bases.len() {
            let error = Error::msg(format_args!(
                "desired child #{position}: base {base} was not added (the outcome has {} bases)",
                this.bases.len()
            ));
            this.record(error);
            return this;
        }
        match serde_json::to_string(merge_patch) {
            Ok(patch) => children.push(DesiredChild::Patched { base, patch }),
            Err(error) => this.record(Error::from(error).context(format_args!("desired child #{position}"))),
        }
        this
    }

    /// Adds one desired child: a copy of base number `base` (see [`base`](Self::base)) named `name`.
    pub fn child_from_base_named(self, base: usize, name: &str) -> Outcome {
        self.child_from_base(base, &NamePatch::new(name))
    }

    /// Adds `base` (see [`base`](Self::base)) and one desired child per name: a copy of it with that
    /// `metadata.name`. Declares the set, as [`children`](Self::children) does, even when `names` is empty.
    pub fn children_named_from<N: AsRef<str>>(
        self,
        base: &(impl Serialize + ?Sized),
        names: impl IntoIterator<Item = N>,
    ) -> Outcome {
        let mut this = self.decide();
        this.check_not_left_alone();
        this.children.get_or_insert_with(Vec::new);
        let index = this.bases.len();
        let mut outcome = this.base(base);
        for name in names {
            outcome = outcome.child_from_base(index, &NamePatch::new(name.as_ref()));
        }
        outcome
    }

    /// Declares an empty desired set: the host deletes every owned child. Children added before are dropped.
    pub fn delete_all_children(self) -> Outcome {
        let mut this = self.decide();
        this.check_not_left_alone();
        this.children = Some(Vec::new());
        this.children_json = OnceCell::new();
        this
    }

    /// Sets the status to merge into `.status` (a serialisable struct or JSON object; top-level keys
    /// replace). Do not put `conditions` or `observedGeneration` here: the host owns those.
    pub fn status(mut self, status: &impl Serialize) -> Self {
        let status = serde_json::to_string(status).map_err(Error::from).and_then(|status| {
            if status.starts_with('{') {
                Ok(status)
            } else {
                Err(Error::msg(format_args!("must be a JSON object, got {status}")))
            }
        });
        self.status_json = OnceCell::new();
        match status {
            Ok(status) => self.status = Some(status),
            Err(error) => self.record(error.context("status")),
        }
        self
    }

    /// Adds a condition to merge into `.status.conditions`.
    pub fn condition(mut self, condition: Condition) -> Self {
        self.conditions.push(condition);
        self
    }

    /// Adds an event to record on the primary.
    pub fn event(mut self, event: Event) -> Self {
        self.events.push(event);
        self
    }

    /// Asks to reconcile this primary again after `delay` (millisecond precision), even with no change.
    pub fn requeue_after(mut self, delay: Duration) -> Self {
        self.requeue_after_ms = Some(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Declares cleanup complete: with a deleting view, the host removes the finalizer.
    pub fn finalized(mut self) -> Self {
        self.finalized = true;
        self
    }

    /// The desired children as JSON (built on first use); `None` when the outcome leaves children alone or
    /// has not said.
    pub fn desired_children(&self) -> Option<&[Value]> {
        self.children_json
            .get_or_init(|| {
                let children = self.children.as_ref()?;
                let bases: Vec<Value> = self.bases.iter().map(|text| parse_own(text)).collect();
                Some(
                    children
                        .iter()
                        .map(|child| match child {
                            DesiredChild::Whole(text) => parse_own(text),
                            DesiredChild::Patched { base, patch } => {
                                let mut child = bases[*base].clone();
                                wasm_reconciler_contract::json::merge_patch(&mut child, &parse_own(patch));
                                child
                            }
                        })
                        .collect(),
                )
            })
            .as_deref()
    }

    /// Whether [`leave_children_alone`](Self::leave_children_alone) was called.
    pub fn leaves_children_alone(&self) -> bool {
        self.leave_children_alone
    }

    /// The status to merge as JSON (built on first use), if any.
    pub fn desired_status(&self) -> Option<&Value> {
        self.status_json
            .get_or_init(|| self.status.as_deref().map(parse_own))
            .as_ref()
    }

    /// The conditions, in the order added.
    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    /// The condition of a type, if added (the last one wins when added twice).
    pub fn condition_of_type(&self, condition_type: &str) -> Option<&Condition> {
        self.conditions
            .iter()
            .rev()
            .find(|condition| condition.condition_type == condition_type)
    }

    /// The events, in the order added.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The requested requeue delay, if any.
    pub fn requeue_interval(&self) -> Option<Duration> {
        self.requeue_after_ms.map(Duration::from_millis)
    }

    /// Whether cleanup was declared complete.
    pub fn is_finalized(&self) -> bool {
        self.finalized
    }

    /// The first error met while building the outcome, if any.
    pub fn build_error(&self) -> Option<&Error> {
        self.first_error.as_ref()
    }

    fn record(&mut self, error: Error) {
        self.first_error.get_or_insert(error);
    }

    fn check_not_left_alone(&mut self) {
        if self.leave_children_alone {
            self.record(Error::msg(BOTH_CHOICES));
        }
    }
}

impl Outcome {
    /// The parts handed to the host, or the first build error.
    pub(crate) fn into_parts(self) -> Result<OutcomeParts, Error> {
        if let Some(error) = self.first_error {
            return Err(error.context("building the outcome"));
        }
        Ok(OutcomeParts {
            children: self.children,
            bases: self.bases,
            status: self.status,
            conditions: self.conditions,
            events: self.events,
            requeue_after_ms: self.requeue_after_ms,
            finalized: self.finalized,
        })
    }
}

/// The build error of an outcome that leaves children alone and then declares some.
const BOTH_CHOICES: &str = "the outcome both declares desired children and leaves children alone: choose one";

/// One desired child as the plugin built it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DesiredChild {
    /// Whole JSON text, checked.
    Whole(String),
    /// Base number `base` with the JSON merge patch `patch`.
    Patched { base: usize, patch: String },
}

/// `{"metadata":{"name":…}}`.
#[derive(Serialize)]
struct NamePatch<'a> {
    metadata: NameOnly<'a>,
}

#[derive(Serialize)]
struct NameOnly<'a> {
    name: &'a str,
}

impl<'a> NamePatch<'a> {
    fn new(name: &'a str) -> Self {
        Self {
            metadata: NameOnly { name },
        }
    }
}

/// An outcome known to be free of build errors.
pub(crate) struct OutcomeParts {
    pub(crate) children: Option<Vec<DesiredChild>>,
    pub(crate) bases: Vec<String>,
    pub(crate) status: Option<String>,
    pub(crate) conditions: Vec<Condition>,
    pub(crate) events: Vec<Event>,
    pub(crate) requeue_after_ms: Option<u64>,
    pub(crate) finalized: bool,
}

impl OutcomeParts {
    /// Every child as whole JSON text (contract 0.1 and 0.2): patched children made from their bases here, and
    /// checked as whole children are.
    pub(crate) fn whole_children(&mut self) -> Result<Option<Vec<String>>, Error> {
        let Some(children) = self.children.take() else {
            return Ok(None);
        };
        children
            .into_iter()
            .enumerate()
            .map(|(position, child)| match child {
                DesiredChild::Whole(text) => Ok(text),
                DesiredChild::Patched { base, patch } => {
                    // On texts, so the component carries no JSON tree code for it.
                    wasm_reconciler_contract::json::merge_patch_text(&self.bases[base], &patch)
                        .map_err(|error| Error::from_json(&error))
                        .and_then(|text| check_child(&text).map(|()| text))
                        .map_err(|error| error.context(format_args!("desired child #{position}")))
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// Checks a serialised child: a JSON object with a non-empty `apiVersion`, `kind` and `metadata.name`.
fn check_child(text: &str) -> Result<(), Error> {
    if !text.starts_with('{') {
        return Err(Error::msg(format_args!("must be a JSON object, got {text}")));
    }
    let head = Head::read(text).map_err(|error| Error::from_json(&error))?;
    if head.api_version.as_deref().is_none_or(str::is_empty) {
        return Err(Error::msg("has no `apiVersion`"));
    }
    if head.kind.as_deref().is_none_or(str::is_empty) {
        return Err(Error::msg("has no `kind`"));
    }
    if head.name().is_none_or(str::is_empty) {
        return Err(Error::msg("has no `metadata.name`"));
    }
    Ok(())
}

/// A JSON tree of text this outcome serialised itself.
fn parse_own(text: &str) -> Value {
    // Cannot fail: the text came from `serde_json::to_string`. `null` stands in rather than a panic.
    serde_json::from_str(text).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ConditionStatus;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    #[test]
    fn children_from_a_base_are_whole_on_the_wire() {
        let template = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}});
        let outcome = Outcome::new()
            .children_named_from(&template, ["a", "b"])
            .child_from_base(0, &json!({"metadata": {"name": "c"}, "data": {"k": null}}));
        let mut parts = outcome.clone().into_parts().unwrap();
        assert_eq!(parts.bases.len(), 1);
        let whole = parts.whole_children().unwrap().unwrap();
        let whole: Vec<Value> = whole.iter().map(|text| serde_json::from_str(text).unwrap()).collect();
        assert_eq!(whole, outcome.desired_children().unwrap());
        assert_eq!(
            whole[1],
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
            "metadata": {"name": "b"}})
        );
        assert_eq!(
            whole[2],
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {}, "metadata": {"name": "c"}})
        );
        // No names: declares the empty set, as `children` does.
        assert_eq!(
            Outcome::new()
                .children_named_from(&template, Vec::<String>::new())
                .desired_children(),
            Some(&[][..])
        );
    }

    #[test]
    fn a_child_of_a_missing_or_unnamed_base_is_an_error() {
        let missing = Outcome::new().child_from_base_named(0, "a");
        assert_eq!(
            missing.build_error().unwrap().to_string(),
            "desired child #0: base 0 was not added (the outcome has 0 bases)"
        );
        let not_object = Outcome::new().base(&json!([1]));
        assert_eq!(
            not_object.build_error().unwrap().to_string(),
            "base 0: must be a JSON object, got [1]"
        );
        // A base without a kind makes children the host would refuse: caught where the SDK makes them.
        let mut parts = Outcome::new()
            .base(&json!({"apiVersion": "v1"}))
            .child_from_base_named(0, "a")
            .into_parts()
            .unwrap();
        assert_eq!(
            parts.whole_children().unwrap_err().to_string(),
            "desired child #0: has no `kind`"
        );
    }

    fn config_map(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn a_new_outcome_has_not_said_what_to_do_with_children() {
        let outcome = Outcome::new();
        assert_eq!(outcome.desired_children(), None);
        assert!(!outcome.leaves_children_alone());
        assert!(!outcome.is_finalized());
        assert_eq!(outcome.requeue_interval(), None);
    }

    #[test]
    fn each_choice_about_children_reaches_the_host() {
        let parts = Outcome::new().leave_children_alone().into_parts().ok().unwrap();
        assert_eq!(parts.children, None);
        let parts = Outcome::new()
            .children(Vec::<ConfigMap>::new())
            .into_parts()
            .ok()
            .unwrap();
        assert_eq!(parts.children, Some(Vec::new()));
        let parts = Outcome::new().delete_all_children().into_parts().ok().unwrap();
        assert_eq!(parts.children, Some(Vec::new()));
    }

    #[test]
    fn declaring_children_after_leaving_them_alone_is_a_build_error() {
        // The other order, children and then leave_children_alone(), does not compile.
        for outcome in [
            Outcome::new().leave_children_alone().child(&config_map("a")),
            Outcome::new().leave_children_alone().children(Vec::<ConfigMap>::new()),
            Outcome::new().leave_children_alone().delete_all_children(),
        ] {
            assert_eq!(outcome.build_error().map(Error::message), Some(BOTH_CHOICES));
        }
    }

    #[test]
    fn typed_children_carry_api_version_and_kind() {
        let outcome = Outcome::new().child(&config_map("a"));
        let children = outcome.desired_children().unwrap();
        assert_eq!(children[0]["apiVersion"], "v1");
        assert_eq!(children[0]["kind"], "ConfigMap");
        assert_eq!(children[0]["metadata"]["name"], "a");
    }

    #[test]
    fn empty_children_iterator_declares_an_empty_set() {
        let outcome = Outcome::new().children(Vec::<ConfigMap>::new());
        assert_eq!(outcome.desired_children(), Some(&[][..]));
        assert_eq!(Outcome::new().delete_all_children().desired_children(), Some(&[][..]));
    }

    #[test]
    fn children_keep_their_order() {
        let borrowed = [config_map("a")];
        let outcome = Outcome::new()
            .children(&borrowed)
            .children(["b"].map(config_map))
            .child(&config_map("c"));
        let names: Vec<_> = outcome
            .desired_children()
            .unwrap()
            .iter()
            .map(|child| child["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn child_without_kind_is_a_build_error() {
        let outcome = Outcome::new().child(&json!({"apiVersion": "v1", "metadata": {"name": "x"}}));
        let error = outcome.into_parts().err().unwrap();
        assert_eq!(error.message(), "building the outcome: desired child #0: has no `kind`");
    }

    #[test]
    fn child_without_name_is_a_build_error() {
        let outcome = Outcome::new().child(&config_map("a")).child(&ConfigMap::default());
        assert_eq!(
            outcome.build_error().unwrap().message(),
            "desired child #1: has no `metadata.name`"
        );
    }

    #[test]
    fn first_build_error_wins() {
        let outcome = Outcome::new().status(&json!(3)).child(&json!("x"));
        assert_eq!(
            outcome.build_error().unwrap().message(),
            "status: must be a JSON object, got 3"
        );
    }

    #[test]
    fn status_must_be_an_object() {
        let outcome = Outcome::new().status(&json!({"replicas": 2}));
        assert_eq!(outcome.desired_status(), Some(&json!({"replicas": 2})));
        assert!(outcome.build_error().is_none());
    }

    #[test]
    fn finds_the_last_condition_of_a_type() {
        let outcome = Outcome::new()
            .condition(Condition::status_false("Ready", "A", ""))
            .condition(Condition::status_true("Progressing", "B", ""))
            .condition(Condition::status_true("Ready", "C", ""));
        assert_eq!(outcome.conditions().len(), 3);
        let ready = outcome.condition_of_type("Ready").unwrap();
        assert_eq!((ready.status, ready.reason.as_str()), (ConditionStatus::True, "C"));
        assert!(outcome.condition_of_type("Degraded").is_none());
    }

    #[test]
    fn requeue_has_millisecond_precision() {
        let outcome = Outcome::new().requeue_after(Duration::from_micros(100_900));
        assert_eq!(outcome.requeue_interval(), Some(Duration::from_millis(100)));
    }

    #[test]
    fn events_and_finalized_are_recorded() {
        let outcome = Outcome::new().event(Event::warning("Oops", "x")).finalized();
        assert_eq!(outcome.events(), [Event::warning("Oops", "x")]);
        assert!(outcome.is_finalized());
    }
}
