//! The configmapset plugin over an object's life: scaling up and down in bursts, a deleted child coming back, a
//! drifted child corrected, and deletion draining the children through the finalizer.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::harness::{Cluster, Host, wait_for};
use crate::journal::{Action, Journal, bursts_between, count_per_name};
use crate::kinds::{
    CONVERGE, config_map_resource, configmapset, configmapset_resource, create_when_served, events_about,
    install_example, namespaced, occurrences, set_children, set_ready_with, wait_gone, wait_served, wait_set_ready,
};

/// A cluster and a host running the configmapset plugin, with the ConfigMapSet kind served.
struct Fixture {
    cluster: Cluster,
    host: Host,
    client: kube::Client,
    sets: Api<DynamicObject>,
    config_maps: Api<ConfigMap>,
}

impl Fixture {
    async fn start() -> anyhow::Result<Self> {
        let cluster = Cluster::start().await?;
        let plugins = cluster.dir.path().join("plugins");
        install_example(&plugins, "configmapset", wasm_reconciler_artifacts::CONFIGMAPSET)?;
        let host = Host::start(&cluster, Host::dev_options(&plugins)).await?;
        let client = cluster.client().await?;
        let sets = namespaced(&client, "default", &configmapset_resource());
        wait_served(&sets).await;
        let config_maps = Api::namespaced(client.clone(), "default");
        Ok(Self {
            cluster,
            host,
            client,
            sets,
            config_maps,
        })
    }

    async fn journal(&self) -> anyhow::Result<Journal> {
        Journal::start(
            &self.client,
            "default",
            &[configmapset_resource(), config_map_resource()],
        )
        .await
    }

    async fn wait_ready(&self, name: &str, replicas: u64) -> Value {
        wait_set_ready(&self.sets, name, replicas).await
    }

    /// Names and uids of the set's ConfigMaps.
    async fn children(&self, set: &str) -> anyhow::Result<BTreeMap<String, String>> {
        set_children(&self.config_maps, set).await
    }
}

fn names(set: &str, indexes: std::ops::Range<u32>) -> Vec<String> {
    indexes.map(|index| format!("{set}-{index}")).collect()
}

/// `(created, still missing)` from a ScalingUp note: "creating 3 ConfigMap(s), 7 still missing after this round".
fn scaling_up_note(note: &str) -> Option<(usize, usize)> {
    let rest = note.strip_prefix("creating ")?;
    let (created, rest) = rest.split_once(" ConfigMap(s), ")?;
    let (missing, _) = rest.split_once(" still missing")?;
    Some((created.parse().ok()?, missing.parse().ok()?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_up_and_down_honours_burst_and_never_creates_a_child_twice() -> anyhow::Result<()> {
    let fixture = Fixture::start().await?;
    let journal = fixture.journal().await?;
    create_when_served(&fixture.sets, configmapset("web", 10, 3, "hello")).await?;
    fixture.wait_ready("web", 10).await;
    let entries = journal
        .wait_until("10 ConfigMaps added and the set Ready", |entries| {
            count_per_name(entries, "ConfigMap", Action::Added).len() == 10
                && entries
                    .iter()
                    .any(|e| e.kind == "ConfigMapSet" && set_ready_with(&e.object, 10))
        })
        .await;

    let added = count_per_name(&entries, "ConfigMap", Action::Added);
    assert_eq!(added.len(), 10, "{added:?}");
    for name in names("web", 0..10) {
        assert_eq!(added.get(&name), Some(&1), "{name} is added exactly once: {added:?}");
    }
    assert!(
        count_per_name(&entries, "ConfigMap", Action::Deleted).is_empty(),
        "nothing is deleted while scaling up"
    );
    let bursts = bursts_between(&entries, "ConfigMapSet", "web", "ConfigMap", Action::Added);
    assert!(
        bursts.iter().all(|&n| n <= 3),
        "at most burst=3 creations per reconcile: {bursts:?}"
    );
    assert!(
        bursts.len() >= 4,
        "10 replicas at burst 3 take at least 4 rounds: {bursts:?}"
    );

    // Every creating round is told in an Event of its own note (a repeat of the same note would grow a series):
    // the notes count down the missing replicas, starting with a burst of 3 of 10, and add up to 10 creations.
    let rounds = wait_for(CONVERGE, "a ScalingUp Event for every creating round", || async {
        let rounds: Vec<(usize, usize)> = events_about(&fixture.client, "default", "web")
            .await
            .ok()?
            .iter()
            .filter(|event| event.reason.as_deref() == Some("ScalingUp"))
            .flat_map(|event| {
                let round = event.note.as_deref().and_then(scaling_up_note);
                std::iter::repeat_n(round, occurrences(event) as usize)
            })
            .collect::<Option<_>>()?;
        (rounds.iter().map(|(created, _)| created).sum::<usize>() == 10).then_some(rounds)
    })
    .await;
    assert_eq!(rounds.first(), Some(&(3, 7)), "{rounds:?}");
    assert_eq!(rounds.last().map(|(_, missing)| *missing), Some(0), "{rounds:?}");
    assert!(
        rounds.len() >= 4,
        "10 replicas at burst 3 take at least 4 rounds: {rounds:?}"
    );
    let kept_before = fixture.children("web").await?;

    // Scale down to 2: 8 deletions, at most 3 per round, highest indexes first, the kept ones untouched.
    let patched = fixture
        .sets
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await?;
    let patched_at: u64 = patched.metadata.resource_version.unwrap_or_default().parse()?;
    fixture.wait_ready("web", 2).await;
    let entries = journal
        .wait_until("8 ConfigMaps deleted and the set Ready at 2", |entries| {
            count_per_name(entries, "ConfigMap", Action::Deleted).len() == 8
                && entries
                    .iter()
                    .any(|e| e.kind == "ConfigMapSet" && set_ready_with(&e.object, 2))
        })
        .await;
    let after_patch: Vec<_> = entries
        .into_iter()
        .filter(|entry| entry.resource_version > patched_at)
        .collect();
    let deleted = count_per_name(&after_patch, "ConfigMap", Action::Deleted);
    assert_eq!(deleted.keys().cloned().collect::<Vec<_>>(), {
        let mut expected = names("web", 2..10);
        expected.sort();
        expected
    });
    assert!(
        count_per_name(&after_patch, "ConfigMap", Action::Added).is_empty(),
        "nothing is created while scaling down"
    );
    let bursts = bursts_between(&after_patch, "ConfigMapSet", "web", "ConfigMap", Action::Deleted);
    assert!(
        bursts.iter().all(|&n| n <= 3),
        "at most burst=3 deletions per reconcile: {bursts:?}"
    );
    assert!(
        bursts.len() >= 3,
        "8 deletions at burst 3 take at least 3 rounds: {bursts:?}"
    );

    let kept = fixture.children("web").await?;
    assert_eq!(kept.keys().cloned().collect::<Vec<_>>(), names("web", 0..2));
    for (name, uid) in &kept {
        assert_eq!(Some(uid), kept_before.get(name), "{name} was kept, not recreated");
    }
    fixture.host.stop().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_child_comes_back_and_a_drifted_child_is_corrected() -> anyhow::Result<()> {
    let fixture = Fixture::start().await?;
    create_when_served(&fixture.sets, configmapset("conf", 3, 10, "hello")).await?;
    fixture.wait_ready("conf", 3).await;
    let before = fixture.children("conf").await?;

    // Deleted: the host notices through its watch and applies the replica again (a new object, a new uid).
    fixture.config_maps.delete("conf-1", &DeleteParams::default()).await?;
    let old_uid = before["conf-1"].clone();
    let back = wait_for(CONVERGE, "conf-1 to come back", || {
        let config_maps = fixture.config_maps.clone();
        let old_uid = old_uid.clone();
        async move {
            let child = config_maps.get_opt("conf-1").await.ok()??;
            (child.metadata.uid.as_deref() != Some(old_uid.as_str())).then_some(child)
        }
    })
    .await;
    assert_eq!(back.data.unwrap_or_default()["greeting"], "hello");
    let owner = &back.metadata.owner_references.unwrap_or_default()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("ConfigMapSet", "conf"));
    assert_eq!(owner.controller, Some(true));

    // Drifted: data edited by a person with kubectl is put back, in place.
    let patch = r#"{"data":{"greeting":"tampered"}}"#;
    let args = [
        "patch",
        "configmap",
        "conf-0",
        "--type=merge",
        "-p",
        patch,
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ];
    let tampered_at: u64 = tokio::task::block_in_place(|| fixture.cluster.kubectl_ok(&args))
        .trim()
        .parse()?;
    let corrected = wait_for(CONVERGE, "conf-0 to be corrected", || {
        let config_maps = fixture.config_maps.clone();
        async move {
            let child = config_maps.get("conf-0").await.ok()?;
            let version: u64 = child.metadata.resource_version.as_deref()?.parse().ok()?;
            (version > tampered_at && child.data.as_ref()?.get("greeting")? == "hello").then_some(child)
        }
    })
    .await;
    assert_eq!(
        corrected.metadata.uid,
        Some(before["conf-0"].clone()),
        "corrected in place"
    );
    let set = fixture.wait_ready("conf", 3).await;
    assert_eq!(set["status"]["readyReplicas"], 3);
    let after = fixture.children("conf").await?;
    assert_eq!(after.len(), 3);
    assert_eq!(after["conf-2"], before["conf-2"], "untouched replicas stay as they are");
    fixture.host.stop().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_drains_children_in_bursts_before_the_set_goes() -> anyhow::Result<()> {
    let fixture = Fixture::start().await?;
    create_when_served(&fixture.sets, configmapset("drain", 7, 2, "hello")).await?;
    let ready = fixture.wait_ready("drain", 7).await;
    assert!(
        ready["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "examples.wasm-reconciler.io/drain")),
        "the drain finalizer holds the set: {}",
        ready["metadata"]
    );
    let journal = fixture.journal().await?;
    fixture.sets.delete("drain", &DeleteParams::default()).await?;
    wait_gone(&fixture.sets, "drain", "the set to be gone").await;
    let entries = journal
        .wait_until("7 ConfigMaps and the set deleted", |entries| {
            count_per_name(entries, "ConfigMap", Action::Deleted).len() == 7
                && entries
                    .iter()
                    .any(|e| e.kind == "ConfigMapSet" && e.action == Action::Deleted)
        })
        .await;

    let bursts = bursts_between(&entries, "ConfigMapSet", "drain", "ConfigMap", Action::Deleted);
    assert!(
        bursts.iter().all(|&n| n <= 2),
        "at most burst=2 deletions per round: {bursts:?}"
    );
    assert!(
        bursts.len() >= 4,
        "7 children at burst 2 take at least 4 rounds: {bursts:?}"
    );
    let set_gone = entries
        .iter()
        .find(|e| e.kind == "ConfigMapSet" && e.action == Action::Deleted)
        .map(|e| e.resource_version)
        .expect("waited for it");
    assert!(
        entries
            .iter()
            .filter(|e| e.kind == "ConfigMap" && e.action == Action::Deleted)
            .all(|e| e.resource_version < set_gone),
        "every child is drained before the finalizer lets the set go"
    );
    let draining = events_about(&fixture.client, "default", "drain")
        .await?
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("Draining"))
        .count();
    assert!(draining >= 1, "the plugin reports Draining rounds as Events");
    assert!(fixture.children("drain").await?.is_empty());
    fixture.host.stop().await?;
    Ok(())
}
