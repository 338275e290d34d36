//! Registry credentials from a `kubernetes.io/dockerconfigjson` pull secret (or a Docker `config.json`): the
//! `auths` entries, matched to a registry by its `host[:port]`.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

/// The Secret type of a pull secret.
pub const DOCKER_CONFIG_JSON_TYPE: &str = "kubernetes.io/dockerconfigjson";
/// The key of a pull secret's document.
pub const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";

/// Why credentials are refused.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// Not a Docker config document.
    #[error("not a Docker config document (`{{\"auths\": {{...}}}}`): {0}")]
    Parse(String),
    /// An entry has neither `auth` nor `username` and `password`.
    #[error("the entry for {registry:?} has no usable credentials: {message}")]
    Entry {
        /// The entry's key.
        registry: String,
        /// What is wrong.
        message: String,
    },
}

/// Credentials per registry.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RegistryCredentials {
    /// `host[:port]` → (username, password).
    entries: BTreeMap<String, (String, String)>,
}

impl std::fmt::Debug for RegistryCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryCredentials")
            .field("registries", &self.entries.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[derive(Deserialize)]
struct DockerConfig {
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(Deserialize)]
struct AuthEntry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

impl RegistryCredentials {
    /// Parses a Docker config document (`{"auths": {"registry": {"auth": "base64(user:password)"}}}`; `username`
    /// and `password` instead of `auth` work too).
    pub fn parse(json: &[u8]) -> Result<Self, CredentialsError> {
        let config: DockerConfig = serde_json::from_slice(json).map_err(|e| CredentialsError::Parse(e.to_string()))?;
        let mut entries = BTreeMap::new();
        for (key, entry) in config.auths {
            let invalid = |message: &str| CredentialsError::Entry {
                registry: key.clone(),
                message: message.to_owned(),
            };
            let pair = match (entry.auth.filter(|a| !a.is_empty()), entry.username, entry.password) {
                (Some(auth), _, _) => {
                    let decoded = BASE64
                        .decode(auth.trim())
                        .map_err(|_| invalid("`auth` is not base64"))?;
                    let text = String::from_utf8(decoded).map_err(|_| invalid("`auth` is not UTF-8"))?;
                    let (user, password) = text
                        .split_once(':')
                        .ok_or_else(|| invalid("`auth` is not base64 of user:password"))?;
                    (user.to_owned(), password.to_owned())
                }
                (None, Some(user), Some(password)) => (user, password),
                _ => return Err(invalid("it needs `auth`, or `username` and `password`")),
            };
            entries.insert(normalize(&key), pair);
        }
        Ok(Self { entries })
    }

    /// The credentials for `registry` (`host[:port]`); anonymous when none match.
    pub fn for_registry(&self, registry: &str) -> RegistryAuth {
        match self.entries.get(&normalize(registry)) {
            Some((user, password)) => RegistryAuth::Basic(user.clone(), password.clone()),
            None => RegistryAuth::Anonymous,
        }
    }

    /// Whether credentials for `registry` are present.
    pub fn has(&self, registry: &str) -> bool {
        self.entries.contains_key(&normalize(registry))
    }
}

/// `https://registry:5000/v1/` → `registry:5000`.
fn normalize(key: &str) -> String {
    let key = key.trim();
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    key.split('/').next().unwrap_or(key).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_and_username_password_entries() {
        let json = format!(
            r#"{{"auths": {{
                "https://registry.example.com/v1/": {{"auth": "{}"}},
                "127.0.0.1:5000": {{"username": "bob", "password": "hunter2"}}
            }}}}"#,
            BASE64.encode("alice:pa:ss")
        );
        let credentials = RegistryCredentials::parse(json.as_bytes()).unwrap();
        assert_eq!(
            credentials.for_registry("registry.example.com"),
            RegistryAuth::Basic("alice".into(), "pa:ss".into())
        );
        assert_eq!(
            credentials.for_registry("127.0.0.1:5000"),
            RegistryAuth::Basic("bob".into(), "hunter2".into())
        );
        assert_eq!(credentials.for_registry("127.0.0.1:5001"), RegistryAuth::Anonymous);
        assert!(
            !format!("{credentials:?}").contains("hunter2"),
            "Debug leaks no password"
        );
    }

    #[test]
    fn broken_documents_are_refused() {
        assert!(matches!(
            RegistryCredentials::parse(b"{}"),
            Err(CredentialsError::Parse(_))
        ));
        let error = RegistryCredentials::parse(br#"{"auths": {"r": {"auth": "bm9jb2xvbg=="}}}"#).unwrap_err();
        assert!(error.to_string().contains("user:password"), "{error}");
        let error = RegistryCredentials::parse(br#"{"auths": {"r": {"username": "u"}}}"#).unwrap_err();
        assert!(error.to_string().contains("needs `auth`"), "{error}");
    }
}
