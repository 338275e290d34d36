//! Each plugin acting as its own ServiceAccount, set up the way an operator does: `deploy/` with its
//! `plugin-identity` Component, the host running as `deploy/`'s ServiceAccount (its token, not an administrator).
//! A platform team confines the configmapset plugin's writes to one namespace; its outcome for a ConfigMapSet in
//! another namespace asks for ConfigMaps there anyway, and the API server refuses them: the real `Forbidden` on the
//! set's `Reconciled` condition, nothing written. The audit log attributes every write made for a plugin to its
//! account. A plugin naming an account the host may not impersonate is refused when loaded, and its previous
//! version keeps serving.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use super::rbac::service_account_kubeconfig;
use crate::audit_log;
use crate::deploy::complete_deploy_copy;
use crate::harness::{Cluster, RealOptions, condition, wait_for};
use crate::host_process::HostProcess;
use crate::kinds::{
    configmapset, configmapset_resource, create_namespace, create_when_served, failed_with, namespaced, reconciled,
    wait_event, wait_object, wait_set_ready, webapp_resource,
};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, plugin_events, wait_plugin_loaded};

const ALLOWED: &str = "team-a";
const OTHER: &str = "team-b";
/// The host's own user, and the users its plugins act as (deploy/plugin-identity).
const HOST: &str = "system:serviceaccount:wasm-reconciler:wasm-reconciler";
const CONFIGMAPSET: &str = "system:serviceaccount:wasm-reconciler:plugin-configmapset";
const WEBAPP: &str = "system:serviceaccount:wasm-reconciler:plugin-webapp";

/// What the platform team grants the configmapset plugin's account instead of `deploy/`'s ClusterRole: reading
/// ConfigMaps everywhere (its cache of the kind it owns watches them cluster-wide), writing them only in
/// [`ALLOWED`].
async fn confine_configmapset(admin: &kube::Client) -> anyhow::Result<()> {
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let mut role = roles.get("wasm-reconciler-plugin-configmapset").await?;
    for rule in role.rules.iter_mut().flatten() {
        if rule.resources.iter().flatten().any(|resource| resource == "configmaps") {
            rule.verbs = vec!["get".into(), "list".into(), "watch".into()];
        }
    }
    roles
        .replace("wasm-reconciler-plugin-configmapset", &PostParams::default(), &role)
        .await?;
    let writes: Role = serde_json::from_value(json!({
        "metadata": {"name": "configmapset-writes", "namespace": ALLOWED},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "patch", "update", "delete"]}],
    }))?;
    Api::<Role>::namespaced(admin.clone(), ALLOWED)
        .create(&PostParams::default(), &writes)
        .await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "configmapset-writes", "namespace": ALLOWED},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmapset-writes"},
        "subjects": [{"kind": "ServiceAccount", "name": "plugin-configmapset", "namespace": HOST_NAMESPACE}],
    }))?;
    Api::<RoleBinding>::namespaced(admin.clone(), ALLOWED)
        .create(&PostParams::default(), &binding)
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_plugin_acts_as_its_own_service_account_and_cannot_write_beyond_its_rbac() -> anyhow::Result<()> {
    let cluster = Cluster::start_real_with(&RealOptions {
        audit: true,
        ..RealOptions::default()
    })
    .await?;
    let dir = cluster.dir.path();
    complete_deploy_copy(dir)?;
    let overlay = dir.join("identity");
    std::fs::create_dir_all(&overlay)?;
    std::fs::write(
        overlay.join("kustomization.yaml"),
        "resources: [../deploy]\ncomponents: [../deploy/plugin-identity]\n",
    )?;
    cluster.kubectl_ok(&["apply", "--server-side", "-k", &overlay.display().to_string()]);
    let admin = cluster.client().await?;
    create_namespace(&admin, ALLOWED).await?;
    create_namespace(&admin, OTHER).await?;
    confine_configmapset(&admin).await?;

    let kubeconfig = service_account_kubeconfig(&cluster, dir)?;
    let host = HostProcess::start(dir, &kubeconfig, "wasm-reconciler-identity", &["--leader-elect"])?;
    for plugin in ["configmapset", "webapp"] {
        wait_plugin_loaded(&admin, plugin, Duration::from_secs(60)).await;
    }

    // Where its account may write, the plugin works as ever.
    let allowed = namespaced(&admin, ALLOWED, &configmapset_resource());
    let mut set = configmapset("allowed", 2, 2, "hello");
    set["metadata"]["namespace"] = json!(ALLOWED);
    create_when_served(&allowed, set).await?;
    wait_set_ready(&allowed, "allowed", 2).await;

    // Elsewhere its outcome asks for ConfigMaps all the same, and the API server refuses them.
    let other = namespaced(&admin, OTHER, &configmapset_resource());
    let mut set = configmapset("refused", 2, 2, "hello");
    set["metadata"]["namespace"] = json!(OTHER);
    create_when_served(&other, set).await?;
    let refused = wait_object(&other, "refused", "Reconciled=False Forbidden", |set| {
        failed_with(set, "Forbidden")
    })
    .await;
    let (_, _, message) = reconciled(&refused).expect("a Reconciled condition");
    assert!(
        message.contains(&format!("User \"{CONFIGMAPSET}\" cannot patch resource \"configmaps\""))
            && message.contains(&format!("in the namespace \"{OTHER}\"")),
        "the API server's own refusal, naming the plugin's account: {message}"
    );
    wait_event(&admin, OTHER, "refused", "Warning", "Forbidden", |_| true).await;
    let written: Api<ConfigMap> = Api::namespaced(admin.clone(), OTHER);
    let children: Vec<String> = written
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|config_map| config_map.metadata.name)
        .filter(|name| name.starts_with("refused-"))
        .collect();
    assert!(children.is_empty(), "nothing written in {OTHER}: {children:?}");

    // The webapp plugin acts as an account of its own, whose RBAC is deploy/'s: it reconciles in either namespace.
    let apps = namespaced(&admin, OTHER, &webapp_resource());
    create_when_served(
        &apps,
        json!({
            "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "WebApp",
            "metadata": {"name": "shop", "namespace": OTHER},
            "spec": {"image": "nginx:1.27", "replicas": 1, "port": 8080},
        }),
    )
    .await?;
    wait_object(&apps, "shop", "the WebApp to be reconciled", |app| {
        condition(app, "Reconciled") == Some("True")
    })
    .await;

    // The audit log names the plugin's account on every write made for it: the host's user, acting as the plugin.
    let writes = audit_log::writes(&cluster.real().logs.join("audit.log"))?;
    let for_plugins: Vec<&audit_log::Write> = writes
        .iter()
        .filter(|write| write.user == HOST && [ALLOWED, OTHER].contains(&write.namespace.as_str()))
        .collect();
    let unattributed: Vec<String> = for_plugins
        .iter()
        .filter(|write| write.impersonated.is_empty())
        .map(|write| format!("{} {}/{}", write.resource, write.namespace, write.name))
        .collect();
    assert!(
        unattributed.is_empty(),
        "writes made as the host itself: {unattributed:?}"
    );
    let by = |user: &str, resource: &str, namespace: &str| -> Vec<&audit_log::Write> {
        for_plugins
            .iter()
            .copied()
            .filter(|write| write.impersonated == user && write.resource == resource && write.namespace == namespace)
            .collect()
    };
    let children = by(CONFIGMAPSET, "configmaps", ALLOWED);
    assert!(
        children.iter().filter(|write| write.accepted()).count() >= 2,
        "the allowed set's ConfigMaps, written as the plugin's account: {children:?}"
    );
    let tried = by(CONFIGMAPSET, "configmaps", OTHER);
    assert!(
        !tried.is_empty() && tried.iter().all(|write| write.code == 403),
        "every ConfigMap write in {OTHER} refused: {tried:?}"
    );
    for namespace in [ALLOWED, OTHER] {
        assert!(
            by(CONFIGMAPSET, "configmapsets", namespace)
                .iter()
                .any(|write| write.subresource == "status" && write.accepted()),
            "the status in {namespace} written as the plugin's account"
        );
    }
    assert!(
        by(WEBAPP, "deployments", OTHER).iter().any(|write| write.accepted()),
        "the WebApp's Deployment written as the webapp plugin's account"
    );

    // A plugin naming an account the host may not impersonate is refused, saying what to grant; the version before
    // keeps serving.
    let plugins: Api<ConfigMap> = Api::namespaced(admin.clone(), HOST_NAMESPACE);
    let mut plugin = plugins.get("webapp").await?;
    plugin.data.get_or_insert_default().insert(
        "settings.yaml".into(),
        "serviceAccount: wasm-reconciler/wasm-reconciler\n".into(),
    );
    apply_config_map(&admin, &plugin).await?;
    let refusal = wait_for(Duration::from_secs(30), "the webapp version to be refused", || async {
        plugin_events(&admin, "webapp", "PluginRefused")
            .await
            .ok()?
            .into_iter()
            .next()
    })
    .await;
    let note = refusal.note.unwrap_or_default();
    assert!(
        note.contains("acting as ServiceAccount wasm-reconciler/wasm-reconciler")
            && note.contains("may not impersonate it"),
        "{note}"
    );
    apps.patch(
        "shop",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await?;
    wait_object(&apps, "shop", "the change reconciled by the previous version", |app| {
        app["status"]["observedGeneration"] == app["metadata"]["generation"]
    })
    .await;
    drop(host);
    Ok(())
}
