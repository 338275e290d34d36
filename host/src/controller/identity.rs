//! Acting as a plugin's ServiceAccount: a client made from the host's own configuration that sends
//! `Impersonate-User: system:serviceaccount:<namespace>:<name>`, and the caches it watches with.
//!
//! The API server authorizes every request made with it as that account (the host's own account needs the
//! `impersonate` verb on it) and records both in the audit log: `user` is the host, `impersonatedUser` the plugin's
//! account. No `Impersonate-Group` is sent: for a ServiceAccount user the API server adds the account's groups
//! itself (`system:serviceaccounts`, `system:serviceaccounts:<namespace>`, `system:authenticated`), so the host
//! needs no right to impersonate groups.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use kube::api::{Api, PostParams};

use crate::delivery::ServiceAccountRef;
use crate::runtime::Caches;

/// Makes, and keeps for the term, one set of caches per ServiceAccount plugins act as. Cheap to clone.
#[derive(Clone)]
pub struct Impersonation {
    config: kube::Config,
    /// The host's own client: asks whether the host may impersonate an account.
    host: kube::Client,
    accounts: Arc<Mutex<HashMap<ServiceAccountRef, Caches>>>,
}

impl std::fmt::Debug for Impersonation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Impersonation").finish_non_exhaustive()
    }
}

impl Impersonation {
    /// Clients made from `config`, the configuration of the host's own client `host`.
    pub fn new(config: kube::Config, host: kube::Client) -> Self {
        Self {
            config,
            host,
            accounts: Arc::default(),
        }
    }

    /// The caches of plugins acting as `account`, shared by every plugin that names it; their client impersonates
    /// the account. Fails, saying what to grant, when the API server does not let the host impersonate it.
    pub async fn caches(&self, account: &ServiceAccountRef) -> Result<Caches, String> {
        self.may_impersonate(account).await?;
        let mut accounts = self.accounts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(caches) = accounts.get(account) {
            return Ok(caches.clone());
        }
        let client = crate::client::host_client(impersonating(self.config.clone(), account))
            .map_err(|error| crate::error_chain(&error))?;
        let caches = Caches::new(client).acting_as(&account.to_string());
        accounts.insert(account.clone(), caches.clone());
        tracing::info!(service_account = %account, "acting as a ServiceAccount for the plugins that name it");
        Ok(caches)
    }

    /// Asks the API server (a SelfSubjectAccessReview) whether the host may impersonate `account`, so that a plugin
    /// naming an account it may not act as is refused when loaded rather than failing every request. A server
    /// without the authorization API (no authorization to ask about) lets it through; so does a failed question,
    /// since the requests made as the account then fail visibly anyway.
    async fn may_impersonate(&self, account: &ServiceAccountRef) -> Result<(), String> {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some("impersonate".into()),
                    resource: Some("serviceaccounts".into()),
                    namespace: Some(account.namespace.clone()),
                    name: Some(account.name.clone()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        match Api::<SelfSubjectAccessReview>::all(self.host.clone())
            .create(&PostParams::default(), &review)
            .await
        {
            Ok(answer) if answer.status.as_ref().is_some_and(|status| status.allowed) => Ok(()),
            Ok(answer) => {
                let reason = answer
                    .status
                    .and_then(|status| status.reason)
                    .filter(|reason| !reason.is_empty())
                    .map(|reason| format!(" ({reason})"))
                    .unwrap_or_default();
                Err(format!(
                    "the host's own account may not impersonate it{reason}: grant it `impersonate` on serviceaccounts \
                     named {} in namespace {} (docs/deploy.md, \"Plugins acting as their own ServiceAccount\")",
                    account.name, account.namespace
                ))
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => {
                tracing::warn!(service_account = %account, error = %crate::error_chain(&error), "could not ask whether the host may impersonate the ServiceAccount; using it");
                Ok(())
            }
        }
    }
}

/// `config` changed to impersonate `account` (any impersonation it had is replaced).
fn impersonating(mut config: kube::Config, account: &ServiceAccountRef) -> kube::Config {
    config.auth_info.impersonate = Some(account.username());
    config.auth_info.impersonate_groups = None;
    config.auth_info.impersonate_uid = None;
    config.auth_info.impersonate_user_extra = None;
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_impersonates_the_account_and_nothing_else() {
        let mut config = kube::Config::new("https://127.0.0.1:6443".parse().expect("a URL"));
        config.auth_info.impersonate_groups = Some(vec!["system:masters".into()]);
        let account = ServiceAccountRef::parse("team-a/echo").expect("valid");
        let config = impersonating(config, &account);
        assert_eq!(
            config.auth_info.impersonate.as_deref(),
            Some("system:serviceaccount:team-a:echo")
        );
        assert_eq!(
            config.auth_info.impersonate_groups, None,
            "the API server adds the account's groups"
        );
    }
}
