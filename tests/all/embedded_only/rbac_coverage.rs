//! Least privilege, checked: the host runs `deploy/`'s example plugins through a typical life cycle behind a
//! recording front, and every request it made must be granted by `deploy/`'s RBAC to its ServiceAccount, including
//! what admission checks on top (`create` for an apply that creates, `delete` on an object whose ownerReferences
//! change, `update` on the owner's `finalizers` for `blockOwnerDeletion`).

use std::collections::{BTreeMap, BTreeSet};

use kube::core::GroupVersionKind;
use serde_json::json;

use crate::deploy::{complete_deploy_copy, run_life_cycle};
use crate::harness::{Cluster, Host};
use crate::plugin_configmaps::HOST_NAMESPACE;
use crate::rbac_grants::Grants;
use crate::request_info::{RequestInfo, ResourceAttributes};
use crate::request_recorder::{RecordedRequest, RecordingFront};
use crate::telemetry_probe::free_local_addr;

/// The ServiceAccount `deploy/` runs the host as.
const SERVICE_ACCOUNT: (&str, &str) = ("wasm-reconciler", "wasm-reconciler");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_the_host_makes_is_granted_by_deploy_rbac() -> anyhow::Result<()> {
    let cluster = Cluster::start_embedded(None).await?;
    let deploy = complete_deploy_copy(cluster.dir.path())?;
    // Installed as an administrator would (not recorded): RBAC, CRDs and the packed example plugins.
    cluster.kubectl_ok(&["apply", "--server-side", "-k", &deploy.display().to_string()]);
    let admin = cluster.client().await?;
    let front = RecordingFront::start(cluster.embedded(), cluster.dir.path()).await?;
    let options = Host::cluster_options(HOST_NAMESPACE, "wasm-reconciler-5d8f7-x2x9q", Some(free_local_addr()));
    let host = Host::start_with_kubeconfig(&front.kubeconfig, options).await?;

    run_life_cycle(&admin).await?;
    host.stop().await?;

    let grants = Grants::for_service_account(&deploy, SERVICE_ACCOUNT.0, SERVICE_ACCOUNT.1)?;
    assert!(
        grants.rule_count() > 0,
        "deploy/ binds no rules to the host's ServiceAccount"
    );
    let requests = front.recording.requests();
    let mut needed: BTreeMap<RequestInfo, String> = BTreeMap::new();
    for request in &requests {
        for (info, because) in authorizations(&admin, request).await? {
            needed.entry(info).or_insert(because);
        }
    }
    let denied: Vec<String> = needed
        .iter()
        .filter(|(info, _)| !grants.allows(info))
        .map(|(info, because)| format!("{} (for {because})", describe(info)))
        .collect();
    println!("permissions the host used ({} requests):", requests.len());
    let used: BTreeSet<String> = needed.keys().map(describe_unnamed).collect();
    for permission in &used {
        println!("  {permission}");
    }
    let unused = grants.unused(needed.keys());
    if !unused.is_empty() {
        println!("granted but never used in this life cycle:");
        for rule in &unused {
            println!("  {rule}");
        }
    }
    assert!(
        denied.is_empty(),
        "deploy/ RBAC does not grant what the host needs:\n  {}",
        denied.join("\n  ")
    );

    // The life cycle exercised what it claims to: otherwise the check above proves little.
    for expected in [
        "watch  configmaps in wasm-reconciler",
        "watch  configmaps",
        "watch examples.wasm-reconciler.io configmapsets",
        "watch examples.wasm-reconciler.io webapps",
        "create events.k8s.io events in wasm-reconciler",
        "create events.k8s.io events in demo",
        "patch examples.wasm-reconciler.io configmapsets/status in demo",
        "patch examples.wasm-reconciler.io configmapsets in demo",
        "update examples.wasm-reconciler.io configmapsets/finalizers in demo",
        "update examples.wasm-reconciler.io webapps/finalizers in demo",
        "create  configmaps in demo",
        "delete  configmaps in demo",
        "create apps deployments in demo",
        "update coordination.k8s.io leases in wasm-reconciler",
    ] {
        assert!(
            used.contains(expected),
            "the life cycle never needed `{expected}`; it used:\n{used:#?}"
        );
    }
    Ok(())
}

/// What authorizing `request` takes: the request itself, plus what admission checks for it.
async fn authorizations(admin: &kube::Client, request: &RecordedRequest) -> anyhow::Result<Vec<(RequestInfo, String)>> {
    let info = RequestInfo::resolve(&request.method, &request.path, &request.query);
    let because = format!("{} {}", request.method, request.path);
    let mut needed = vec![(info.clone(), because.clone())];
    let RequestInfo::Resource(attributes) = info else {
        return Ok(needed);
    };
    let created = request.method == "POST" || request.status == 201;
    // An apply or update that creates the object is authorized as a create too.
    if created && attributes.verb != "create" {
        needed.push((
            RequestInfo::Resource(ResourceAttributes {
                verb: "create".into(),
                ..attributes.clone()
            }),
            format!("{because}, which created the object"),
        ));
    }
    // The OwnerReferencesPermissionEnforcement admission plugin.
    let references = request
        .body
        .as_ref()
        .and_then(|body| body["metadata"]["ownerReferences"].as_array().cloned())
        .unwrap_or_default();
    if !references.is_empty() && !created {
        needed.push((
            RequestInfo::Resource(ResourceAttributes {
                verb: "delete".into(),
                ..attributes.clone()
            }),
            format!("{because}, which sets ownerReferences"),
        ));
    }
    for reference in references.iter().filter(|r| r["blockOwnerDeletion"] == json!(true)) {
        let api_version = reference["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let kind = reference["kind"].as_str().unwrap_or_default();
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, _) = kube::discovery::pinned_kind(admin, &gvk).await?;
        needed.push((
            RequestInfo::Resource(ResourceAttributes {
                verb: "update".into(),
                api_group: group.to_owned(),
                resource: resource.plural,
                subresource: "finalizers".into(),
                namespace: attributes.namespace.clone(),
                name: reference["name"].as_str().unwrap_or_default().to_owned(),
            }),
            format!("{because}, which blocks its owner's deletion"),
        ));
    }
    Ok(needed)
}

/// `verb group resource[/subresource] [in namespace] [name]`.
fn describe(info: &RequestInfo) -> String {
    match info {
        RequestInfo::Resource(a) => format!("{} {}", describe_unnamed(info), a.name).trim_end().to_owned(),
        RequestInfo::NonResource { .. } => describe_unnamed(info),
    }
}

/// `verb group resource[/subresource] [in namespace]`.
fn describe_unnamed(info: &RequestInfo) -> String {
    match info {
        RequestInfo::Resource(a) => {
            let resource = if a.subresource.is_empty() {
                a.resource.clone()
            } else {
                format!("{}/{}", a.resource, a.subresource)
            };
            let scope = if a.namespace.is_empty() {
                String::new()
            } else {
                format!(" in {}", a.namespace)
            };
            format!("{} {} {resource}{scope}", a.verb, a.api_group)
        }
        RequestInfo::NonResource { verb, path } => format!("{verb} {path}"),
    }
}
