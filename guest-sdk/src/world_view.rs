//! What the host observed about one primary object: the object, its children, the plugin configuration.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

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
#[derive(Debug, Clone, PartialEq)]
pub struct WorldView {
    primary: Value,
    children: Vec<Value>,
    config: Value,
    deleting: bool,
    attempt: u32,
}

impl WorldView {
    /// A view of `primary` with no children, an empty configuration, not deleting, attempt 0.
    ///
    /// The host builds views itself; this and the `with_*` methods exist for tests.
    pub fn new(primary: Value) -> Self {
        Self {
            primary,
            children: Vec::new(),
            config: Value::Object(Map::new()),
            deleting: false,
            attempt: 0,
        }
    }

    /// Adds an observed child object.
    pub fn with_child(mut self, child: Value) -> Self {
        self.children.push(child);
        self
    }

    /// Adds observed child objects.
    pub fn with_children(mut self, children: impl IntoIterator<Item = Value>) -> Self {
        self.children.extend(children);
        self
    }

    /// Sets the plugin configuration.
    pub fn with_config(mut self, config: Value) -> Self {
        self.config = config;
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
    pub fn primary<T: DeserializeOwned>(&self) -> Result<T, Error> {
        T::deserialize(&self.primary).map_err(|error| Error::from(error).context("reading the primary object"))
    }

    /// The primary object as JSON.
    pub fn primary_json(&self) -> &Value {
        &self.primary
    }

    /// The primary's `metadata.name` (empty if the object has none).
    pub fn name(&self) -> &str {
        self.metadata_str("name").unwrap_or_default()
    }

    /// The primary's `metadata.namespace`; `None` for cluster-scoped objects.
    pub fn namespace(&self) -> Option<&str> {
        self.metadata_str("namespace")
    }

    /// The primary's `metadata.uid`, if set.
    pub fn uid(&self) -> Option<&str> {
        self.metadata_str("uid")
    }

    /// The primary's `metadata.generation`, if set.
    pub fn generation(&self) -> Option<i64> {
        self.primary.get("metadata")?.get("generation")?.as_i64()
    }

    /// All observed children, any kind, as JSON.
    pub fn children_json(&self) -> &[Value] {
        &self.children
    }

    /// Observed children of one kind, as JSON.
    pub fn children_of_kind<'a>(&'a self, kind: &'a Gvk) -> impl Iterator<Item = &'a Value> + 'a {
        self.children.iter().filter(move |child| kind.matches(child))
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
    /// A type with only the fields you need keeps the component small: deserialising a full
    /// k8s-openapi object pulls in code for every one of its fields.
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
        self.children_of_kind(kind)
            .map(|child| {
                T::deserialize(child).map_err(|error| {
                    let name = child.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("?");
                    Error::from(error).context(format_args!("reading child {kind} {name}"))
                })
            })
            .collect()
    }

    /// The plugin configuration as your type; the configuration is `{}` when none is set, so give optional
    /// fields serde defaults.
    pub fn config<T: DeserializeOwned>(&self) -> Result<T, Error> {
        T::deserialize(&self.config).map_err(|error| Error::from(error).context("reading the plugin configuration"))
    }

    /// The plugin configuration as JSON.
    pub fn config_json(&self) -> &Value {
        &self.config
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

    fn metadata_str(&self, field: &str) -> Option<&str> {
        self.primary.get("metadata")?.get(field)?.as_str()
    }

    pub(crate) fn from_parts(
        primary: Value,
        children: Vec<Value>,
        config: Value,
        deleting: bool,
        attempt: u32,
    ) -> Self {
        Self {
            primary,
            children,
            config,
            deleting,
            attempt,
        }
    }
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
