//! Running plugin logic natively (unit tests, benchmarks): a pluggable host and the wire-level entry points.
//!
//! Compiled for every target except `wasm32`. The [`host`](crate::host) functions call the
//! [`NativeHost`] installed with [`with_host`]; [`MemoryHost`] is a ready-made one serving objects from
//! memory. A host that links a plugin crate natively calls [`describe`] and [`reconcile`], the same
//! conversion code the WebAssembly component runs.

use std::cell::{Cell, RefCell};

use std::collections::BTreeMap;

use serde_json::Value;

use crate::Gvk;
use crate::host::Level;
use crate::http::{HttpError, HttpErrorKind, Request, Response};

pub use crate::wire::{describe, reconcile};

/// What the [`host`](crate::host) functions call in a native build, mirroring the contract's `host`
/// interface.
pub trait NativeHost {
    /// Receives a log line. By default it is written to stderr.
    fn log(&self, level: Level, message: &str) {
        eprintln!("[{level:?}] {message}");
    }

    /// Reads one object as JSON text; `Ok(None)` when absent, `Err` with the host's reason otherwise.
    fn get(&self, kind: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<String>, String>;

    /// Lists objects as JSON text; `Err` with the host's reason when the call is refused.
    fn list(&self, kind: &Gvk, namespace: Option<&str>, label_selector: Option<&str>) -> Result<Vec<String>, String>;

    /// Sends one HTTP request ([`http`](crate::http), contract 0.2); redirects come back as responses. By default
    /// every request is denied, as a host with no `allowedOutboundHosts` does.
    fn http(&self, request: &Request) -> Result<Response, HttpError> {
        let _ = request;
        Err(HttpError::new(
            HttpErrorKind::Denied,
            "denied: this NativeHost sends no HTTP requests (implement NativeHost::http)",
        ))
    }

    /// The value of a variable ([`variables`](crate::variables), contract 0.2); by default none is defined.
    fn variable(&self, name: &str) -> Result<String, String> {
        Err(format!("this NativeHost defines no variable {name:?}"))
    }
}

thread_local! {
    static CURRENT_HOST: Cell<Option<*const (dyn NativeHost + 'static)>> = const { Cell::new(None) };
}

/// Runs `body` with `host` serving the [`host`](crate::host) functions on this thread, then restores the
/// previous host (also when `body` panics). Calls nest.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use serde_json::json;
/// use wasm_reconciler_sdk::host;
/// use wasm_reconciler_sdk::native::{MemoryHost, with_host};
///
/// let cluster = MemoryHost::new()
///     .with_object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}));
/// let found: Option<ConfigMap> = with_host(&cluster, || host::get(Some("ns"), "a")).unwrap();
/// assert!(found.is_some());
/// ```
#[allow(unsafe_code)]
pub fn with_host<R>(host: &dyn NativeHost, body: impl FnOnce() -> R) -> R {
    struct Restore(Option<*const (dyn NativeHost + 'static)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT_HOST.with(|current| current.set(self.0));
        }
    }

    let pointer: *const (dyn NativeHost + '_) = host;
    // SAFETY: only the lifetime bound of the trait object changes. The pointer is dereferenced only in
    // `with_current_host`, on this thread, while `body` runs; `Restore` removes it before `host`'s borrow
    // ends, on return and on unwinding alike.
    let pointer: *const (dyn NativeHost + 'static) = unsafe { std::mem::transmute(pointer) };
    let _restore = Restore(CURRENT_HOST.with(|current| current.replace(Some(pointer))));
    body()
}

/// Whether a host is installed on this thread.
pub fn has_host() -> bool {
    CURRENT_HOST.with(Cell::get).is_some()
}

#[allow(unsafe_code)]
fn with_current_host<R>(call: &str, body: impl FnOnce(&dyn NativeHost) -> R) -> R {
    let Some(pointer) = CURRENT_HOST.with(Cell::get) else {
        panic!(
            "wasm_reconciler_sdk::host::{call} was called natively outside `native::with_host`: \
             wrap the code under test in `wasm_reconciler_sdk::native::with_host(&host, || ...)`"
        );
    };
    // SAFETY: `with_host` installed the pointer from a live borrow and removes it before that borrow
    // ends; `body` cannot keep the reference beyond this call.
    body(unsafe { &*pointer })
}

pub(crate) mod backend {
    //! Native implementation of the host calls: the installed [`NativeHost`](super::NativeHost).

    use super::{NativeHost, with_current_host};
    use crate::Gvk;
    use crate::host::Level;

    /// Without an installed host, log lines go to stderr so that plugin logic can log in plain unit tests.
    pub(crate) fn log(level: Level, message: &str) {
        if super::has_host() {
            with_current_host("log", |host| host.log(level, message));
        } else {
            eprintln!("[{level:?}] {message}");
        }
    }

    pub(crate) fn get(kind: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<String>, String> {
        with_current_host("get", |host: &dyn NativeHost| host.get(kind, namespace, name))
    }

    pub(crate) fn list(
        kind: &Gvk,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, String> {
        with_current_host("list", |host: &dyn NativeHost| {
            host.list(kind, namespace, label_selector)
        })
    }

    pub(crate) fn http(exchange: &crate::http::Exchange<'_>) -> Result<crate::http::Response, crate::http::HttpError> {
        let request = crate::http::Request {
            method: exchange.method.clone(),
            url: exchange.url.to_string(),
            headers: exchange.headers.to_vec(),
            body: exchange.body.to_vec(),
            timeout: exchange.timeout,
            max_redirects: 0,
        };
        with_current_host("http", |host: &dyn NativeHost| host.http(&request))
    }

    pub(crate) fn variable(name: &str) -> Result<String, String> {
        with_current_host("variables::get", |host: &dyn NativeHost| host.variable(name))
    }
}

/// A [`NativeHost`] serving a fixed set of objects from memory, recording log lines; for plugin unit
/// tests.
///
/// `get` matches kind, namespace and name; `list` matches kind, namespace (when given) and a label
/// selector supporting `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)` and `k notin (a,b)`.
#[derive(Debug, Default)]
pub struct MemoryHost {
    objects: Vec<Value>,
    variables: BTreeMap<String, String>,
    logs: RefCell<Vec<(Level, String)>>,
}

impl MemoryHost {
    /// An empty host.
    pub fn new() -> Self {
        Self::default()
    }

    /// Defines a variable [`variables::get`](crate::variables::get) returns.
    pub fn with_variable(mut self, name: &str, value: &str) -> Self {
        self.variables.insert(name.to_owned(), value.to_owned());
        self
    }

    /// Adds an object `get` and `list` can see (a JSON object with `apiVersion`, `kind` and `metadata`).
    pub fn with_object(mut self, object: Value) -> Self {
        self.objects.push(object);
        self
    }

    /// Adds objects `get` and `list` can see.
    pub fn with_objects(mut self, objects: impl IntoIterator<Item = Value>) -> Self {
        self.objects.extend(objects);
        self
    }

    /// The log lines received so far.
    pub fn logs(&self) -> Vec<(Level, String)> {
        self.logs.borrow().clone()
    }

    fn visible<'a>(&'a self, kind: &'a Gvk, namespace: Option<&'a str>) -> impl Iterator<Item = &'a Value> {
        self.objects.iter().filter(move |object| {
            kind.matches(object)
                && namespace.is_none_or(|namespace| {
                    object.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace)
                })
        })
    }
}

impl NativeHost for MemoryHost {
    fn log(&self, level: Level, message: &str) {
        self.logs.borrow_mut().push((level, message.to_owned()));
    }

    fn variable(&self, name: &str) -> Result<String, String> {
        self.variables
            .get(name)
            .cloned()
            .ok_or_else(|| format!("the plugin's settings define no variable {name:?}"))
    }

    fn get(&self, kind: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<String>, String> {
        Ok(self
            .visible(kind, namespace)
            .find(|object| object.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
            .map(Value::to_string))
    }

    fn list(&self, kind: &Gvk, namespace: Option<&str>, label_selector: Option<&str>) -> Result<Vec<String>, String> {
        let selector = LabelSelector::parse(label_selector.unwrap_or_default())?;
        Ok(self
            .visible(kind, namespace)
            .filter(|object| selector.matches(object.pointer("/metadata/labels")))
            .map(Value::to_string)
            .collect())
    }
}

/// A parsed label selector: every requirement must hold.
#[derive(Debug)]
struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Debug)]
enum Requirement {
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

impl LabelSelector {
    fn parse(text: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for term in split_terms(text) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            requirements.push(Requirement::parse(term)?);
        }
        Ok(Self { requirements })
    }

    fn matches(&self, labels: Option<&Value>) -> bool {
        let label = |key: &str| labels.and_then(|labels| labels.get(key)).and_then(Value::as_str);
        self.requirements.iter().all(|requirement| match requirement {
            Requirement::Exists(key) => label(key).is_some(),
            Requirement::NotExists(key) => label(key).is_none(),
            Requirement::In(key, values) => label(key).is_some_and(|value| values.iter().any(|v| v == value)),
            Requirement::NotIn(key, values) => label(key).is_none_or(|value| values.iter().all(|v| v != value)),
        })
    }
}

impl Requirement {
    fn parse(term: &str) -> Result<Self, String> {
        let invalid = || format!("invalid label selector term `{term}`");
        if let Some(key) = term.strip_prefix('!') {
            return Ok(Self::NotExists(checked_key(key.trim()).ok_or_else(invalid)?));
        }
        if let Some((key, value)) = term.split_once("!=") {
            let key = checked_key(key.trim()).ok_or_else(invalid)?;
            return Ok(Self::NotIn(key, vec![value.trim().to_owned()]));
        }
        if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
            let key = checked_key(key.trim()).ok_or_else(invalid)?;
            return Ok(Self::In(key, vec![value.trim().to_owned()]));
        }
        if let Some((key, rest)) = term.split_once(char::is_whitespace) {
            let key = checked_key(key).ok_or_else(invalid)?;
            let rest = rest.trim_start();
            let (negated, values) = if let Some(values) = rest.strip_prefix("notin") {
                (true, values)
            } else if let Some(values) = rest.strip_prefix("in") {
                (false, values)
            } else {
                return Err(invalid());
            };
            let values = values
                .trim()
                .strip_prefix('(')
                .and_then(|values| values.strip_suffix(')'))
                .ok_or_else(invalid)?;
            let values = values.split(',').map(|value| value.trim().to_owned()).collect();
            return Ok(if negated {
                Self::NotIn(key, values)
            } else {
                Self::In(key, values)
            });
        }
        Ok(Self::Exists(checked_key(term).ok_or_else(invalid)?))
    }
}

fn checked_key(key: &str) -> Option<String> {
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    valid.then(|| key.to_owned())
}

/// Splits at commas outside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut depth = 0_u32;
    let mut start = 0;
    for (index, character) in text.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, host};
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use serde_json::json;

    fn config_map(namespace: &str, name: &str, labels: Value) -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
        })
    }

    fn cluster() -> MemoryHost {
        MemoryHost::new().with_objects([
            config_map("a", "web", json!({"app": "web", "tier": "front"})),
            config_map("a", "db", json!({"app": "db", "tier": "back", "legacy": "yes"})),
            config_map("b", "web", json!({"app": "web"})),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "web", "namespace": "a"}}),
        ])
    }

    fn names(selector: &str) -> Vec<String> {
        let host = cluster();
        let maps: Vec<ConfigMap> = with_host(&host, || host::list(None, Some(selector))).unwrap();
        maps.into_iter().map(|cm| cm.metadata.name.unwrap()).collect()
    }

    #[test]
    fn typed_get_finds_by_kind_namespace_and_name() {
        let host = cluster();
        with_host(&host, || {
            let found: ConfigMap = host::get(Some("a"), "db")?.unwrap();
            assert_eq!(found.metadata.name.as_deref(), Some("db"));
            assert!(host::get::<ConfigMap>(Some("c"), "db")?.is_none());
            assert!(host::get::<Secret>(Some("a"), "web")?.is_some());
            assert!(host::get::<Secret>(Some("a"), "db")?.is_none());
            Ok::<_, Error>(())
        })
        .unwrap();
    }

    #[test]
    fn typed_list_filters_by_namespace() {
        let host = cluster();
        let in_a: Vec<ConfigMap> = with_host(&host, || host::list(Some("a"), None)).unwrap();
        assert_eq!(in_a.len(), 2);
        let everywhere: Vec<ConfigMap> = with_host(&host, || host::list(None, None)).unwrap();
        assert_eq!(everywhere.len(), 3);
    }

    #[test]
    fn untyped_calls_take_a_gvk() {
        let host = cluster();
        let kind = Gvk::new("", "v1", "Secret");
        with_host(&host, || {
            assert_eq!(host::list_json(&kind, None, None)?.len(), 1);
            let secret = host::get_json(&kind, Some("a"), "web")?.unwrap();
            assert_eq!(secret["kind"], "Secret");
            Ok::<_, Error>(())
        })
        .unwrap();
    }

    #[test]
    fn label_selectors_follow_kubernetes_syntax() {
        assert_eq!(names("app=web"), ["web", "web"]);
        assert_eq!(names("app==db"), ["db"]);
        assert_eq!(names("app!=web"), ["db"]);
        assert_eq!(names("tier"), ["web", "db"]);
        assert_eq!(names("!legacy"), ["web", "web"]);
        assert_eq!(names("tier in (front, back),app=db"), ["db"]);
        assert_eq!(names("tier notin (front)"), ["db", "web"]);
        assert_eq!(names(""), ["web", "db", "web"]);
    }

    #[test]
    fn bad_selector_is_a_host_error() {
        let host = cluster();
        let error = with_host(&host, || host::list::<ConfigMap>(None, Some("tier within (x)"))).unwrap_err();
        assert_eq!(
            error.message(),
            "host list v1/ConfigMap: invalid label selector term `tier within (x)`"
        );
    }

    #[test]
    fn host_errors_name_the_call() {
        struct Refusing;
        impl NativeHost for Refusing {
            fn get(&self, _: &Gvk, _: Option<&str>, _: &str) -> Result<Option<String>, String> {
                Err("kind not declared".into())
            }
            fn list(&self, _: &Gvk, _: Option<&str>, _: Option<&str>) -> Result<Vec<String>, String> {
                Err("kind not declared".into())
            }
        }
        let error = with_host(&Refusing, || host::get::<Secret>(Some("a"), "s")).unwrap_err();
        assert_eq!(error.message(), "host get v1/Secret a/s: kind not declared");
    }

    #[test]
    fn logs_reach_the_installed_host() {
        let host = MemoryHost::new();
        with_host(&host, || {
            crate::info!("hello {}", 1);
            crate::warn!("careful");
        });
        assert_eq!(
            host.logs(),
            [(Level::Info, "hello 1".to_owned()), (Level::Warn, "careful".to_owned())]
        );
    }

    #[test]
    fn hosts_nest_and_are_restored() {
        let outer = MemoryHost::new();
        let inner = MemoryHost::new();
        assert!(!has_host());
        with_host(&outer, || {
            with_host(&inner, || crate::debug!("inner"));
            crate::debug!("outer");
        });
        assert!(!has_host());
        assert_eq!(inner.logs().len(), 1);
        assert_eq!(outer.logs().len(), 1);
    }

    #[test]
    fn host_is_removed_after_a_panic() {
        let host = MemoryHost::new();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_host(&host, || panic!("plugin bug"));
        }));
        assert!(result.is_err());
        assert!(!has_host());
    }

    #[test]
    #[should_panic(expected = "outside `native::with_host`")]
    fn calls_without_a_host_panic_with_guidance() {
        let _ = host::get::<ConfigMap>(None, "x");
    }
}
