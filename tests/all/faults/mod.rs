//! Systematic fault testing of the host (docs/fault-testing.md): for each example plugin, and a plugin that reads
//! an object it does not own, a story of user steps runs once as a reference, then once per fault plan — the host
//! killed right before and right after each write of the reference, views that lag behind the host's own writes
//! or a recreate, states the host never observes, a sharded member killed during a drain — and every plan must
//! end as the reference did. Plans are written to `<target>/fault-plans/<server>/`; `FAULT_PLANS=<file>` replays a
//! plan file (the failing plans of a run are written to `failed.json`).

mod front;
mod oracle;
mod plan;
mod request;
mod run;
mod sharded;
mod stage;
mod story;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Instant;

use futures::StreamExt as _;

use self::front::CrashWhen;
use self::plan::{Fault, Plan, REPLAY};
use self::run::Observation;
use self::stage::Environment;
use self::story::Story;
use crate::harness::ServerKind;

/// Plans running at once: each has a host process of its own (three for a shard handoff) and waits on the API
/// server most of the time.
const CONCURRENT_PLANS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_plan_ends_as_its_reference() -> anyhow::Result<()> {
    let began = Instant::now();
    let environment = Environment::start().await?;
    let server = environment.server_name();
    let replayed = std::env::var_os(REPLAY).map(PathBuf::from);
    let plans = match &replayed {
        Some(path) => plan::load(path)?,
        None => Vec::new(),
    };
    let stories: BTreeSet<Story> = if replayed.is_some() {
        plans.iter().map(|plan| plan.story).collect()
    } else {
        Story::ALL.into_iter().collect()
    };

    let dir = plan::plans_dir(server);
    let logs = dir.join("logs");
    let _ = std::fs::remove_dir_all(&logs);
    let references: BTreeMap<Story, Observation> = futures::stream::iter(stories)
        .map(|story| {
            let environment = &environment;
            let logs = logs.join(format!("{} reference", story.name()));
            async move { (story, run::run(environment, story, None, &logs).await) }
        })
        .buffer_unordered(CONCURRENT_PLANS)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|(story, observation)| observation.map(|observation| (story, observation)))
        .collect::<anyhow::Result<_>>()?;
    for (story, reference) in &references {
        let mut problems = reference.problems.clone();
        problems.extend(reference.violations.iter().cloned());
        anyhow::ensure!(
            problems.is_empty(),
            "the reference run of {} failed: {problems:#?}",
            story.name()
        );
        println!(
            "fault plans ({server}): reference {}: {} writes, {} objects at the end",
            story.name(),
            reference.writes.len(),
            reference.end.len()
        );
        if std::env::var_os("FAULT_PLANS_VERBOSE").is_some() {
            for write in &reference.writes {
                let metadata = &write.response["metadata"];
                println!(
                    "    {} {} rv={} deletion={} finalizers={}",
                    write.id,
                    write.status,
                    metadata["resourceVersion"],
                    metadata["deletionTimestamp"],
                    metadata["finalizers"]
                );
            }
            println!("    counts {:?}", reference.counts);
        }
    }
    let plans = if replayed.is_some() {
        plans
    } else {
        derive(&references, environment.server)
    };
    plan::save(&dir.join("plans.json"), &plans)?;
    println!(
        "fault plans ({server}): {} plans written to {} after {:.0} s",
        plans.len(),
        dir.join("plans.json").display(),
        began.elapsed().as_secs_f64()
    );

    let results: Vec<(Plan, Vec<String>, f64)> = futures::stream::iter(plans)
        .map(|plan| {
            let environment = &environment;
            let references = &references;
            let logs = logs.join(plan.name.replace('/', "-"));
            async move {
                let started = Instant::now();
                let problems = match &plan.fault {
                    Fault::ShardHandoff { sharder, when } => sharded::run(environment, *sharder, *when, &logs)
                        .await
                        .unwrap_or_else(|error| vec![format!("the plan could not run: {error:#}")]),
                    fault => match run::run(environment, plan.story, Some(fault), &logs).await {
                        Ok(observation) => {
                            if std::env::var_os("FAULT_PLANS_VERBOSE").is_some() {
                                let writes: Vec<String> = observation
                                    .writes
                                    .iter()
                                    .map(|w| format!("{}/{} {} {}", w.host, w.incarnation, w.id, w.status))
                                    .collect();
                                println!("{}: writes {writes:#?}", plan.name);
                            }
                            oracle::judge(&plan, &observation, &references[&plan.story])
                        }
                        Err(error) => vec![format!("the plan could not run: {error:#}")],
                    },
                };
                if problems.is_empty() {
                    let _ = std::fs::remove_dir_all(&logs);
                }
                (plan, problems, started.elapsed().as_secs_f64())
            }
        })
        .buffer_unordered(CONCURRENT_PLANS)
        .collect()
        .await;

    let failed: Vec<&(Plan, Vec<String>, f64)> =
        results.iter().filter(|(_, problems, _)| !problems.is_empty()).collect();
    for (plan, problems, seconds) in &failed {
        println!("FAILED {} ({seconds:.1} s):", plan.name);
        for problem in problems {
            println!("    {problem}");
        }
    }
    let failed_plans: Vec<Plan> = failed.iter().map(|(plan, _, _)| plan.clone()).collect();
    let failed_file = dir.join("failed.json");
    if failed_plans.is_empty() {
        let _ = std::fs::remove_file(&failed_file);
    } else {
        plan::save(&failed_file, &failed_plans)?;
        println!(
            "fault plans ({server}): the failing plans are in {}, their hosts' logs in {}; replay them with {REPLAY}={}",
            failed_file.display(),
            logs.display(),
            failed_file.display()
        );
    }
    let mut per_story: BTreeMap<&str, usize> = BTreeMap::new();
    for (plan, _, _) in &results {
        *per_story.entry(plan.story.name()).or_default() += 1;
    }
    println!(
        "fault plans ({server}): {per_story:?} in {:.0} s",
        began.elapsed().as_secs_f64()
    );
    println!(
        "plans {}, passed {}, failed {}",
        results.len(),
        results.len() - failed.len(),
        failed.len()
    );
    anyhow::ensure!(
        failed.is_empty(),
        "{} of {} fault plans failed",
        failed.len(),
        results.len()
    );
    Ok(())
}

/// The plans of a run, from the reference runs: a crash right before and right after every write of every story,
/// and the choreographed faults.
fn derive(references: &BTreeMap<Story, Observation>, server: ServerKind) -> Vec<Plan> {
    let mut plans = Vec::new();
    for (story, reference) in references {
        let mut seen = BTreeSet::new();
        for write in &reference.writes {
            if request::is_bookkeeping_resource(&write.id.resource) || !seen.insert(write.id.clone()) {
                continue;
            }
            for when in [CrashWhen::Before, CrashWhen::After] {
                plans.push(Plan::new(
                    *story,
                    Fault::Crash {
                        at: write.id.clone(),
                        when,
                    },
                ));
            }
        }
    }
    let _ = server;
    for story in Story::ALL {
        if let Some(child) = story.kept_child() {
            plans.push(Plan::new(story, Fault::LaggingChildWatch { child: child.into() }));
        }
        plans.push(Plan::new(story, Fault::DroppedWatches));
        plans.push(Plan::new(story, Fault::SlowAnswers));
        if matches!(story, Story::Webapp | Story::Mirror) {
            plans.push(Plan::new(story, Fault::LaggingPrimaryWatch));
        }
        match story {
            Story::Mirror => plans.push(Plan::new(story, Fault::HiddenReadStates)),
            _ => plans.push(Plan::new(story, Fault::HiddenStates)),
        }
    }
    for resource in ["configmaps", "configmapsets"] {
        plans.push(Plan::new(
            Story::Configmapset,
            Fault::LateRelist {
                resource: resource.into(),
            },
        ));
    }
    for sharder in [true, false] {
        for when in [CrashWhen::Before, CrashWhen::After] {
            plans.push(Plan::new(Story::Configmapset, Fault::ShardHandoff { sharder, when }));
        }
    }
    plans
}
