//! `wasm-reconciler plugin history | rollback | unpin`: a plugin's revisions in the cluster, and pinning it to one
//! (a rollback) or back to its source's newest version. They change only the WasmPlugin's `spec.revision`; the
//! host does the rest (docs/deploy.md, "Changing a plugin safely").

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

use crate::controller::pins::pinned_revision;
use crate::delivery::revisions::{Revision, RevisionStore};
use crate::lease::Fence;
use crate::telemetry::plugin_status;

/// Where the host runs: the cluster and its namespace.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// Kubeconfig to use (default: `KUBECONFIG`, then the in-cluster service account, then `~/.kube/config`).
    #[arg(long, env = "KUBECONFIG", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The host's namespace, where its WasmPlugins and revisions are (`default` under `dev`).
    #[arg(short, long, env = "POD_NAMESPACE", default_value = "wasm-reconciler")]
    pub namespace: String,
}

/// Arguments of `plugin history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The plugin.
    pub plugin: String,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Arguments of `plugin rollback`.
#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// The plugin.
    pub plugin: String,
    /// The revision to serve (default: the one before the serving revision).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
    pub to_revision: Option<i64>,
    /// How long to wait for the host to serve it (0: do not wait).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub timeout: u64,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Arguments of `plugin unpin`.
#[derive(Debug, Args)]
pub struct UnpinArgs {
    /// The plugin.
    pub plugin: String,
    /// How long to wait for the host to serve the source's newest version (0: do not wait).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub timeout: u64,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

pub(super) struct Cluster {
    plugins: Api<DynamicObject>,
    pub(super) revisions: RevisionStore,
    namespace: String,
}

impl Cluster {
    pub(super) async fn connect(args: &ClusterArgs) -> Result<Self, Box<dyn std::error::Error>> {
        let config = super::run::config(args.kubeconfig.as_deref()).await?;
        let client = crate::client::host_client(config)?;
        Ok(Self {
            plugins: Api::namespaced_with(client.clone(), &args.namespace, &plugin_status::resource()),
            revisions: RevisionStore::new(client, &args.namespace, Fence::always_open()),
            namespace: args.namespace.clone(),
        })
    }

    /// The plugin's WasmPlugin, which the host writes once it knows the plugin.
    pub(super) async fn plugin(&self, name: &str) -> Result<DynamicObject, Box<dyn std::error::Error>> {
        match self.plugins.get_opt(name).await {
            Ok(Some(object)) => Ok(object),
            Ok(None) => Err(format!(
                "there is no WasmPlugin {name} in namespace {}: the host writes one for each plugin it knows (is the \
                 plugin delivered there, and the namespace the host's? see --namespace)",
                self.namespace
            )
            .into()),
            Err(kube::Error::Api(status)) if status.code == 404 => Err(format!(
                "the WasmPlugin CRD is not installed ({}); install deploy/wasmplugins-crd.yaml",
                status.message
            )
            .into()),
            Err(error) => Err(error.into()),
        }
    }

    async fn set_pin(&self, name: &str, revision: Option<i64>) -> Result<(), Box<dyn std::error::Error>> {
        let patch = json!({"spec": {"revision": revision}});
        self.plugins
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    /// Waits until the host reports `done` of the WasmPlugin, or says why not.
    async fn wait(
        &self,
        name: &str,
        timeout: u64,
        what: &str,
        done: impl Fn(&DynamicObject) -> bool,
    ) -> Result<(), Box<dyn std::error::Error>> {
        if timeout == 0 {
            return Ok(());
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
        loop {
            let object = self.plugin(name).await?;
            if done(&object) {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                let ready = object.data["status"]["conditions"]
                    .as_array()
                    .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Ready"))
                    .and_then(|ready| ready["message"].as_str())
                    .unwrap_or("no Ready condition");
                let refusal = object.data["status"]["lastRefusal"]["message"]
                    .as_str()
                    .map(|message| format!("; last refusal: {message}"))
                    .unwrap_or_default();
                return Err(format!("the host did not report {what} within {timeout}s: {ready}{refusal}").into());
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

pub(super) fn serving_revision(object: &DynamicObject) -> Option<i64> {
    object.data["status"]["revision"].as_i64()
}

/// `plugin history`: the plugin's revisions, oldest first, the serving one marked.
pub(super) async fn history(args: &HistoryArgs) -> Result<(), Box<dyn std::error::Error>> {
    let cluster = Cluster::connect(&args.cluster).await?;
    let revisions = cluster.revisions.list(&args.plugin).await?;
    if revisions.is_empty() {
        return Err(format!(
            "plugin {} has no revisions in namespace {} (the host records one for each version it accepts)",
            args.plugin, cluster.namespace
        )
        .into());
    }
    let plugin = cluster.plugins.get_opt(&args.plugin).await.ok().flatten();
    let serving = plugin.as_ref().and_then(serving_revision);
    let pinned = plugin.as_ref().and_then(pinned_revision);
    print!("{}", history_table(&revisions, serving, pinned));
    Ok(())
}

fn history_table(revisions: &[Revision], serving: Option<i64>, pinned: Option<i64>) -> String {
    let mut out = format!(
        "{:<9} {:<8} {:<20} {:<21} SOURCE\n",
        "REVISION", "SERVING", "DIGEST", "ACCEPTED"
    );
    for revision in revisions {
        let mark = match (Some(revision.number) == serving, Some(revision.number) == pinned) {
            (true, true) => "pinned",
            (true, false) => "yes",
            (false, true) => "pinned?",
            (false, false) => "",
        };
        let digest: String = revision.sha256.chars().take(19).collect();
        out.push_str(&format!(
            "{:<9} {:<8} {:<20} {:<21} {}\n",
            revision.number, mark, digest, revision.accepted, revision.source
        ));
    }
    out
}

/// `plugin rollback`: pins the plugin to a revision and waits until it serves.
pub(super) async fn rollback(args: &RollbackArgs) -> Result<(), Box<dyn std::error::Error>> {
    let cluster = Cluster::connect(&args.cluster).await?;
    let plugin = cluster.plugin(&args.plugin).await?;
    let revisions = cluster.revisions.list(&args.plugin).await?;
    let target = match args.to_revision {
        Some(number) => number,
        None => {
            let serving = serving_revision(&plugin).ok_or_else(|| {
                format!(
                    "plugin {} reports no serving revision; name one with --to-revision",
                    args.plugin
                )
            })?;
            revisions
                .iter()
                .map(|revision| revision.number)
                .filter(|number| *number < serving)
                .max()
                .ok_or_else(|| format!("plugin {} has no revision before {serving}", args.plugin))?
        }
    };
    // The host loads the revision itself; checking here turns a typo into an error rather than a pin that cannot
    // serve.
    cluster.revisions.load(&args.plugin, target).await?;
    cluster.set_pin(&args.plugin, Some(target)).await?;
    println!("plugin {} pinned to revision {target}", args.plugin);
    cluster
        .wait(
            &args.plugin,
            args.timeout,
            &format!("revision {target} serving"),
            |object| serving_revision(object) == Some(target),
        )
        .await?;
    if args.timeout > 0 {
        println!("plugin {} is serving revision {target}", args.plugin);
    }
    Ok(())
}

/// `plugin unpin`: removes the pin, so that the source's newest version serves again.
pub(super) async fn unpin(args: &UnpinArgs) -> Result<(), Box<dyn std::error::Error>> {
    let cluster = Cluster::connect(&args.cluster).await?;
    let plugin = cluster.plugin(&args.plugin).await?;
    if pinned_revision(&plugin).is_none() {
        println!("plugin {} is not pinned", args.plugin);
        return Ok(());
    }
    cluster.set_pin(&args.plugin, None).await?;
    println!("plugin {} unpinned", args.plugin);
    cluster
        .wait(
            &args.plugin,
            args.timeout,
            "its source's newest revision serving",
            |object| {
                let latest = object.data["status"]["latestRevision"].as_i64();
                pinned_revision(object).is_none() && latest.is_some() && serving_revision(object) == latest
            },
        )
        .await?;
    if args.timeout > 0 {
        let object = cluster.plugin(&args.plugin).await?;
        let serving = serving_revision(&object).map_or_else(|| "?".to_owned(), |n| n.to_string());
        println!("plugin {} is serving revision {serving}", args.plugin);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_marks_the_serving_and_pinned_revisions() {
        let revision = |number: i64| Revision {
            name: format!("p-{number}"),
            number,
            sha256: format!("sha256:{number:0>64}"),
            source: format!("ConfigMap ns/p at resourceVersion {number}"),
            accepted: "2026-11-28T10:00:00Z".into(),
        };
        let table = history_table(&[revision(1), revision(2), revision(3)], Some(1), Some(1));
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4, "{table}");
        assert!(lines[1].starts_with("1         pinned"), "{table}");
        assert!(lines[2].starts_with("2                "), "{table}");
        assert!(lines[3].ends_with("ConfigMap ns/p at resourceVersion 3"), "{table}");
    }
}
