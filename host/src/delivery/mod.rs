//! Plugin delivery: where plugins come from (a directory, ConfigMaps) and how a new version replaces a running
//! one only after it validated.

pub mod configmap;
pub mod directory;
pub mod package;
pub mod settings;

pub use package::{PackageError, PluginPackage};
pub use settings::{PluginSettings, SettingsError};
