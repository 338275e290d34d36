//! Shard handoff under crash: two `run --sharding` hosts share a dozen ConfigMapSets, a third joins, and the sharder
//! asks the owners to drain the sets that move to it. One owner — the replica running the sharder, or the other — is
//! killed (SIGKILL) right before or right after its first drain acknowledgement, and stays dead. Every set must end
//! Ready, labelled for one live replica with its children, and the hosts that wrote each set must never take turns
//! (`A→B→A`): per host, from its front on both servers and, on a real one, from the API server's audit log (each host
//! writes as a ServiceAccount of its own).

use std::collections::BTreeMap;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};

use wasm_reconciler::shard::ring::Ring;

use super::front::{CrashWhen, Write};
use super::run::QUIET;
use super::stage::{Environment, Stage};
use super::story::{SETTLE, Story};
use crate::audit_log;
use crate::harness::{ServerKind, wait_for};
use crate::kinds::{configmapset_resource, set_ready_with};

/// Sets the replicas share, at least.
const SETS: usize = 12;
/// Sets of each first replica that move to the joiner, at least: each can be asked to drain.
const MOVING: usize = 2;

/// The names of the sets: `s0`, `s1`, … — at least [`SETS`], and enough that the ring (the sharder's own, keyed as
/// the sharder keys primaries) moves at least [`MOVING`] sets of each of `first` to `joiner`. Whatever the
/// namespace, every plan has a drain for each member to acknowledge.
fn set_names(namespace: &str, first: [&str; 2], joiner: &str) -> Vec<String> {
    let before = Ring::new(&first);
    let after = Ring::new(&[first[0], first[1], joiner]);
    let mut moving = [0usize; 2];
    let mut names = Vec::new();
    for index in 0.. {
        let name = format!("s{index}");
        let key = format!("examples.wasm-reconciler.io/ConfigMapSet/{namespace}/{name}");
        if after.owner(&key) == Some(joiner)
            && let Some(member) = first.iter().position(|m| before.owner(&key) == Some(*m))
        {
            moving[member] += 1;
        }
        names.push(name);
        if names.len() >= SETS && moving.iter().all(|n| *n >= MOVING) {
            break;
        }
    }
    names
}

/// Runs one shard handoff plan; the problems found, empty when it passed.
pub async fn run(
    environment: &Environment,
    sharder: bool,
    when: CrashWhen,
    logs: &std::path::Path,
) -> anyhow::Result<Vec<String>> {
    let ring_args = |ring: &str| -> Vec<String> {
        [
            "--sharding",
            "--lease-name",
            ring,
            "--lease-duration-seconds",
            "4",
            "--lease-renew-seconds",
            "1",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect()
    };
    // Every stage has a namespace of its own, which holds the ring's Leases and is the only one its plugin serves:
    // one ring name does for all.
    let accounts = environment.server == ServerKind::Real;
    let stage = Stage::new(
        environment,
        Story::Configmapset,
        &["a", "b", "c"],
        &ring_args("ring"),
        accounts,
    )
    .await?;
    let result = play(environment, &stage, sharder, when).await;
    stage.keep_logs(logs);
    stage.tear_down().await;
    result
}

async fn play(environment: &Environment, stage: &Stage, sharder: bool, when: CrashWhen) -> anyhow::Result<Vec<String>> {
    let scene = &stage.scene;
    let shard_key = "shard.wasm-reconciler.io/ring";
    let drain_key = "drain.wasm-reconciler.io/ring";
    let [a, b, c] = [&stage.hosts[0], &stage.hosts[1], &stage.hosts[2]];
    a.start()?;
    b.start()?;
    a.wait_ready(SETTLE).await;
    b.wait_ready(SETTLE).await;
    let sets: Api<DynamicObject> =
        Api::namespaced_with(scene.client.clone(), &scene.namespace, &configmapset_resource());
    let names = set_names(&scene.namespace, [&a.identity, &b.identity], &c.identity);
    let count = names.len();
    for name in names {
        let set: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "ConfigMapSet",
            "metadata": {"name": name, "namespace": scene.namespace},
            "spec": {"replicas": 1, "burst": 1, "template": {"data": {"greeting": "hello"}}},
        }))?;
        sets.create(&PostParams::default(), &set).await?;
    }
    let placed = |live: Vec<String>| {
        let sets = sets.clone();
        async move {
            let listed = sets.list(&ListParams::default()).await.ok()?.items;
            let mut shares: BTreeMap<String, usize> = BTreeMap::new();
            for set in &listed {
                let value = serde_json::to_value(set).ok()?;
                let labels = &value["metadata"]["labels"];
                let shard = labels[shard_key].as_str()?;
                if !set_ready_with(&value, 1) || !labels[drain_key].is_null() || !live.iter().any(|l| l == shard) {
                    return None;
                }
                *shares.entry(shard.to_owned()).or_default() += 1;
            }
            (listed.len() == count).then_some(shares)
        }
    };
    let two = vec![a.identity.clone(), b.identity.clone()];
    wait_for(SETTLE, "every set Ready on the first two replicas", || {
        placed(two.clone())
    })
    .await;

    let leases: Api<Lease> = Api::namespaced(scene.client.clone(), &scene.namespace);
    let holder = leases
        .get("ring-sharder")
        .await?
        .spec
        .and_then(|spec| spec.holder_identity)
        .unwrap_or_default();
    let (victim, survivor) = match (holder == a.identity) == sharder {
        true => (a, b),
        false => (b, a),
    };
    let acknowledgement = move |id: &super::request::WriteId, body: &Value| {
        id.action == "merge-patch"
            && id.resource == "configmapsets"
            && body["metadata"]["labels"]
                .as_object()
                .is_some_and(|labels| labels.get(shard_key) == Some(&Value::Null))
    };
    victim.arm_crash(acknowledgement, when, false);
    c.start()?;
    let mut crashed = victim.front.crashed();
    let reached = tokio::time::timeout(SETTLE, crashed.wait_for(|crashed| *crashed)).await;
    if !matches!(reached, Ok(Ok(_))) {
        return Ok(vec![format!(
            "{} never acknowledged a drain: the fault point was not reached",
            victim.identity
        )]);
    }
    victim.kill();
    let live = vec![survivor.identity.clone(), c.identity.clone()];
    let shares = wait_for(SETTLE, "every set Ready on the two live replicas", || {
        placed(live.clone())
    })
    .await;

    let mut problems = Vec::new();
    if let Err(problem) = stage.wait_quiet(QUIET, SETTLE).await {
        problems.push(problem);
    }
    problems.extend(stage.violations());
    for set in sets.list(&ListParams::default()).await?.items {
        let name = set.metadata.name.clone().unwrap_or_default();
        let shard = set.metadata.labels.unwrap_or_default().remove(shard_key);
        let children = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(scene.client.clone(), &scene.namespace)
            .list(&ListParams::default().labels(&format!("examples.wasm-reconciler.io/configmapset={name}")))
            .await?
            .items;
        let labelled = children
            .iter()
            .all(|child| child.metadata.labels.as_ref().and_then(|l| l.get(shard_key)) == shard.as_ref());
        if children.len() != 1 || !labelled {
            problems.push(format!(
                "{name} (on {shard:?}) has {} children, labelled {:?}",
                children.len(),
                children
                    .iter()
                    .map(|c| c.metadata.labels.as_ref().and_then(|l| l.get(shard_key)).cloned())
                    .collect::<Vec<_>>()
            ));
        }
    }
    for (set, sequence) in turn_taking(&writers_from_fronts(&stage.log.writes())) {
        problems.push(format!("the writers of {set} took turns (front log): {sequence:?}"));
    }
    if environment.server == ServerKind::Real {
        let writes = audit_log::writes(&environment.cluster.real().logs.join("audit.log"))?;
        for (set, sequence) in turn_taking(&writers_from_audit(&writes, &scene.namespace)) {
            problems.push(format!("the writers of {set} took turns (audit log): {sequence:?}"));
        }
    }
    println!(
        "fault plans: shard handoff ({} killed {when:?} its acknowledgement): shares {shares:?}",
        victim.identity
    );
    Ok(problems)
}

/// The set a write concerns: the set itself (and its status), a child `<set>-<index>`, or an Event about the set.
fn set_of(resource: &str, object: &str) -> Option<String> {
    match resource {
        "configmapsets" => Some(object.to_owned()),
        "configmaps" => object.rsplit_once('-').map(|(set, _)| set.to_owned()),
        "events" => object.split_once(':').map(|(set, _)| set.to_owned()),
        _ => None,
    }
}

/// Per set, the hosts whose reconciles wrote it, in order, repeats collapsed. The sharder's label writes are not a
/// reconcile's (any replica may run it); drain acknowledgements are.
fn writers_from_fronts(writes: &[Write]) -> BTreeMap<String, Vec<String>> {
    let mut ordered: Vec<&Write> = writes.iter().filter(|w| (200..300).contains(&w.status)).collect();
    ordered.sort_by_key(|w| w.at);
    let mut writers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for write in ordered {
        let labels = &write.body["metadata"]["labels"];
        let sharder = write.id.action == "merge-patch"
            && labels
                .as_object()
                .is_some_and(|labels| labels.values().any(|v| !v.is_null()) || labels.len() == 1);
        if sharder {
            continue;
        }
        let Some(set) = set_of(&write.id.resource, &write.id.object) else {
            continue;
        };
        let sequence = writers.entry(set).or_default();
        if sequence.last() != Some(&write.host) {
            sequence.push(write.host.clone());
        }
    }
    writers
}

/// Per set, the ServiceAccounts that wrote its status, in the order the API server received the writes: only
/// reconciles write a status.
fn writers_from_audit(writes: &[audit_log::Write], namespace: &str) -> BTreeMap<String, Vec<String>> {
    let mut ordered: Vec<&audit_log::Write> = writes
        .iter()
        .filter(|w| w.namespace == namespace && w.resource == "configmapsets" && w.subresource == "status")
        .collect();
    ordered.sort_by(|a, b| a.received.cmp(&b.received));
    let mut writers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for write in ordered {
        let sequence = writers.entry(write.name.clone()).or_default();
        if sequence.last() != Some(&write.user) {
            sequence.push(write.user.clone());
        }
    }
    writers
}

/// The sets whose writers took turns: a host wrote again after another had written.
fn turn_taking(writers: &BTreeMap<String, Vec<String>>) -> Vec<(String, Vec<String>)> {
    writers
        .iter()
        .filter(|(_, sequence)| {
            sequence
                .iter()
                .enumerate()
                .any(|(i, host)| sequence[..i].contains(host))
        })
        .map(|(set, sequence)| (set.clone(), sequence.clone()))
        .collect()
}
