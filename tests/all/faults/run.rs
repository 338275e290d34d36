//! One run of a story on its stage, with or without a fault: the reference run records the writes fault plans are
//! made from; a plan's run plays the same user steps with its fault woven in, and both end with what they observed.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use serde_json::{Value, json};

use super::front::Write;
use super::plan::Fault;
use super::request::ObjectKey;
use super::stage::{Counts, Environment, Stage};
use super::story::{SETTLE, Snapshot, Story};
use crate::harness::wait_for;

/// How long the hosts must write nothing for the world to count as stable (ESR's quiet window).
pub const QUIET: Duration = Duration::from_millis(1500);
/// How long a lagging watch or a late list holds things back.
const LAG: Duration = Duration::from_millis(1500);
/// How long a slow answer takes after the watch event of its write.
const SLOW_ANSWER: Duration = Duration::from_millis(200);

/// What one run observed.
#[derive(Debug, Default)]
pub struct Observation {
    /// Every write of the hosts, in the order the front received them.
    pub writes: Vec<Write>,
    /// The story's objects before the last step (which deletes the primary), the hosts quiet.
    pub settled: Snapshot,
    /// The story's objects at the end, the hosts quiet.
    pub end: Snapshot,
    /// Creations and deletions per object.
    pub counts: Counts,
    /// What the fronts' oracles found.
    pub violations: Vec<String>,
    /// Everything else that went wrong: a story step that did not settle, hosts that never went quiet, a fault
    /// point never reached.
    pub problems: Vec<String>,
}

/// Runs `story` with `fault` (none for the reference) on a fresh stage with one host, `a`; its log is copied to
/// `logs` (a directory of the plans).
pub async fn run(
    environment: &Environment,
    story: Story,
    fault: Option<&Fault>,
    logs: &std::path::Path,
) -> anyhow::Result<Observation> {
    let stage = Stage::new(environment, story, &["a"], &[], false).await?;
    let observation = play(&stage, fault).await;
    stage.keep_logs(logs);
    stage.tear_down().await;
    observation
}

async fn play(stage: &Stage, fault: Option<&Fault>) -> anyhow::Result<Observation> {
    let story = stage.story;
    let host = &stage.hosts[0];
    host.start()?;
    if let Some(Fault::SlowAnswers) = fault {
        host.front.gate(|gate| gate.slow_answers = Some(SLOW_ANSWER));
    }
    if let Some(Fault::Crash { at, when }) = fault {
        let at = at.clone();
        host.arm_crash(move |id, _| *id == at, *when, true);
    }
    let mut observation = Observation::default();
    let last = story.steps() - 1;
    for step in 0..story.steps() {
        if step == last {
            if let Err(problem) = stage.wait_quiet(QUIET, SETTLE).await {
                observation.problems.push(format!("before the last step: {problem}"));
            }
            observation.settled = story.snapshot(&stage.scene).await?;
        }
        match fault {
            Some(Fault::LaggingPrimaryWatch) if step == last => delete_behind_lagging_watch(stage).await?,
            Some(fault) if step == 1 && step != last => choreograph(stage, fault).await?,
            _ => story.step(&stage.scene, step).await?,
        }
    }
    if let Err(problem) = stage.wait_quiet(QUIET, SETTLE).await {
        observation.problems.push(format!("at the end: {problem}"));
    }
    observation.end = story.snapshot(&stage.scene).await?;
    observation.counts = stage.counts();
    observation.writes = stage.log.writes();
    observation.violations = stage.violations();
    if matches!(fault, Some(Fault::Crash { .. })) && !host.crashed() {
        observation
            .problems
            .push("the fault point was never reached: no such write in this run".into());
    }
    Ok(observation)
}

/// Step 1 of the story with the fault woven in: each fault makes the host act on a view that lags, hides or
/// reorders what happened, and the step must still settle as in the reference.
async fn choreograph(stage: &Stage, fault: &Fault) -> anyhow::Result<()> {
    let story = stage.story;
    let scene = &stage.scene;
    let front = &stage.hosts[0].front;
    match fault {
        Fault::Crash { .. } => story.step(scene, 1).await?,
        Fault::LaggingChildWatch { child } => {
            front.gate(|gate| {
                gate.held_resources.insert("configmaps".into());
            });
            recreate(scene, child).await?;
            story.act(scene, 1).await?;
            tokio::time::sleep(LAG).await;
            front.gate(|gate| {
                gate.held_resources.remove("configmaps");
            });
            story.settle(scene, 1).await?;
        }
        Fault::LateRelist { resource } => {
            front.gate(|gate| {
                gate.lists_late.insert(resource.clone());
                gate.expiry += 1;
            });
            tokio::time::timeout(SETTLE, front.wait_late_list()).await?;
            if resource == "configmaps" {
                // The host deletes children while its relist of them, read before, is on its way.
                story.act(scene, 1).await?;
                wait_for(SETTLE, "the host to scale the set down", || async {
                    let set = crate::kinds::get_value(&primary_api(stage), story.primary_name()).await?;
                    (set["status"]["replicas"] == 1).then_some(())
                })
                .await;
            } else {
                // An edit the host does not see (its relist of primaries is late), then a child drifts: the host
                // corrects it, writes the primary's status, and gets the edit back in the answer.
                primary_api(stage)
                    .patch(
                        story.primary_name(),
                        &PatchParams::default(),
                        &Patch::Merge(json!({"spec": {"template": {"data": {"greeting": "bye"}}}})),
                    )
                    .await?;
                Api::<ConfigMap>::namespaced(scene.client.clone(), &scene.namespace)
                    .patch(
                        &format!("{}-1", story.primary_name()),
                        &PatchParams::default(),
                        &Patch::Merge(json!({"data": {"greeting": "drifted"}})),
                    )
                    .await?;
                wait_for(SETTLE, "the host to reconcile the edit it got back", || async {
                    let set = crate::kinds::get_value(&primary_api(stage), story.primary_name()).await?;
                    (set["status"]["observedGeneration"] == 2 && set["status"]["readyReplicas"] == 3).then_some(())
                })
                .await;
            }
            // The late list is delivered, and what the watch says after it lags a little: long enough for the host to
            // act on the list.
            front.gate(|gate| {
                gate.lists_late.remove(resource);
                gate.held_resources.insert(resource.clone());
            });
            tokio::time::sleep(LAG).await;
            front.gate(|gate| {
                gate.held_resources.remove(resource);
            });
            if resource != "configmaps" {
                story.act(scene, 1).await?;
            }
            story.settle(scene, 1).await?;
        }
        Fault::HiddenStates => {
            let key = ObjectKey {
                resource: story.primary().plural,
                namespace: Some(scene.namespace.clone()),
                name: story.primary_name().to_owned(),
            };
            front.gate(|gate| {
                gate.hidden_objects.insert(key.clone());
            });
            for edit in story.intermediate_edits() {
                primary_api(stage)
                    .patch(story.primary_name(), &PatchParams::default(), &Patch::Merge(edit))
                    .await?;
            }
            story.act(scene, 1).await?;
            // Every edit reached the front before the key is released.
            tokio::time::sleep(Duration::from_millis(300)).await;
            front.gate(|gate| {
                gate.hidden_objects.remove(&key);
            });
            story.settle(scene, 1).await?;
        }
        Fault::HiddenReadStates => {
            let key = ObjectKey {
                resource: "configmaps".into(),
                namespace: Some(scene.namespace.clone()),
                name: "source".into(),
            };
            front.gate(|gate| {
                gate.hidden_objects.insert(key.clone());
            });
            let sources: Api<ConfigMap> = Api::namespaced(scene.client.clone(), &scene.namespace);
            for version in ["v7", "v8"] {
                sources
                    .patch(
                        "source",
                        &PatchParams::default(),
                        &Patch::Merge(json!({"data": {"version": version}})),
                    )
                    .await?;
            }
            story.act(scene, 1).await?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            front.gate(|gate| {
                gate.hidden_objects.remove(&key);
            });
            story.settle(scene, 1).await?;
        }
        Fault::DroppedWatches => {
            front.gate(|gate| {
                gate.lists_held = true;
                gate.expiry += 1;
            });
            story.act(scene, 1).await?;
            if let Some(child) = story.kept_child() {
                Api::<ConfigMap>::namespaced(scene.client.clone(), &scene.namespace)
                    .delete(child, &DeleteParams::default())
                    .await?;
            }
            tokio::time::sleep(LAG).await;
            front.gate(|gate| gate.lists_held = false);
            story.settle(scene, 1).await?;
        }
        Fault::LaggingPrimaryWatch | Fault::SlowAnswers => story.step(scene, 1).await?,
        Fault::ShardHandoff { .. } => anyhow::bail!("shard handoff plans run on sharded stages"),
    }
    Ok(())
}

/// The last step (the primary deleted) while the host's watch of primaries holds their events back: the garbage
/// collector deletes the children meanwhile, and the host sees that first.
async fn delete_behind_lagging_watch(stage: &Stage) -> anyhow::Result<()> {
    let story = stage.story;
    let front = &stage.hosts[0].front;
    let resource = story.primary().plural;
    front.gate(|gate| {
        gate.held_resources.insert(resource.clone());
    });
    story.act(&stage.scene, story.steps() - 1).await?;
    tokio::time::sleep(LAG).await;
    front.gate(|gate| {
        gate.held_resources.remove(&resource);
    });
    story.settle(&stage.scene, story.steps() - 1).await
}

fn primary_api(stage: &Stage) -> Api<DynamicObject> {
    Api::namespaced_with(
        stage.scene.client.clone(),
        &stage.scene.namespace,
        &stage.story.primary(),
    )
}

/// A test actor deletes ConfigMap `name` (by its uid) and creates it again as it was, as a restore from a backup
/// would: a new uid.
async fn recreate(scene: &super::story::Scene, name: &str) -> anyhow::Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(scene.client.clone(), &scene.namespace);
    let old = api.get(name).await?;
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: old.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    api.delete(name, &params).await?;
    let mut value: Value = serde_json::to_value(&old)?;
    if let Some(metadata) = value["metadata"].as_object_mut() {
        for field in ["uid", "resourceVersion", "creationTimestamp", "managedFields"] {
            metadata.remove(field);
        }
    }
    let again: ConfigMap = serde_json::from_value(value)?;
    wait_for(
        SETTLE,
        &format!("{name} to be gone before it is created again"),
        || async { api.create(&PostParams::default(), &again).await.ok() },
    )
    .await;
    Ok(())
}
