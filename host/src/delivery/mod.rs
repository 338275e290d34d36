//! Plugin delivery: where plugins come from (a directory, ConfigMaps carrying the component or a reference to an
//! OCI registry or URL), decoded, digest- and signature-checked into packages, and handed to an [`Installer`] — the
//! set of running plugins, which validates a version before it replaces the one serving.

pub mod artifact;
pub mod component_store;
pub mod configmap;
pub mod credentials;
pub mod directory;
pub mod package;
pub mod reference;
pub mod referenced;
pub mod registry;
pub mod revisions;
pub mod settings;
pub mod signature;

use std::future::Future;

pub use package::{PackageError, PluginPackage};
pub use reference::{OciReference, PluginReference};
pub use registry::{RegistryClient, RegistryOptions};
pub use settings::{
    PluginSettings, PreviewSettings, RolloutSettings, RolloutStep, ServiceAccountRef, SettingsError, Tolerance,
};
pub use signature::{PluginSigner, SignaturePolicy, TrustedKey};

use crate::plugin::LoadError;

/// What a new version did once installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// Same component, configuration and settings: nothing to do.
    Unchanged,
    /// A new controller started.
    Started,
    /// The running controller now serves the new version.
    Swapped,
    /// The kinds or settings changed: the controller restarted with the new version.
    Restarted,
    /// The plugin is pinned to one of its revisions: this version is kept, and serves once the pin is removed.
    Held,
    /// Its settings declare a rollout: it serves a share of the primaries, growing step by step.
    Canary,
}

/// Why a version was refused; the previous one keeps serving.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The component did not load.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Compilation panicked or was cancelled.
    #[error("loading the plugin was interrupted: {0}")]
    Interrupted(String),
    /// The plugin is pinned to a revision that cannot be loaded from the cluster.
    #[error("the plugin is pinned to revision {revision}, which cannot be served")]
    Pinned {
        /// The revision pinned.
        revision: i64,
        /// Why it cannot be served.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The preview gate held the version: it fails on primaries the serving version reconciles (see
    /// [`PreviewSettings`]).
    #[error("held by the preview gate: {0}")]
    Held(String),
    /// The ServiceAccount its settings name cannot be acted as.
    #[error("acting as ServiceAccount {account}: {message}")]
    Identity {
        /// The account, `namespace/name`.
        account: String,
        /// Why not.
        message: String,
    },
}

/// Where plugin sources deliver packages: the set of running plugins
/// ([`Manager`](crate::controller::Manager)).
pub trait Installer: Send + Sync {
    /// Validates `package` and makes it the serving version of plugin `name`; on error the previous version keeps
    /// serving.
    fn install(
        &self,
        name: &str,
        package: PluginPackage,
    ) -> impl Future<Output = Result<Installed, InstallError>> + Send;

    /// Stops and forgets plugin `name`; whether it was installed.
    fn uninstall(&self, name: &str) -> impl Future<Output = bool> + Send;

    /// Records a version of plugin `name` refused before it reached [`install`](Self::install) (its package did
    /// not decode: digest, gzip, size, configuration or settings; or it could not be pulled), and why.
    fn record_refused(&self, name: &str, message: &str);

    /// Records where plugin `name` comes from, as users name it: `ConfigMap wasm-reconciler/certs`, a reference, a
    /// directory.
    fn record_source(&self, name: &str, source: &str) {
        let _ = (name, source);
    }
}
