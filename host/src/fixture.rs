//! World-view fixtures: what the host would observe around one primary, as `render` and `plugin check` read it.
//!
//! A fixture is a YAML (or JSON) document:
//!
//! ```yaml
//! primary: {apiVersion: ..., kind: ..., metadata: {...}, spec: {...}}
//! children: []     # objects controlled by the primary, as the host would observe them
//! objects: []      # further objects `get`/`list` can see (primary and children are visible too)
//! config: {}       # plugin configuration
//! deleting: false  # the primary is being deleted and carries the plugin's finalizer
//! attempt: 0       # consecutive failures so far
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::plugin::Gvk;

/// A world-view fixture.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldFixture {
    /// The primary object.
    pub primary: Value,
    /// Observed children.
    #[serde(default)]
    pub children: Vec<Value>,
    /// Further objects visible to `get` and `list`.
    #[serde(default)]
    pub objects: Vec<Value>,
    /// Plugin configuration.
    #[serde(default)]
    pub config: Option<Value>,
    /// Whether the primary is being deleted.
    #[serde(default)]
    pub deleting: bool,
    /// Consecutive failures so far.
    #[serde(default)]
    pub attempt: u32,
}

/// Why a fixture (or a configuration file) could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// A file could not be read.
    #[error("reading {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A fixture or config file does not parse.
    #[error("{path} is not a valid {what}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it should have been.
        what: &'static str,
        /// The cause.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// The fixture is well-formed YAML but not a usable world.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// Reads a file, naming it on failure.
pub fn read(path: &Path) -> Result<Vec<u8>, FixtureError> {
    std::fs::read(path).map_err(|source| FixtureError::Read {
        path: path.into(),
        source,
    })
}

/// Reads and parses a YAML (or JSON) file as `what`.
pub fn read_yaml<T: serde::de::DeserializeOwned>(path: &Path, what: &'static str) -> Result<T, FixtureError> {
    serde_saphyr::from_slice(&read(path)?).map_err(|source| FixtureError::Parse {
        path: path.into(),
        what,
        source: Box::new(source),
    })
}

impl WorldFixture {
    /// Reads the fixture at `path` and, if given, the plugin configuration at `config` (which replaces the
    /// fixture's), and checks that it describes a world: a primary with `apiVersion` and `kind`, an object as
    /// configuration.
    pub fn load(path: &Path, config: Option<&Path>) -> Result<Self, FixtureError> {
        let mut fixture: WorldFixture = read_yaml(path, "world fixture")?;
        if let Some(config) = config {
            fixture.config = Some(read_yaml(config, "plugin configuration")?);
        }
        let invalid = |message: &str| FixtureError::Invalid {
            path: path.into(),
            message: message.into(),
        };
        if Gvk::of_object(&fixture.primary).is_none() {
            return Err(invalid("`primary` needs `apiVersion` and `kind`"));
        }
        if !fixture.config.as_ref().is_none_or(Value::is_object) {
            return Err(invalid("the plugin configuration must be an object"));
        }
        Ok(fixture)
    }

    /// The plugin configuration: the fixture's, or `{}`.
    pub fn config(&self) -> Value {
        self.config.clone().unwrap_or_else(|| Value::Object(Default::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_fixture_loads_with_its_configuration_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let world = write(
            dir.path(),
            "w.yaml",
            "primary: {apiVersion: ex.io/v1, kind: Foo, metadata: {name: a}}\nconfig: {x: 1}\n",
        );
        assert_eq!(WorldFixture::load(&world, None).unwrap().config()["x"], 1);
        let config = write(dir.path(), "c.yaml", "y: 2\n");
        let fixture = WorldFixture::load(&world, Some(&config)).unwrap();
        assert_eq!(fixture.config(), serde_json::json!({"y": 2}));
    }

    #[test]
    fn a_broken_fixture_is_refused_naming_the_file_and_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let no_kind = write(dir.path(), "a.yaml", "primary: {metadata: {name: a}}\n");
        let error = WorldFixture::load(&no_kind, None).unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("a.yaml: `primary` needs `apiVersion` and `kind`"),
            "{error}"
        );
        let unknown = write(
            dir.path(),
            "b.yaml",
            "primary: {apiVersion: v1, kind: X}\nchildern: []\n",
        );
        let error = WorldFixture::load(&unknown, None).unwrap_err();
        assert!(matches!(error, FixtureError::Parse { .. }), "{error}");
        let list_config = write(
            dir.path(),
            "c.yaml",
            "primary: {apiVersion: v1, kind: X}\nconfig: [1]\n",
        );
        let error = WorldFixture::load(&list_config, None).unwrap_err();
        assert!(error.to_string().contains("must be an object"), "{error}");
        assert!(matches!(
            WorldFixture::load(&dir.path().join("missing.yaml"), None),
            Err(FixtureError::Read { .. })
        ));
    }
}
