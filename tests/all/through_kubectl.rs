//! A person with `kubectl`: apply a ConfigMapSet, wait for Ready, read it with `get` and `describe` (the plugin's
//! events), scale it with a patch, and delete it (the drain finalizer lets it go).

use std::time::Duration;

use crate::harness::{Cluster, Host, wait_for};
use crate::kinds::{CONVERGE, install_example};

const MANIFEST: &str = "\
apiVersion: examples.wasm-reconciler.io/v1alpha1
kind: ConfigMapSet
metadata:
  name: web
  namespace: default
spec:
  replicas: 3
  burst: 2
  template:
    metadata:
      labels:
        app: web
    data:
      greeting: hello
";

/// Runs kubectl off the async workers.
fn kubectl(cluster: &Cluster, args: &[&str]) -> std::process::Output {
    tokio::task::block_in_place(|| cluster.kubectl(args))
}

fn kubectl_ok(cluster: &Cluster, args: &[&str]) -> String {
    tokio::task::block_in_place(|| cluster.kubectl_ok(args))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_wait_get_describe_scale_and_delete_with_kubectl() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let plugins = cluster.dir.path().join("plugins");
    install_example(&plugins, "configmapset", wasm_reconciler_artifacts::CONFIGMAPSET)?;
    let host = Host::start(&cluster, Host::dev_options(&plugins)).await?;
    let manifest = cluster.dir.path().join("web.yaml");
    std::fs::write(&manifest, MANIFEST)?;
    let manifest = manifest.to_string_lossy().into_owned();

    // The host installs the CRD when it loads the plugin; until then kubectl does not know the kind.
    let applied = wait_for(CONVERGE, "kubectl apply to succeed", || {
        let output = kubectl(&cluster, &["apply", "-f", &manifest]);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        async move { output.status.success().then_some(stdout) }
    })
    .await;
    assert_eq!(applied.trim(), "configmapset.examples.wasm-reconciler.io/web created");

    let waited = kubectl_ok(
        &cluster,
        &["wait", "--for=condition=Ready", "configmapset/web", "--timeout=40s"],
    );
    assert_eq!(
        waited.trim(),
        "configmapset.examples.wasm-reconciler.io/web condition met"
    );

    let table = kubectl_ok(&cluster, &["get", "configmapsets"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, ["NAME", "DESIRED", "READY", "AGE"], "{table}");
    let row: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..3], ["web", "3", "3"], "{table}");

    let short = kubectl_ok(
        &cluster,
        &[
            "get",
            "cms",
            "web",
            "-o",
            "jsonpath={.status.observedGeneration} {.status.conditions[?(@.type==\"Reconciled\")].status}",
        ],
    );
    assert_eq!(short, "1 True");
    let children = kubectl_ok(
        &cluster,
        &[
            "get",
            "configmaps",
            "-l",
            "app=web",
            "-o",
            "name",
            "--sort-by=.metadata.name",
        ],
    );
    assert_eq!(
        children.lines().collect::<Vec<_>>(),
        ["configmap/web-0", "configmap/web-1", "configmap/web-2"]
    );

    let described = kubectl_ok(&cluster, &["describe", "configmapset", "web"]);
    assert!(described.contains("Events:"), "{described}");
    let scaling_up: Vec<&str> = described.lines().filter(|line| line.contains("ScalingUp")).collect();
    assert!(
        !scaling_up.is_empty(),
        "describe shows the plugin's events:\n{described}"
    );
    assert!(scaling_up.iter().all(|line| line.contains("Normal")), "{described}");
    assert!(
        described.contains("creating 2 ConfigMap(s), 1 still missing"),
        "{described}"
    );
    assert!(
        described.contains("wasm-reconciler/configmapset"),
        "events name the plugin:\n{described}"
    );

    kubectl_ok(
        &cluster,
        &[
            "patch",
            "cms",
            "web",
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":1}}"#,
        ],
    );
    kubectl_ok(
        &cluster,
        &[
            "wait",
            "--for=jsonpath={.status.replicas}=1",
            "configmapset/web",
            "--timeout=40s",
        ],
    );
    let children = kubectl_ok(&cluster, &["get", "configmaps", "-l", "app=web", "-o", "name"]);
    assert_eq!(children.trim(), "configmap/web-0");

    // `kubectl delete` waits until the object is gone: the finalizer drains the children, then lets go.
    let deleted = kubectl_ok(&cluster, &["delete", "-f", &manifest, "--timeout=40s"]);
    // kubectl 1.33 and later name the namespace; older ones do not.
    assert!(
        [
            "configmapset.examples.wasm-reconciler.io \"web\" deleted from default namespace",
            "configmapset.examples.wasm-reconciler.io \"web\" deleted",
        ]
        .contains(&deleted.trim()),
        "kubectl delete printed {deleted:?}"
    );
    let left = kubectl_ok(&cluster, &["get", "configmaps", "-l", "app=web", "-o", "name"]);
    assert_eq!(left.trim(), "", "no child is left behind");
    let gone = kubectl(&cluster, &["get", "cms", "web"]);
    assert!(!gone.status.success());
    assert!(String::from_utf8_lossy(&gone.stderr).contains("NotFound"));

    tokio::time::timeout(Duration::from_secs(30), host.stop()).await??;
    Ok(())
}
