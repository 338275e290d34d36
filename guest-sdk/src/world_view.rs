//! What the host observed about one primary object: the object, its children, the plugin configuration.
//!
//! The view keeps the JSON text the host sent and parses it only as far as the plugin asks: typed reads
//! (`primary::<T>()`, `children_as::<T>(..)`, `config::<T>()`) deserialise straight from the text, so
//! fields the type does not name are skipped without being built, and the `*_json()` accessors build a
//! `serde_json::Value` only on first use. What every plugin needs is read when the view is made: the
//! primary's name, namespace, uid and generation, and each child's `apiVersion`, `kind` and name.

use std::cell::OnceCell;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

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
    children: Vec<Child>,
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
                .children
                .iter()
                .map(|child| &child.text)
                .eq(other.children.iter().map(|child| &child.text))
            && self.config == other.config
            && self.deleting == other.deleting
            && self.attempt == other.attempt
    }
}

/// An observed child: its JSON text and what identifies it.
#[derive(Debug, Clone)]
struct Child {
    text: String,
    head: Head,
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
            text,
        })
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
            children: Vec::new(),
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
        self.children.extend(children.into_iter().map(|child| {
            let text = child.to_string();
            // A child that is not an object (a test of malformed input) is kept, of no kind.
            let head = Head::read(&text).unwrap_or_default();
            Child { text, head }
        }));
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
        self.children_json
            .get_or_init(|| self.children.iter().map(|child| parse_checked(&child.text)).collect())
    }

    /// Observed children of one kind, as JSON.
    pub fn children_of_kind<'a>(&'a self, kind: &'a Gvk) -> impl Iterator<Item = &'a Value> + 'a {
        let children = self.children_json();
        self.children
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
        self.children
            .iter()
            .filter(|child| child.is(kind))
            .map(|child| {
                serde_json::from_str(&child.text).map_err(|error| {
                    let name = child.name().unwrap_or("?");
                    Error::from_json(&error).context(format_args!("reading child {kind} {name}"))
                })
            })
            .collect()
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
            children,
            config,
            deleting,
            attempt,
            primary_json: OnceCell::new(),
            children_json: OnceCell::new(),
            config_json: OnceCell::new(),
        })
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
