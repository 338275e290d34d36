//! `wasm-reconciler plugin check`: a component checked offline on its CRD and fixtures ([`crate::check`]), the
//! findings printed as a report (or JSON) with the command that replays each, and a failing exit on any finding.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use serde_json::Value;

use super::LimitArgs;
use crate::check::{CheckError, CheckOptions, FixtureInput, Report};
use crate::delivery::PluginSettings;
use crate::fixture::{FixtureError, WorldFixture, read, read_yaml};
use crate::plugin::{FixedVariables, Grants, OutboundCounters, PluginEngine};

/// Arguments of `plugin check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The plugin component (`.wasm`).
    pub plugin: PathBuf,
    /// A CustomResourceDefinition: the primary's (its schema drives the spec mutations), and any other custom kind
    /// the plugin owns or reads. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub crd: Vec<PathBuf>,
    /// A world-view fixture (as `render` reads it), or a directory whose `*.world.yaml` files are all checked.
    /// Repeatable.
    #[arg(long, value_name = "FIXTURE|DIR", required = true)]
    pub world: Vec<PathBuf>,
    /// Plugin configuration (YAML or JSON object); replaces each fixture's `config`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The plugin's settings (`settings.yaml`): what a contract 0.2 plugin may reach outside (its requests then
    /// really go out, on every reconcile of the check).
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// A variable's value for a contract 0.2 plugin, `NAME=VALUE` (no Secret is read offline). Repeatable.
    #[arg(long = "variable", value_name = "NAME=VALUE", value_parser = parse_variable)]
    pub variables: Vec<(String, String)>,
    /// Seed of the random mutation sequences; the same seed replays the same sequences.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Random mutation sequences per fixture (besides one sequence per single mutation of its spec).
    #[arg(long, value_name = "N", default_value_t = 12)]
    pub sequences: usize,
    /// Mutations in each random sequence.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub steps: usize,
    /// Reconciles a world may take to settle before it counts as unstable.
    #[arg(long, value_name = "N", default_value_t = 40)]
    pub max_reconciles: usize,
    /// A settled state (nothing left to change) asking for a requeue sooner than this is churn.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub min_idle_requeue_ms: u64,
    /// Run only sequence N of each fixture, as a finding's replay line names it (0: only the fixture's own world).
    #[arg(long, value_name = "N")]
    pub sequence: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    limits: LimitArgs,
}

/// Why `plugin check` did not pass.
#[derive(Debug, thiserror::Error)]
pub enum CheckCommandError {
    /// A file could not be read or parsed.
    #[error(transparent)]
    Input(#[from] FixtureError),
    /// A CRD file holds something else.
    #[error("{path} is not a CustomResourceDefinition (kind {kind:?})")]
    NotACrd {
        /// The file.
        path: PathBuf,
        /// The kind it holds.
        kind: String,
    },
    /// A directory given with --world holds no fixture.
    #[error("{0} holds no *.world.yaml fixture")]
    NoFixtures(PathBuf),
    /// The settings do not parse.
    #[error("{path} is not valid plugin settings")]
    Settings {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: crate::delivery::SettingsError,
    },
    /// The plugin could not be loaded.
    #[error("{path} is not a usable plugin")]
    Load {
        /// The component.
        path: PathBuf,
        /// The cause.
        #[source]
        source: crate::plugin::LoadError,
    },
    /// The engine could not start.
    #[error(transparent)]
    Engine(#[from] crate::plugin::EngineError),
    /// The check could not run.
    #[error(transparent)]
    Check(#[from] CheckError),
    /// The check ran and found something.
    #[error("plugin check found {0} finding(s)")]
    Findings(usize),
}

fn parse_variable(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=VALUE"))?;
    if !crate::plugin::is_variable_name(name) {
        return Err(format!("{name:?} is not a variable name ([a-z][a-z0-9_]*)"));
    }
    Ok((name.to_owned(), value.to_owned()))
}

pub(super) fn run(args: &CheckArgs) -> Result<(), Box<dyn std::error::Error>> {
    let report = plugin_check(args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.text(&args.plugin.display().to_string()));
    }
    match report.findings.len() {
        0 => Ok(()),
        count => Err(Box::new(CheckCommandError::Findings(count))),
    }
}

/// Runs the check `args` describe and returns its report, with a replay command on each finding.
pub fn plugin_check(args: &CheckArgs) -> Result<Report, CheckCommandError> {
    let mut crds = Vec::new();
    for path in &args.crd {
        let crd: Value = read_yaml(path, "CustomResourceDefinition")?;
        let kind = crd["kind"].as_str().unwrap_or_default();
        if kind != "CustomResourceDefinition" {
            return Err(CheckCommandError::NotACrd {
                path: path.clone(),
                kind: kind.to_owned(),
            });
        }
        crds.push(crd);
    }
    let mut fixtures = Vec::new();
    for path in fixture_paths(&args.world)? {
        let fixture = WorldFixture::load(&path, args.config.as_deref())?;
        fixtures.push(FixtureInput { path, fixture });
    }

    let wasm = read(&args.plugin)?;
    let engine = PluginEngine::new(None)?;
    let name = args
        .plugin
        .file_stem()
        .map_or_else(|| "plugin".into(), |stem| stem.to_string_lossy().into_owned());
    let mut plugin = engine
        .load(&name, &wasm, args.limits.limits())
        .map_err(|source| CheckCommandError::Load {
            path: args.plugin.clone(),
            source,
        })?;
    if let Some(path) = &args.settings {
        let text = String::from_utf8_lossy(&read(path)?).into_owned();
        let settings = PluginSettings::parse(&text).map_err(|source| CheckCommandError::Settings {
            path: path.clone(),
            source,
        })?;
        plugin = plugin.with_grants(Grants {
            outbound: Arc::new(settings.outbound),
            counters: OutboundCounters::default(),
            variables: Arc::new(FixedVariables::new(args.variables.iter().cloned())),
        });
    } else if !args.variables.is_empty() {
        plugin = plugin.with_grants(Grants {
            variables: Arc::new(FixedVariables::new(args.variables.iter().cloned())),
            ..Grants::default()
        });
    }

    let options = CheckOptions {
        seed: args.seed,
        random_sequences: args.sequences,
        steps: args.steps,
        max_rounds: args.max_reconciles,
        min_idle_requeue: Duration::from_millis(args.min_idle_requeue_ms),
        only_sequence: args.sequence,
    };
    let mut report = crate::check::check(&plugin, crds, &fixtures, &options)?;
    for finding in &mut report.findings {
        finding.replay = replay_command(args, &finding.fixture, finding.sequence.as_ref().map_or(0, |s| s.id));
    }
    Ok(report)
}

/// The fixtures named by `--world`: files as given, directories as their `*.world.yaml` files in name order.
fn fixture_paths(worlds: &[PathBuf]) -> Result<Vec<PathBuf>, CheckCommandError> {
    let mut paths = Vec::new();
    for world in worlds {
        if !world.is_dir() {
            paths.push(world.clone());
            continue;
        }
        let entries = std::fs::read_dir(world).map_err(|source| FixtureError::Read {
            path: world.clone(),
            source,
        })?;
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.to_string_lossy().ends_with(".world.yaml"))
            .collect();
        if found.is_empty() {
            return Err(CheckCommandError::NoFixtures(world.clone()));
        }
        found.sort();
        paths.extend(found);
    }
    Ok(paths)
}

/// `wasm-reconciler plugin check …` for one fixture and one sequence, with the options that shape it (variable
/// values are left for the reader to fill in).
fn replay_command(args: &CheckArgs, fixture: &Path, sequence: usize) -> String {
    let quote = |path: &Path| shell_word(&path.display().to_string());
    let mut command = format!("wasm-reconciler plugin check {}", quote(&args.plugin));
    for crd in &args.crd {
        command.push_str(&format!(" --crd {}", quote(crd)));
    }
    command.push_str(&format!(" --world {}", quote(fixture)));
    if let Some(config) = &args.config {
        command.push_str(&format!(" --config {}", quote(config)));
    }
    if let Some(settings) = &args.settings {
        command.push_str(&format!(" --settings {}", quote(settings)));
    }
    for (name, _) in &args.variables {
        command.push_str(&format!(" --variable {name}=…"));
    }
    command.push_str(&format!(
        " --seed {} --sequences {} --steps {} --sequence {sequence}",
        args.seed, args.sequences, args.steps
    ));
    command
}

/// `text` quoted for a POSIX shell when it needs it.
fn shell_word(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '-' | '_' | ':' | '=' | '+' | ','))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_parse_as_name_and_value() {
        assert_eq!(parse_variable("api_key=a=b").unwrap(), ("api_key".into(), "a=b".into()));
        assert!(parse_variable("API=x").unwrap_err().contains("not a variable name"));
        assert!(parse_variable("novalue").unwrap_err().contains("NAME=VALUE"));
    }

    #[test]
    fn words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("plugins/a.wasm"), "plugins/a.wasm");
        assert_eq!(shell_word("my dir/it's"), r"'my dir/it'\''s'");
    }
}
