//! Variables backed by Kubernetes Secrets: each variable names one key of one Secret, read with the host's client
//! (RBAC: `get` on those Secrets) when the plugin asks, and kept for a few seconds so a burst of reconciles reads a
//! Secret once. Values never reach a log line, an error message or `Debug` output.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use super::variables::{SecretKeyRef, VariableSource, undefined_variable};

/// How long a Secret read is reused: a rotated Secret reaches reconciles within this.
const FRESH_FOR: Duration = Duration::from_secs(5);

/// The `data` of one Secret as last read (`None`: it did not exist).
type SecretData = Option<BTreeMap<String, Vec<u8>>>;

/// A plugin's variables, read from Secrets through the host's Kubernetes client.
pub struct SecretVariables {
    client: kube::Client,
    /// Where a reference without a namespace reads its Secret.
    namespace: String,
    runtime: tokio::runtime::Handle,
    variables: BTreeMap<String, SecretKeyRef>,
    read: Mutex<HashMap<(String, String), (Instant, SecretData)>>,
}

impl fmt::Debug for SecretVariables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretVariables")
            .field("variables", &self.variables)
            .finish_non_exhaustive()
    }
}

impl SecretVariables {
    /// Serves `variables` through `client`. A reference without a namespace reads its Secret in `namespace` (the
    /// host's, `run --namespace`), or without one in the client's default namespace (the service account's in a
    /// cluster, the kubeconfig's otherwise). Call it on the async runtime: reads block on it from the plugin's
    /// thread.
    pub fn new(client: kube::Client, namespace: Option<String>, variables: BTreeMap<String, SecretKeyRef>) -> Self {
        Self {
            namespace: namespace.unwrap_or_else(|| client.default_namespace().to_owned()),
            client,
            runtime: tokio::runtime::Handle::current(),
            variables,
            read: Mutex::default(),
        }
    }

    fn secret(&self, namespace: &str, name: &str) -> Result<SecretData, kube::Error> {
        let key = (namespace.to_owned(), name.to_owned());
        if let Some((read_at, data)) = self.read.lock().unwrap_or_else(PoisonError::into_inner).get(&key)
            && read_at.elapsed() < FRESH_FOR
        {
            return Ok(data.clone());
        }
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        let secret = self.runtime.block_on(api.get_opt(name))?;
        let data = secret.map(|secret| {
            secret
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(key, value)| (key, value.0))
                .collect()
        });
        self.read
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, (Instant::now(), data.clone()));
        Ok(data)
    }
}

impl VariableSource for SecretVariables {
    fn get(&self, name: &str) -> Result<String, String> {
        let reference = self.variables.get(name).ok_or_else(|| undefined_variable(name))?;
        let namespace = reference.namespace.as_deref().unwrap_or(&self.namespace);
        let secret = format!("Secret {namespace}/{}", reference.name);
        let data = self.secret(namespace, &reference.name).map_err(|error| match &error {
            kube::Error::Api(status) if status.is_forbidden() => format!(
                "variable {name:?}: the host may not read {secret}: grant it `get` on that Secret (docs/deploy.md)"
            ),
            _ => format!(
                "variable {name:?}: reading {secret} failed: {}",
                crate::error_chain(&error)
            ),
        })?;
        let data = data.ok_or_else(|| format!("variable {name:?}: {secret} does not exist"))?;
        let value = data
            .get(&reference.key)
            .ok_or_else(|| format!("variable {name:?}: {secret} has no key {:?}", reference.key))?;
        String::from_utf8(value.clone()).map_err(|_| {
            format!(
                "variable {name:?}: key {:?} of {secret} is not UTF-8 text",
                reference.key
            )
        })
    }
}
