//! The mirror test plugin's objects: a source ConfigMap per namespace, Mirrors copying it, and waiting until they
//! have.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use crate::harness::wait_for;
use crate::kinds::{mirror_resource, namespaced};

/// Creates Mirrors `m0`…`m<count-1>` in `namespace`, each copying ConfigMap `source` `copies` times.
pub async fn create_mirrors(client: &kube::Client, namespace: &str, count: usize, copies: u32) -> anyhow::Result<()> {
    let mirrors = namespaced(client, namespace, &mirror_resource());
    for index in 0..count {
        let mirror = json!({
            "apiVersion": "test.wasm-reconciler.io/v1", "kind": "Mirror",
            "metadata": {"name": format!("m{index}"), "namespace": namespace},
            "spec": {"source": "source", "copies": copies},
        });
        mirrors
            .create(&PostParams::default(), &serde_json::from_value(mirror)?)
            .await?;
    }
    Ok(())
}

/// Waits until the `count` Mirrors of `namespace` are Ready at its generation with `copies` copies of `version`, and exactly those copies
/// exist.
pub async fn wait_mirrored(
    client: &kube::Client,
    namespace: &str,
    count: usize,
    copies: u32,
    version: &str,
    timeout: Duration,
) {
    let mirrors = namespaced(client, namespace, &mirror_resource());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    wait_for(
        timeout,
        &format!("{count} Mirrors with {copies} copies of {version}"),
        || async {
            let listed = mirrors.list(&ListParams::default()).await.ok()?;
            for mirror in &listed.items {
                let value = serde_json::to_value(mirror).ok()?;
                let ready = crate::harness::condition(&value, "Ready") == Some("True")
                    && value["status"]["observedGeneration"] == value["metadata"]["generation"]
                    && value["status"]["version"] == version
                    && value["status"]["copies"] == copies;
                if !ready {
                    return None;
                }
            }
            let copies_now = config_maps.list(&ListParams::default()).await.ok()?;
            let mut names: Vec<String> = copies_now
                .items
                .iter()
                .filter(|c| c.metadata.name.as_deref().is_some_and(|n| n.contains("-copy-")))
                .filter(|c| c.data.as_ref().and_then(|d| d.get("version")).map(String::as_str) == Some(version))
                .filter_map(|c| c.metadata.name.clone())
                .collect();
            let all_copies = copies_now
                .items
                .iter()
                .filter(|c| c.metadata.name.as_deref().is_some_and(|n| n.contains("-copy-")))
                .count();
            names.sort();
            (listed.items.len() == count && all_copies == names.len() && names.len() == count * copies as usize)
                .then_some(())
        },
    )
    .await;
}
