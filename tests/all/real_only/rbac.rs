//! The host as a cluster runs it: on a real API server, authenticated as `deploy/`'s ServiceAccount (its token, not
//! an administrator) and authorized by exactly `deploy/`'s RBAC. Both example plugins go through their life cycle; a
//! plugin owning a kind the ServiceAccount may not watch fails visibly with `Forbidden` on its objects while the
//! others keep serving, and recovers once RBAC grants the kind.

use std::path::{Path, PathBuf};

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::deploy::{complete_deploy_copy, run_life_cycle};
use crate::harness::{Cluster, Host, condition};
use crate::kinds::{
    ECHO_CRD, create_when_served, echo_resource, failed_with, namespaced, reconciled, test_object, wait_event,
    wait_object,
};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed};
use crate::telemetry_probe::free_local_addr;

/// The ServiceAccount `deploy/` runs the host as (namespace, name).
const SERVICE_ACCOUNT: (&str, &str) = ("wasm-reconciler", "wasm-reconciler");

/// A kubeconfig for `cluster` that authenticates with a fresh token of `deploy/`'s ServiceAccount.
pub fn service_account_kubeconfig(cluster: &Cluster, dir: &Path) -> anyhow::Result<PathBuf> {
    let (namespace, name) = SERVICE_ACCOUNT;
    let token = cluster.kubectl_ok(&["create", "token", name, "-n", namespace, "--duration=1h"]);
    let mut kubeconfig = kube::config::Kubeconfig::read_from(&cluster.kubeconfig)?;
    for user in &mut kubeconfig.auth_infos {
        user.auth_info = Some(kube::config::AuthInfo {
            token: Some(token.trim().to_owned().into()),
            ..kube::config::AuthInfo::default()
        });
    }
    let path = dir.join("service-account.kubeconfig");
    std::fs::write(&path, serde_saphyr::to_string(&kubeconfig)?)?;
    Ok(path)
}

/// RBAC for the echo test plugin: its own kind, and — with `secrets` — the Secrets it owns (ConfigMaps and the
/// Services it reads are granted by `deploy/` for the example plugins).
async fn grant_echo(admin: &kube::Client, secrets: bool) -> anyhow::Result<()> {
    let mut rules = vec![
        json!({"apiGroups": ["test.wasm-reconciler.io"], "resources": ["echoes"],
               "verbs": ["get", "list", "watch", "patch", "update"]}),
        json!({"apiGroups": ["test.wasm-reconciler.io"], "resources": ["echoes/status"], "verbs": ["get", "patch", "update"]}),
        json!({"apiGroups": ["test.wasm-reconciler.io"], "resources": ["echoes/finalizers"], "verbs": ["update"]}),
    ];
    if secrets {
        rules.push(json!({"apiGroups": [""], "resources": ["secrets"],
                          "verbs": ["get", "list", "watch", "create", "patch", "update", "delete"]}));
    }
    let role: ClusterRole = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "wasm-reconciler-plugin-echo"}, "rules": rules,
    }))?;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "wasm-reconciler-plugin-echo"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "wasm-reconciler-plugin-echo"},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT.1, "namespace": SERVICE_ACCOUNT.0}],
    }))?;
    let apply = PatchParams::apply("rbac-test").force();
    Api::<ClusterRole>::all(admin.clone())
        .patch("wasm-reconciler-plugin-echo", &apply, &Patch::Apply(&role))
        .await?;
    Api::<ClusterRoleBinding>::all(admin.clone())
        .patch("wasm-reconciler-plugin-echo", &apply, &Patch::Apply(&binding))
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_runs_on_deploy_rbac_and_reports_kinds_it_may_not_watch() -> anyhow::Result<()> {
    let cluster = Cluster::start_real().await?;
    let deploy = complete_deploy_copy(cluster.dir.path())?;
    // Installed by an administrator: namespace, ServiceAccount, RBAC, CRDs, the packed example plugins; and the echo
    // plugin, whose Secrets the ServiceAccount may not touch.
    cluster.kubectl_ok(&["apply", "--server-side", "-k", &deploy.display().to_string()]);
    let admin = cluster.client().await?;
    install_crd(&admin, ECHO_CRD).await?;
    grant_echo(&admin, false).await?;
    apply_config_map(&admin, &packed(wasm_reconciler_artifacts::ECHO, "echo", None, true)?).await?;

    let kubeconfig = service_account_kubeconfig(&cluster, cluster.dir.path())?;
    let options = Host::cluster_options(HOST_NAMESPACE, "wasm-reconciler-7c9d4-rbac", Some(free_local_addr()));
    let host = Host::start_with_kubeconfig(&kubeconfig, options).await?;

    // The echo plugin cannot watch Secrets: each reconcile says so on the object, without running the plugin.
    let echoes = namespaced(&admin, "default", &echo_resource());
    create_when_served(&echoes, test_object("Echo", "default", "needs-secrets")).await?;
    let refused = wait_object(&echoes, "needs-secrets", "Reconciled=False Forbidden", |echo| {
        failed_with(echo, "Forbidden")
    })
    .await;
    let (_, _, message) = reconciled(&refused).expect("a Reconciled condition");
    assert!(
        message.contains("secrets") && message.contains("forbidden"),
        "{message}"
    );
    assert!(refused["status"].get("echo").is_none(), "the plugin did not run");
    wait_event(&admin, "default", "needs-secrets", "Warning", "Forbidden", |_| true).await;

    // Meanwhile both example plugins go through their life cycle on deploy/'s RBAC alone.
    run_life_cycle(&admin).await?;

    // Granting the kind heals the echo plugin: no restart, no waiting out a backoff.
    grant_echo(&admin, true).await?;
    let healed = wait_object(
        &echoes,
        "needs-secrets",
        "Reconciled=True once Secrets are granted",
        |echo| condition(echo, "Reconciled") == Some("True"),
    )
    .await;
    assert_eq!(healed["status"]["echo"]["name"], Value::from("needs-secrets"));
    host.stop().await
}
