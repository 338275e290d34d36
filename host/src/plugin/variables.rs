//! The host side of the `variables` WIT interface (contract 0.2): values the plugin's settings name, each one key
//! of a Kubernetes Secret, read by name. The plugin sees values, never Secret objects; no value is ever logged.

use std::collections::BTreeMap;
use std::fmt;

use super::bindings::v0_2::wasm_reconciler::plugin0_2_0::variables;
use super::call::CallState;

/// One key of one Secret: `secret/key` (in the host's namespace) or `namespace/secret/key`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SecretKeyRef {
    /// The Secret's namespace; `None` is the host's own namespace.
    pub namespace: Option<String>,
    /// The Secret's name.
    pub name: String,
    /// The key in its `data`.
    pub key: String,
}

impl SecretKeyRef {
    /// Parses `secret/key` or `namespace/secret/key`.
    ///
    /// ```
    /// # use wasm_reconciler::plugin::SecretKeyRef;
    /// let reference = SecretKeyRef::parse("pdns-api/api-key").unwrap();
    /// assert_eq!((reference.name.as_str(), reference.key.as_str()), ("pdns-api", "api-key"));
    /// assert!(SecretKeyRef::parse("just-a-name").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split('/').collect();
        let (namespace, name, key) = match parts.as_slice() {
            [name, key] => (None, *name, *key),
            [namespace, name, key] => (Some(*namespace), *name, *key),
            _ => return Err(format!("{text:?} is not `secret/key` or `namespace/secret/key`")),
        };
        if let Some(namespace) = namespace
            && !is_dns_label(namespace)
        {
            return Err(format!("{text:?}: {namespace:?} is not a namespace name"));
        }
        if !is_dns_subdomain(name) {
            return Err(format!("{text:?}: {name:?} is not a Secret name"));
        }
        let key_ok =
            !key.is_empty() && key.len() <= 253 && key.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !key_ok {
            return Err(format!("{text:?}: {key:?} is not a Secret key"));
        }
        Ok(Self {
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            key: key.to_owned(),
        })
    }
}

impl fmt::Display for SecretKeyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}/{}", self.name, self.key),
            None => write!(f, "{}/{}", self.name, self.key),
        }
    }
}

/// RFC 1123 label: 1–63 lowercase alphanumerics or '-', alphanumeric at both ends.
pub(crate) fn is_dns_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 63
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// RFC 1123 subdomain: at most 253 characters of dot-separated labels.
pub(crate) fn is_dns_subdomain(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(is_dns_label)
}

/// Whether `name` can name a variable: a lower-case letter, then lower-case letters, digits and underscores.
pub fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|first| first.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Where variable values come from. `get` may block (it may read a Secret); it runs on the plugin's thread.
pub trait VariableSource: Send + Sync {
    /// The value of `name`; `Err` says what failed, naming the variable and its Secret, never a value.
    fn get(&self, name: &str) -> Result<String, String>;
}

/// The message for a variable the settings do not define.
pub(crate) fn undefined_variable(name: &str) -> String {
    format!("the plugin's settings define no variable {name:?} (settings.yaml `variables:`)")
}

/// No variables at all: what a plugin has during `describe()` and without `variables:` in its settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoVariables;

impl VariableSource for NoVariables {
    fn get(&self, name: &str) -> Result<String, String> {
        Err(undefined_variable(name))
    }
}

/// Values held in memory (`render`, plugin tests). Its `Debug` shows names only.
#[derive(Clone, Default)]
pub struct FixedVariables {
    values: BTreeMap<String, String>,
}

impl FixedVariables {
    /// Serves `values` by name.
    pub fn new(values: impl IntoIterator<Item = (String, String)>) -> Self {
        Self {
            values: values.into_iter().collect(),
        }
    }
}

impl fmt::Debug for FixedVariables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedVariables")
            .field("names", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl VariableSource for FixedVariables {
    fn get(&self, name: &str) -> Result<String, String> {
        self.values.get(name).cloned().ok_or_else(|| undefined_variable(name))
    }
}

impl variables::Host for CallState {
    fn get(&mut self, name: String) -> Result<String, String> {
        let source = self.variables.clone();
        let result = self.io_clock().measure(|| source.get(&name));
        if let Err(message) = &result {
            tracing::debug!(variable = %name, %message, "variable not available");
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_key_references_parse_with_or_without_namespace() {
        assert_eq!(
            SecretKeyRef::parse("dns/pdns-api/api-key").unwrap(),
            SecretKeyRef {
                namespace: Some("dns".into()),
                name: "pdns-api".into(),
                key: "api-key".into()
            }
        );
        assert_eq!(SecretKeyRef::parse("pdns-api/API_KEY.v1").unwrap().key, "API_KEY.v1");
        assert!(SecretKeyRef::parse("a/b/c/d").unwrap_err().contains("not `secret/key`"));
        assert!(
            SecretKeyRef::parse("Bad/key")
                .unwrap_err()
                .contains("not a Secret name")
        );
        assert!(
            SecretKeyRef::parse("ns_x/s/k")
                .unwrap_err()
                .contains("not a namespace name")
        );
        assert!(SecretKeyRef::parse("s/a key").unwrap_err().contains("not a Secret key"));
        assert_eq!(SecretKeyRef::parse("ns/s/k").unwrap().to_string(), "ns/s/k");
    }

    #[test]
    fn variable_names_are_lower_snake_case() {
        assert!(is_variable_name("api_key"));
        assert!(is_variable_name("k8s"));
        assert!(!is_variable_name("ApiKey"));
        assert!(!is_variable_name("_key"));
        assert!(!is_variable_name(""));
    }

    #[test]
    fn fixed_variables_hide_values_from_debug() {
        let variables = FixedVariables::new([("token".to_owned(), "s3cr3t".to_owned())]);
        assert_eq!(variables.get("token").unwrap(), "s3cr3t");
        assert!(
            variables
                .get("other")
                .unwrap_err()
                .contains("define no variable \"other\"")
        );
        assert!(!format!("{variables:?}").contains("s3cr3t"));
    }
}
