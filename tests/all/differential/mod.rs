//! Differential conformance: the same scenarios (`scenarios/*.yaml`) played against the embedded API server and a
//! real kube-apiserver; normalised answers must match, or the difference must be listed with its reason in
//! `docs/apiserver.md` ("Known differences, step by step").
//!
//! `DIFFERENTIAL_SCENARIOS=a,b` plays only those scenarios; `DIFFERENTIAL_DUMP=DIR` writes every step's raw and
//! normalised answers from both servers to `DIR/<scenario>/<step>.<server>.json`.

mod compare;
mod normalise;
mod runner;
mod scenario;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use serde_json::Value;

use crate::harness::Cluster;
use compare::{Difference, Known, differences, known_differences, show};
use normalise::Normaliser;
use runner::Server;
use scenario::{Scenario, Step, Variables};

fn repository_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(relative)
}

/// How one step came out.
enum Verdict {
    Identical,
    /// Differs as `docs/apiserver.md` says, for this reason.
    Documented(String),
    Undocumented(Vec<Difference>),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_server_answers_like_a_real_kube_apiserver() -> anyhow::Result<()> {
    let started = Instant::now();
    let scenarios = scenario::load_all(&repository_file("tests/all/differential/scenarios"))?;
    let docs = repository_file("docs/apiserver.md");
    let known =
        known_differences(&std::fs::read_to_string(&docs).with_context(|| format!("reading {}", docs.display()))?)
            .with_context(|| format!("reading the known differences of {}", docs.display()))?;
    let selected: Option<BTreeSet<String>> = std::env::var("DIFFERENTIAL_SCENARIOS")
        .ok()
        .filter(|names| !names.is_empty())
        .map(|names| names.split(',').map(str::to_owned).collect());
    let dump = std::env::var_os("DIFFERENTIAL_DUMP").map(PathBuf::from);

    let all_steps: BTreeSet<String> = scenarios
        .iter()
        .flat_map(|scenario| {
            scenario
                .steps
                .iter()
                .map(move |step| format!("{}/{}", scenario.name, step.id))
        })
        .collect();
    let unknown: Vec<&String> = known.keys().filter(|step| !all_steps.contains(*step)).collect();
    anyhow::ensure!(
        unknown.is_empty(),
        "{} lists known differences of steps no scenario has: {unknown:?}",
        docs.display()
    );

    let (real, embedded) = tokio::join!(Cluster::start_real(), Cluster::start_embedded(None));
    let real = Server::new("real", real.context("starting the real control plane")?).await?;
    let embedded = Server::new("embedded", embedded.context("starting the embedded API server")?).await?;
    let clusters_ready = started.elapsed();

    let mut verdicts: BTreeMap<String, Verdict> = BTreeMap::new();
    let mut stale: Vec<String> = Vec::new();
    for scenario in &scenarios {
        if selected.as_ref().is_some_and(|names| !names.contains(&scenario.name)) {
            continue;
        }
        let scenario_started = Instant::now();
        for step in play(scenario, &real, &embedded, dump.as_deref()).await? {
            let (id, found) = step;
            let verdict = judge(&id, found, known.get(&id), &mut stale);
            verdicts.insert(id, verdict);
        }
        println!(
            "differential: scenario {} ({}; {} steps) took {:.1}s",
            scenario.name,
            scenario.description.trim(),
            scenario.steps.len(),
            scenario_started.elapsed().as_secs_f64()
        );
    }

    let count = |wanted: fn(&Verdict) -> bool| verdicts.values().filter(|verdict| wanted(verdict)).count();
    let identical = count(|verdict| matches!(verdict, Verdict::Identical));
    let documented = count(|verdict| matches!(verdict, Verdict::Documented(_)));
    let undocumented = count(|verdict| matches!(verdict, Verdict::Undocumented(_)));
    for (id, verdict) in &verdicts {
        if let Verdict::Documented(reason) = verdict {
            println!("documented difference in {id}: {reason}");
        }
    }
    for (id, verdict) in &verdicts {
        if let Verdict::Undocumented(found) = verdict {
            println!("\nundocumented difference in {id}:");
            for difference in found {
                println!(
                    "  {}\n    real:     {}\n    embedded: {}",
                    if difference.pointer.is_empty() {
                        "/"
                    } else {
                        &difference.pointer
                    },
                    show(difference.real.as_ref()),
                    show(difference.embedded.as_ref())
                );
            }
        }
    }
    for entry in &stale {
        println!(
            "\ndocumented difference no longer seen (remove it from {}): {entry}",
            docs.display()
        );
    }
    println!(
        "\ndifferential: identical {identical} / documented {documented} / undocumented {undocumented} \
         ({:.1}s, of which {:.1}s starting the servers)",
        started.elapsed().as_secs_f64(),
        clusters_ready.as_secs_f64()
    );
    anyhow::ensure!(
        undocumented == 0 && stale.is_empty(),
        "{undocumented} steps differ without an entry in {}, {} entries there are stale",
        docs.display(),
        stale.len()
    );
    Ok(())
}

/// Plays a scenario on both servers, step by step (each step on both at once); returns each step's differences.
async fn play(
    scenario: &Scenario,
    real: &Server,
    embedded: &Server,
    dump: Option<&Path>,
) -> anyhow::Result<Vec<(String, Vec<Difference>)>> {
    for namespace in &scenario.namespaces {
        tokio::try_join!(real.create_namespace(namespace), embedded.create_namespace(namespace))?;
    }
    let mut sides = [
        (real, Variables::default(), Normaliser::default()),
        (embedded, Variables::default(), Normaliser::default()),
    ];
    let mut results = Vec::new();
    for step in &scenario.steps {
        let id = format!("{}/{}", scenario.name, step.id);
        let [(real, real_variables, _), (embedded, embedded_variables, _)] = &sides;
        let (real_answer, embedded_answer) =
            tokio::join!(real.play(step, real_variables), embedded.play(step, embedded_variables));
        let answers = [
            real_answer.with_context(|| format!("{id} on the real server"))?,
            embedded_answer.with_context(|| format!("{id} on the embedded server"))?,
        ];
        let mut normalised = Vec::new();
        for ((server, variables, normaliser), answer) in sides.iter_mut().zip(&answers) {
            capture(step, answer, variables);
            let answer_normalised = normaliser.answer(answer, variables, step.kubectl.as_deref().unwrap_or_default());
            if let Some(dir) = dump {
                write_dump(dir, scenario, step, server.label, answer, &answer_normalised)?;
            }
            normalised.push(answer_normalised);
        }
        results.push((id, differences(&normalised[0], &normalised[1])));
    }
    Ok(results)
}

/// Records the step's captures; a value the answer lacks is captured as a marker that shows up in later steps.
fn capture(step: &Step, answer: &Value, variables: &mut Variables) {
    for (name, pointer) in &step.capture {
        let value = match answer.pointer(pointer) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => format!("<no {name} at {pointer}>"),
            Some(other) => other.to_string(),
        };
        variables.set(name, value);
    }
}

fn judge(id: &str, found: Vec<Difference>, known: Option<&Known>, stale: &mut Vec<String>) -> Verdict {
    let Some(known) = known else {
        return if found.is_empty() {
            Verdict::Identical
        } else {
            Verdict::Undocumented(found)
        };
    };
    let uncovered: Vec<Difference> = found
        .iter()
        .filter(|difference| !known.covers(&difference.pointer))
        .cloned()
        .collect();
    let unseen: Vec<&String> = known
        .pointers
        .iter()
        .filter(|prefix| {
            !found
                .iter()
                .any(|difference| known.covers(&difference.pointer) && difference.pointer.starts_with(prefix.as_str()))
        })
        .collect();
    if found.is_empty() {
        stale.push(format!("{id}: the answers are identical"));
    } else if !unseen.is_empty() {
        stale.push(format!("{id}: nothing differs at {unseen:?}"));
    }
    if uncovered.is_empty() {
        Verdict::Documented(known.reason.clone())
    } else {
        Verdict::Undocumented(uncovered)
    }
}

fn write_dump(
    dir: &Path,
    scenario: &Scenario,
    step: &Step,
    server: &str,
    raw: &Value,
    normalised: &Value,
) -> anyhow::Result<()> {
    let folder = dir.join(&scenario.name);
    std::fs::create_dir_all(&folder)?;
    let pretty = |value: &Value| serde_json::to_string_pretty(value).unwrap_or_default();
    std::fs::write(folder.join(format!("{}.{server}.raw.json", step.id)), pretty(raw))?;
    std::fs::write(folder.join(format!("{}.{server}.json", step.id)), pretty(normalised))?;
    Ok(())
}
