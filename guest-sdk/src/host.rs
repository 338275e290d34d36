//! Read-only calls into the host: typed `get`/`list` from its caches, and logging.
//!
//! In a WebAssembly component these call the host's imports. In a native build (unit tests, benchmarks)
//! they call the [`NativeHost`](crate::native::NativeHost) installed with
//! [`native::with_host`](crate::native::with_host).
//!
//! Only kinds declared in [`ControllerSpec::owns`](crate::ControllerSpec::owns) or
//! [`ControllerSpec::reads`](crate::ControllerSpec::reads) can be read. The host remembers every read
//! (including names that were absent) and reconciles the primary again when any of them changes.

use k8s_openapi::Resource;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Error, Gvk};

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected that the plugin handled.
    Warn,
    /// Something failed.
    Error,
}

/// Writes a line to the host's log, tagged with the plugin's name and the object being reconciled.
///
/// The [`trace!`](crate::trace), [`debug!`](crate::debug), [`info!`](crate::info), [`warn!`](crate::warn)
/// and [`error!`](crate::error) macros format and call this.
pub fn log(level: Level, message: &str) {
    backend::log(level, message);
}

/// Reads one object of a k8s-openapi kind; `Ok(None)` when it does not exist. `namespace` is ignored for
/// cluster-scoped kinds.
///
/// ```no_run
/// use k8s_openapi::api::core::v1::Secret;
/// use wasm_reconciler_sdk::host;
///
/// # fn main() -> Result<(), wasm_reconciler_sdk::Error> {
/// let secret: Option<Secret> = host::get(Some("prod"), "db-credentials")?;
/// # Ok(())
/// # }
/// ```
pub fn get<K>(namespace: Option<&str>, name: &str) -> Result<Option<K>, Error>
where
    K: Resource + DeserializeOwned,
{
    let kind = Gvk::of::<K>();
    get_text(&kind, namespace, name)?
        .map(|text| serde_json::from_str(&text).map_err(|error| read_error(&kind, Some(name), error)))
        .transpose()
}

/// Lists objects of a k8s-openapi kind, in one namespace or all (`None`), optionally filtered by a label
/// selector in Kubernetes syntax (`app=web,tier in (a,b),!legacy`).
///
/// ```no_run
/// use k8s_openapi::api::core::v1::Pod;
/// use wasm_reconciler_sdk::host;
///
/// # fn main() -> Result<(), wasm_reconciler_sdk::Error> {
/// let pods: Vec<Pod> = host::list(Some("prod"), Some("app=web"))?;
/// # Ok(())
/// # }
/// ```
pub fn list<K>(namespace: Option<&str>, label_selector: Option<&str>) -> Result<Vec<K>, Error>
where
    K: Resource + DeserializeOwned,
{
    let kind = Gvk::of::<K>();
    list_text(&kind, namespace, label_selector)?
        .iter()
        .map(|text| serde_json::from_str(text).map_err(|error| read_error(&kind, None, error)))
        .collect()
}

/// Reads one object of any kind (custom resources included) as JSON.
pub fn get_json(kind: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<Value>, Error> {
    get_text(kind, namespace, name)?
        .map(|text| serde_json::from_str(&text).map_err(|error| read_error(kind, Some(name), error)))
        .transpose()
}

/// Lists objects of any kind as JSON; see [`list`].
pub fn list_json(kind: &Gvk, namespace: Option<&str>, label_selector: Option<&str>) -> Result<Vec<Value>, Error> {
    list_text(kind, namespace, label_selector)?
        .iter()
        .map(|text| serde_json::from_str(text).map_err(|error| read_error(kind, None, error)))
        .collect()
}

fn get_text(kind: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<String>, Error> {
    backend::get(kind, namespace, name).map_err(|message| {
        Error::msg(format_args!(
            "host get {kind} {}: {message}",
            qualified(namespace, name)
        ))
    })
}

fn list_text(kind: &Gvk, namespace: Option<&str>, label_selector: Option<&str>) -> Result<Vec<String>, Error> {
    backend::list(kind, namespace, label_selector)
        .map_err(|message| Error::msg(format_args!("host list {kind}: {message}")))
}

fn qualified(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

fn read_error(kind: &Gvk, name: Option<&str>, error: serde_json::Error) -> Error {
    let context = match name {
        Some(name) => format!("reading {kind} {name} from the host"),
        None => format!("reading a listed {kind} from the host"),
    };
    Error::from(error).context(context)
}

#[cfg(target_arch = "wasm32")]
mod backend {
    //! The host's imports, through the generated bindings.

    use crate::Gvk;
    use crate::bindings::wasm_reconciler::plugin::host;
    use crate::component::gvk_to_bindgen;

    pub(super) fn log(level: super::Level, message: &str) {
        let level = match level {
            super::Level::Trace => host::Level::Trace,
            super::Level::Debug => host::Level::Debug,
            super::Level::Info => host::Level::Info,
            super::Level::Warn => host::Level::Warn,
            super::Level::Error => host::Level::Error,
        };
        host::log(level, message);
    }

    pub(super) fn get(kind: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<String>, String> {
        host::get(&gvk_to_bindgen(kind), namespace, name)
    }

    pub(super) fn list(
        kind: &Gvk,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, String> {
        host::list(&gvk_to_bindgen(kind), namespace, label_selector)
    }
}

#[cfg(not(target_arch = "wasm32"))]
use crate::native::backend;

/// Logs a formatted line at [`Level::Trace`].
#[macro_export]
macro_rules! trace {
    ($($arg:tt)+) => { $crate::host::log($crate::host::Level::Trace, &::std::format!($($arg)+)) };
}

/// Logs a formatted line at [`Level::Debug`].
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => { $crate::host::log($crate::host::Level::Debug, &::std::format!($($arg)+)) };
}

/// Logs a formatted line at [`Level::Info`].
///
/// ```
/// wasm_reconciler_sdk::info!("scaled {} to {} replicas", "web", 3);
/// ```
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => { $crate::host::log($crate::host::Level::Info, &::std::format!($($arg)+)) };
}

/// Logs a formatted line at [`Level::Warn`].
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => { $crate::host::log($crate::host::Level::Warn, &::std::format!($($arg)+)) };
}

/// Logs a formatted line at [`Level::Error`].
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => { $crate::host::log($crate::host::Level::Error, &::std::format!($($arg)+)) };
}
