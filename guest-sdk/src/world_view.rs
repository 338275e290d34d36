//! What the host observed about one primary object: the object, its children, the plugin configuration.
//!
//! The view keeps the JSON text the host sent and parses it only as far as the plugin asks: typed reads
//! (`primary::<T>()`, `children_as::<T>(..)`, `config::<T>()`) deserialise straight from the text, so
//! fields the type does not name are skipped without being built, and the `*_json()` accessors build a
//! `serde_json::Value` only on first use. What every plugin needs is read when the view is made: the
//! primary's name, namespace, uid and generation, and each child's `apiVersion`, `kind` and name.

use std::cell::OnceCell;
use std::fmt;
use std::rc::Rc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use wasm_reconciler_contract::ChildSummary;

use crate::head::{Head, Metadata};
use crate::{Error, Gvk};

/// What the host observed about one primary object, handed to
/// [`Reconciler::reconcile`](crate::Reconciler::reconcile).
///
/// Read the primary as your own serde type or as JSON, the children as k8s-openapi types filtered by
/// kind, and the plugin configuration as any deserialisable type.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use serde_json::json;
/// use wasm_reconciler_sdk::WorldView;
///
/// # fn main() -> Result<(), wasm_reconciler_sdk::Error> {
/// let view = WorldView::new(json!({
///     "apiVersion": "example.com/v1", "kind": "Widget",
///     "metadata": {"name": "w", "namespace": "prod", "generation": 3},
///     "spec": {"size": 2},
/// }))
/// .with_child(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w-0"}}));
///
/// assert_eq!(view.name(), "w");
/// assert_eq!(view.namespace(), Some("prod"));
/// assert_eq!(view.generation(), Some(3));
/// let config_maps: Vec<ConfigMap> = view.children()?;
/// assert_eq!(config_maps[0].metadata.name.as_deref(), Some("w-0"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct WorldView {
    primary: String,
    metadata: Metadata,
    /// Each child's identity, and its text once handed over; read from the host on first use when lent.
    children: OnceCell<Vec<Child>>,
    /// The host's view, when it lends it (contract 0.3) rather than handing over every child.
    lent: Option<Lent>,
    config: String,
    deleting: bool,
    attempt: u32,
    /// JSON trees built on first use of the `*_json()` accessors.
    primary_json: OnceCell<Value>,
    children_json: OnceCell<Vec<Value>>,
    config_json: OnceCell<Value>,
}

/// Two views are equal when the host observed the same: the same texts, flags and attempt.
impl PartialEq for WorldView {
    fn eq(&self, other: &Self) -> bool {
        self.primary == other.primary
            && self
                .child_list()
                .iter()
                .enumerate()
                .map(|(index, child)| self.text_of(index, child))
                .eq(other
                    .child_list()
                    .iter()
                    .enumerate()
                    .map(|(index, child)| other.text_of(index, child)))
            && self.config == other.config
            && self.deleting == other.deleting
            && self.attempt == other.attempt
    }
}

/// An observed child: its JSON text (handed over on first use when the view is lent) and what identifies it.
#[derive(Debug, Clone)]
struct Child {
    text: OnceCell<String>,
    head: Head,
}

/// The part of a view the host lends rather than hands over (contract 0.3): the children's texts and summaries.
pub(crate) trait LentChildren {
    /// The text of child `index`, if there is one.
    fn child(&self, index: usize) -> Option<String>;
    /// Every child summarised, against `expected` (JSON text of an object) when given.
    fn summaries(&self, expected: Option<&str>) -> Result<Vec<ChildSummary>, String>;
}

/// A lent view, shared by the clones of one [`WorldView`].
#[derive(Clone)]
struct Lent(Rc<dyn LentChildren>);

impl fmt::Debug for Lent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Lent")
    }
}

/// An observed child of one kind with whether it contains an expected object; see
/// [`WorldView::children_containing`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedChild {
    /// Its `metadata.name`.
    pub name: String,
    /// Whether it contains the expected object.
    pub contains: bool,
    /// Its position among all the view's children.
    index: usize,
}

impl Child {
    fn is(&self, kind: &Gvk) -> bool {
        match (&self.head.api_version, &self.head.kind) {
            (Some(api_version), Some(object_kind)) => kind.is(api_version, object_kind),
            _ => false,
        }
    }

    fn name(&self) -> Option<&str> {
        self.head.name()
    }

    /// A child of its text, with its head read.
    fn of_text(text: String) -> Result<Self, serde_json::Error> {
        Ok(Self {
            head: Head::read(&text)?,
            text: OnceCell::from(text),
        })
    }

    /// A child known by its summary, its text still with the host.
    fn of_summary(summary: ChildSummary) -> Self {
        Self {
            text: OnceCell::new(),
            head: Head {
                api_version: Some(summary.api_version),
                kind: Some(summary.kind),
                metadata: Some(Metadata {
                    name: Some(summary.name),
                    ..Metadata::default()
                }),
            },
        }
    }
}

impl WorldView {
    /// A view of `primary` with no children, an empty configuration, not deleting, attempt 0.
    ///
    /// The host builds views itself; this and the `with_*` methods exist for tests.
    pub fn new(primary: Value) -> Self {
        let text = primary.to_string();
        // Read as the host's texts are; metadata of the wrong shape reads as absent.
        let metadata = Head::read(&text).map(Head::into_metadata).unwrap_or_default();
        Self {
            primary: text,
            metadata,
            children: OnceCell::from(Vec::new()),
            lent: None,
            config: "{}".to_owned(),
            deleting: false,
            attempt: 0,
            primary_json: OnceCell::from(primary),
            children_json: OnceCell::new(),
            config_json: OnceCell::new(),
        }
    }

    /// Adds an observed child object.
    pub fn with_child(self, child: Value) -> Self {
        self.with_children([child])
    }

    /// Adds observed child objects.
    pub fn with_children(mut self, children: impl IntoIterator<Item = Value>) -> Self {
        let mut list: Vec<Child> = (0..self.child_list().len())
            .map(|index| {
                let child = &self.child_list()[index];
                Child {
                    text: OnceCell::from(self.text_of(index, child).to_owned()),
                    head: child.head.clone(),
                }
            })
            .collect();
        list.extend(children.into_iter().map(|child| {
            let text = child.to_string();
            // A child that is not an object (a test of malformed input) is kept, of no kind.
            let head = Head::read(&text).unwrap_or_default();
            Child {
                text: OnceCell::from(text),
                head,
            }
        }));
        self.children = OnceCell::from(list);
        self.lent = None;
        self.children_json = OnceCell::new();
        self
    }

    /// Sets the plugin configuration.
    pub fn with_config(mut self, config: Value) -> Self {
        self.config = config.to_string();
        self.config_json = OnceCell::from(config);
        self
    }

    /// Marks the primary as being deleted (deletionTimestamp set, finalizer present).
    pub fn with_deleting(mut self, deleting: bool) -> Self {
        self.deleting = deleting;
        self
    }

    /// Sets the number of consecutive failed reconciles so far.
    pub fn with_attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt;
        self
    }

    /// The primary object as your type (a serde struct of your custom resource, or a k8s-openapi type).
    ///
    /// Deserialised from the host's text on each call; fields your type does not name are skipped.
    pub fn primary<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_str(&self.primary)
            .map_err(|error| Error::from_json(&error).context("reading the primary object"))
    }

    /// The primary object as JSON (built on first use).
    pub fn primary_json(&self) -> &Value {
        self.primary_json.get_or_init(|| parse_checked(&self.primary))
    }

    /// The primary's `metadata.name` (empty if the object has none).
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// The primary's `metadata.namespace`; `None` for cluster-scoped objects.
    pub fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }

    /// The primary's `metadata.uid`, if set.
    pub fn uid(&self) -> Option<&str> {
        self.metadata.uid.as_deref()
    }

    /// The primary's `metadata.generation`, if set.
    pub fn generation(&self) -> Option<i64> {
        self.metadata.generation
    }

    /// All observed children, any kind, as JSON (built on first use).
    pub fn children_json(&self) -> &[Value] {
        self.children_json.get_or_init(|| {
            self.child_list()
                .iter()
                .enumerate()
                .map(|(index, child)| parse_checked(self.text_of(index, child)))
                .collect()
        })
    }

    /// Observed children of one kind, as JSON.
    pub fn children_of_kind<'a>(&'a self, kind: &'a Gvk) -> impl Iterator<Item = &'a Value> + 'a {
        let children = self.children_json();
        self.child_list()
            .iter()
            .zip(children)
            .filter(move |(child, _)| child.is(kind))
            .map(|(_, json)| json)
    }

    /// Observed children of a k8s-openapi kind (matched by `apiVersion` and `kind`), deserialised.
    pub fn children<K>(&self) -> Result<Vec<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        self.children_as(&Gvk::of::<K>())
    }

    /// Observed children of `kind`, deserialised into your own serde type.
    ///
    /// A type with only the fields you need keeps the component small and the call fast: each child is
    /// deserialised straight from the host's text, skipping the fields your type does not name, while
    /// deserialising a full k8s-openapi object pulls in code for every one of its fields.
    ///
    /// ```
    /// use serde::Deserialize;
    /// use serde_json::json;
    /// use wasm_reconciler_sdk::{Gvk, WorldView};
    ///
    /// #[derive(Deserialize)]
    /// struct DeploymentStatusOnly {
    ///     status: Option<serde_json::Value>,
    /// }
    ///
    /// # fn main() -> Result<(), wasm_reconciler_sdk::Error> {
    /// let view = WorldView::new(json!({"metadata": {"name": "web"}}))
    ///     .with_child(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}));
    /// let deployments: Vec<DeploymentStatusOnly> = view.children_as(&Gvk::new("apps", "v1", "Deployment"))?;
    /// assert!(deployments[0].status.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn children_as<T: DeserializeOwned>(&self, kind: &Gvk) -> Result<Vec<T>, Error> {
        self.child_list()
            .iter()
            .enumerate()
            .filter(|(_, child)| child.is(kind))
            .map(|(index, child)| self.read_child(index, child, kind))
            .collect()
    }

    /// The observed children of `kind`, each with whether it *contains* `expected` (a serialisable object): every
    /// field of `expected` is in the child with an equal value, objects compared field by field and arrays element
    /// by element. Fields the child has beyond `expected` do not count, as under server-side apply they may belong
    /// to other field managers.
    ///
    /// This is how a plugin tells which children already are as desired without reading them: with a contract 0.3
    /// plugin the host compares its own copies and hands over nothing but the names. Read a child whole, when
    /// needed, with [`child_as`](Self::child_as).
    ///
    /// ```
    /// use serde_json::json;
    /// use wasm_reconciler_sdk::{Gvk, WorldView};
    ///
    /// # fn main() -> Result<(), wasm_reconciler_sdk::Error> {
    /// let view = WorldView::new(json!({"metadata": {"name": "web"}})).with_children([
    ///     json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-0"}, "data": {"a": "1", "b": "2"}}),
    ///     json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-1"}, "data": {"a": "0"}}),
    /// ]);
    /// let observed = view.children_containing(&Gvk::new("", "v1", "ConfigMap"), &json!({"data": {"a": "1"}}))?;
    /// assert_eq!((observed[0].name.as_str(), observed[0].contains), ("web-0", true));
    /// assert_eq!((observed[1].name.as_str(), observed[1].contains), ("web-1", false));
    /// # Ok(())
    /// # }
    /// ```
    pub fn children_containing(
        &self,
        kind: &Gvk,
        expected: &(impl Serialize + ?Sized),
    ) -> Result<Vec<ObservedChild>, Error> {
        let expected =
            serde_json::to_string(expected).map_err(|error| Error::from(error).context("expected object"))?;
        if !expected.starts_with('{') {
            return Err(Error::msg(format_args!(
                "expected object: must be a JSON object, got {expected}"
            )));
        }
        let contains: Vec<bool> = match &self.lent {
            Some(Lent(lent)) => {
                let summaries = lent.summaries(Some(&expected)).map_err(Error::msg)?;
                let contains = summaries.iter().map(|summary| summary.contains).collect();
                // The summaries name every child: no second trip for the heads.
                let _ = self
                    .children
                    .set(summaries.into_iter().map(Child::of_summary).collect());
                contains
            }
            None => {
                let expected = wasm_reconciler_contract::json::Expected::parse(&expected)?;
                self.child_list()
                    .iter()
                    .enumerate()
                    .map(|(index, child)| {
                        if !child.is(kind) {
                            return Ok(false);
                        }
                        wasm_reconciler_contract::json::summarize(self.text_of(index, child), Some(&expected))
                            .map(|summary| summary.contains)
                            .map_err(|error| {
                                let name = child.name().unwrap_or("?");
                                Error::from_json(&error).context(format_args!("reading child {kind} {name}"))
                            })
                    })
                    .collect::<Result<_, Error>>()?
            }
        };
        Ok(self
            .child_list()
            .iter()
            .zip(contains)
            .enumerate()
            .filter(|(_, (child, _))| child.is(kind))
            .map(|(index, (child, contains))| ObservedChild {
                name: child.name().unwrap_or_default().to_owned(),
                contains,
                index,
            })
            .collect())
    }

    /// One child of [`children_containing`](Self::children_containing), read whole as your type.
    pub fn child_as<T: DeserializeOwned>(&self, child: &ObservedChild) -> Result<T, Error> {
        let observed = self
            .child_list()
            .get(child.index)
            .ok_or_else(|| Error::msg(format_args!("no observed child {}", child.name)))?;
        let kind = observed.head.kind.as_deref().unwrap_or("?");
        serde_json::from_str(self.text_of(child.index, observed))
            .map_err(|error| Error::from_json(&error).context(format_args!("reading child {kind} {}", child.name)))
    }

    fn read_child<T: DeserializeOwned>(&self, index: usize, child: &Child, kind: &Gvk) -> Result<T, Error> {
        serde_json::from_str(self.text_of(index, child)).map_err(|error| {
            let name = child.name().unwrap_or("?");
            Error::from_json(&error).context(format_args!("reading child {kind} {name}"))
        })
    }

    /// The children, their identities read from the host on first use when the view is lent.
    fn child_list(&self) -> &[Child] {
        self.children.get_or_init(|| match &self.lent {
            Some(Lent(lent)) => lent
                .summaries(None)
                .unwrap_or_default()
                .into_iter()
                .map(Child::of_summary)
                .collect(),
            None => Vec::new(),
        })
    }

    /// The text of child `index`, handed over on first use when the view is lent.
    fn text_of<'a>(&'a self, index: usize, child: &'a Child) -> &'a str {
        child.text.get_or_init(|| {
            self.lent
                .as_ref()
                .and_then(|Lent(lent)| lent.child(index))
                .unwrap_or_default()
        })
    }

    /// The plugin configuration as your type; the configuration is `{}` when none is set, so give optional
    /// fields serde defaults.
    pub fn config<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_str(&self.config)
            .map_err(|error| Error::from_json(&error).context("reading the plugin configuration"))
    }

    /// The plugin configuration as JSON (built on first use).
    pub fn config_json(&self) -> &Value {
        self.config_json.get_or_init(|| parse_checked(&self.config))
    }

    /// Whether the primary is being deleted and waits for this plugin's finalizer: clean up, and answer
    /// with [`Outcome::finalized`](crate::Outcome::finalized) once done.
    pub fn deleting(&self) -> bool {
        self.deleting
    }

    /// Consecutive failed reconciles of this primary so far (0 after a success).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// A view of the host's texts. Reads what every plugin needs before the plugin runs: the primary's
    /// metadata and each child's `apiVersion`, `kind` and name, from the head of each text only.
    pub(crate) fn from_texts(
        primary: String,
        children: Vec<String>,
        config: String,
        deleting: bool,
        attempt: u32,
    ) -> Result<Self, Error> {
        let metadata = Head::read(&primary)
            .map_err(|error| Error::from_json(&error).context("world view: primary is not a Kubernetes object"))?
            .into_metadata();
        let children = children
            .into_iter()
            .enumerate()
            .map(|(position, text)| {
                Child::of_text(text).map_err(|error| {
                    Error::from_json(&error)
                        .context(format_args!("world view: child #{position} is not a Kubernetes object"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let config = if config.trim().is_empty() {
            "{}".to_owned()
        } else {
            config
        };
        serde_json::from_str::<serde::de::IgnoredAny>(&config)
            .map_err(|error| Error::from_json(&error).context("world view: config is not JSON"))?;
        Ok(Self {
            primary,
            metadata,
            children: OnceCell::from(children),
            lent: None,
            config,
            deleting,
            attempt,
            primary_json: OnceCell::new(),
            children_json: OnceCell::new(),
            config_json: OnceCell::new(),
        })
    }

    /// A view the host lends (contract 0.3): the primary and configuration handed over, the children read from
    /// `lent` when the plugin asks.
    pub(crate) fn from_lent(
        primary: String,
        lent: Rc<dyn LentChildren>,
        config: String,
        deleting: bool,
        attempt: u32,
    ) -> Result<Self, Error> {
        let mut view = Self::from_texts(primary, Vec::new(), config, deleting, attempt)?;
        view.children = OnceCell::new();
        view.lent = Some(Lent(lent));
        Ok(view)
    }
}

/// A JSON tree of one of the view's texts.
fn parse_checked(text: &str) -> Value {
    // The host's texts are serialised JSON, and so are those of `new` and `with_*`. Should one not be (a host
    // defect), it reads as an empty object here rather than a panic, and as an error from the typed reads.
    serde_json::from_str(text).unwrap_or_else(|_| Value::Object(Map::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde::Deserialize;
    use serde_json::json;

    fn widget() -> Value {
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u-1", "generation": 2},
            "spec": {"size": 3},
        })
    }

    fn config_map(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
    }

    #[test]
    fn children_containing_reads_texts_without_a_host() {
        let view = WorldView::new(widget()).with_children([
            config_map("a"),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"k": "w"}}),
        ]);
        let kind = Gvk::new("", "v1", "ConfigMap");
        let observed = view.children_containing(&kind, &json!({"data": {"k": "v"}})).unwrap();
        let summary: Vec<(&str, bool)> = observed
            .iter()
            .map(|child| (child.name.as_str(), child.contains))
            .collect();
        assert_eq!(summary, [("a", true), ("b", false)]);
        let b: ConfigMap = view.child_as(&observed[1]).unwrap();
        assert_eq!(b.data.unwrap()["k"], "w");
        assert_eq!(
            view.children_containing(&kind, &json!([1])).unwrap_err().to_string(),
            "expected object: must be a JSON object, got [1]"
        );
    }

    /// A host that lends two ConfigMaps and counts what it is asked.
    struct Lender {
        texts: Vec<String>,
        asked: std::cell::RefCell<Vec<String>>,
    }

    impl LentChildren for Lender {
        fn child(&self, index: usize) -> Option<String> {
            self.asked.borrow_mut().push(format!("child {index}"));
            self.texts.get(index).cloned()
        }

        fn summaries(&self, expected: Option<&str>) -> Result<Vec<ChildSummary>, String> {
            self.asked
                .borrow_mut()
                .push(format!("summaries {}", expected.is_some()));
            let expected = expected
                .map(wasm_reconciler_contract::json::Expected::parse)
                .transpose()
                .map_err(|error| error.to_string())?;
            self.texts
                .iter()
                .map(|text| {
                    wasm_reconciler_contract::json::summarize(text, expected.as_ref()).map_err(|e| e.to_string())
                })
                .collect()
        }
    }

    #[test]
    fn a_lent_view_hands_over_only_what_is_read() {
        let lender = Rc::new(Lender {
            texts: vec![config_map("a").to_string(), config_map("b").to_string()],
            asked: Default::default(),
        });
        let view = WorldView::from_lent(widget().to_string(), lender.clone(), "{}".into(), false, 0).unwrap();
        let kind = Gvk::new("", "v1", "ConfigMap");
        let observed = view.children_containing(&kind, &json!({"data": {"k": "v"}})).unwrap();
        assert!(observed.iter().all(|child| child.contains));
        let b: ConfigMap = view.child_as(&observed[1]).unwrap();
        assert_eq!(b.metadata.name.as_deref(), Some("b"));
        // One comparison, one child read whole; the first child never crossed.
        assert_eq!(*lender.asked.borrow(), ["summaries true", "child 1"]);
        // Typed reads of all children still work, reading the rest on first use.
        assert_eq!(view.children::<ConfigMap>().unwrap().len(), 2);
        assert_eq!(*lender.asked.borrow(), ["summaries true", "child 1", "child 0"]);
        assert_eq!(view.name(), "w");
    }

    #[derive(Debug, Deserialize)]
    struct Widget {
        spec: WidgetSpec,
    }
    #[derive(Debug, Deserialize)]
    struct WidgetSpec {
        size: u32,
    }

    #[test]
    fn reads_primary_metadata() {
        let view = WorldView::new(widget());
        assert_eq!(view.name(), "w");
        assert_eq!(view.namespace(), Some("ns"));
        assert_eq!(view.uid(), Some("u-1"));
        assert_eq!(view.generation(), Some(2));
    }

    #[test]
    fn missing_metadata_reads_as_absent() {
        let view = WorldView::new(json!({}));
        assert_eq!(view.name(), "");
        assert_eq!(view.namespace(), None);
        assert_eq!(view.generation(), None);
    }

    #[test]
    fn deserialises_the_primary() {
        let widget: Widget = WorldView::new(widget()).primary().unwrap();
        assert_eq!(widget.spec.size, 3);
    }

    #[test]
    fn primary_type_mismatch_is_an_error_with_context() {
        let error = WorldView::new(json!({"spec": {}})).primary::<Widget>().unwrap_err();
        assert!(error.message().starts_with("reading the primary object: "), "{error}");
    }

    #[test]
    fn typed_children_are_filtered_by_kind() {
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
        let view = WorldView::new(widget()).with_children([config_map("a"), deployment, config_map("b")]);
        let names: Vec<_> = view
            .children::<ConfigMap>()
            .unwrap()
            .into_iter()
            .map(|cm| cm.metadata.name.unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(view.children::<Deployment>().unwrap().len(), 1);
        assert_eq!(view.children_json().len(), 3);
    }

    #[test]
    fn malformed_child_names_itself_in_the_error() {
        let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"}, "data": 5});
        let error = WorldView::new(widget())
            .with_child(bad)
            .children::<ConfigMap>()
            .unwrap_err();
        assert!(
            error.message().starts_with("reading child v1/ConfigMap bad: "),
            "{error}"
        );
    }

    #[test]
    fn config_defaults_to_an_empty_object() {
        #[derive(Deserialize, Default)]
        struct Config {
            #[serde(default)]
            verbose: bool,
        }
        let view = WorldView::new(widget());
        assert_eq!(view.config_json(), &json!({}));
        assert!(!view.config::<Config>().unwrap().verbose);
        let view = view.with_config(json!({"verbose": true}));
        assert!(view.config::<Config>().unwrap().verbose);
    }

    #[test]
    fn carries_deleting_and_attempt() {
        let view = WorldView::new(widget()).with_deleting(true).with_attempt(4);
        assert!(view.deleting());
        assert_eq!(view.attempt(), 4);
    }
}
