//! Writing a kubeconfig that points kubectl (and kube clients) at this server.

use std::path::Path;

/// Name of the cluster, user and context in written kubeconfigs.
pub const CONTEXT_NAME: &str = "wasm-reconciler";

/// Writing the kubeconfig failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot write kubeconfig {path}")]
pub struct KubeconfigError {
    /// The file.
    pub path: String,
    /// Cause.
    #[source]
    pub source: std::io::Error,
}

/// The kubeconfig text for a server URL and optional bearer token.
pub fn render(server_url: &str, token: Option<&str>) -> String {
    let user = match token {
        Some(token) => format!("    token: {token}\n"),
        None => "    {}\n".to_string(),
    };
    let user = if token.is_some() { user } else { String::new() };
    let user_block = if user.is_empty() {
        "  user: {}\n".to_string()
    } else {
        format!("  user:\n{user}")
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {CONTEXT_NAME}\n  cluster:\n    server: {server_url}\ncontexts:\n- name: {CONTEXT_NAME}\n  context:\n    cluster: {CONTEXT_NAME}\n    user: {CONTEXT_NAME}\n    namespace: default\ncurrent-context: {CONTEXT_NAME}\nusers:\n- name: {CONTEXT_NAME}\n{user_block}preferences: {{}}\n"
    )
}

/// Write a kubeconfig (context, cluster and user named `wasm-reconciler`), creating parent directories.
pub fn write_kubeconfig(path: &Path, server_url: &str, token: Option<&str>) -> Result<(), KubeconfigError> {
    let error = |source| KubeconfigError {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent).map_err(error)?;
    }
    std::fs::write(path, render(server_url, token)).map_err(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_is_valid_yaml_with_token() {
        let text = render("http://127.0.0.1:1234", Some("secret"));
        let parsed: serde_json::Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(parsed["current-context"], CONTEXT_NAME);
        assert_eq!(parsed["clusters"][0]["cluster"]["server"], "http://127.0.0.1:1234");
        assert_eq!(parsed["users"][0]["user"]["token"], "secret");
        let anonymous: serde_json::Value = serde_yaml::from_str(&render("http://x", None)).unwrap();
        assert!(anonymous["users"][0]["user"].as_object().unwrap().is_empty());
    }
}
