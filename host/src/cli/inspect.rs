//! `wasm-reconciler plugin inspect`: validate a component and print its controller spec.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;

use super::LimitArgs;
use crate::plugin::{ControllerSpec, PluginEngine};

/// Arguments of `plugin inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The component (`.wasm`).
    pub file: PathBuf,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Yaml)]
    pub output: Format,
    #[command(flatten)]
    limits: LimitArgs,
}

/// Output format of `inspect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// YAML.
    Yaml,
    /// JSON.
    Json,
}

/// What `inspect` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Inspection<'a> {
    file: String,
    sha256: &'a str,
    size_bytes: usize,
    wit: String,
    spec: &'a ControllerSpec,
    /// It imports `wasi:http/outgoing-handler`: it sends HTTP requests, to the hosts `allowedOutboundHosts` grants.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    outbound_http: bool,
    /// It imports `variables`: it reads values its settings name under `variables`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    variables: bool,
    /// It imports a clock (`wasi:clocks`): every reconcile calls it, resyncs of an unchanged world included.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    reads_clock: bool,
    /// It imports randomness that differs between calls: every reconcile calls it, as with a clock.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    reads_randomness: bool,
}

pub(super) fn run(args: &InspectArgs) -> Result<(), Box<dyn std::error::Error>> {
    let wasm = super::read_file(&args.file)?;
    let engine = PluginEngine::new(None)?;
    let name = args
        .file
        .file_stem()
        .map_or_else(|| "plugin".into(), |s| s.to_string_lossy().into_owned());
    let plugin = engine.load(&name, &wasm, args.limits.limits())?;
    let inspection = Inspection {
        file: args.file.display().to_string(),
        sha256: plugin.sha256(),
        size_bytes: plugin.size(),
        wit: format!("{}@{}", crate::plugin::WIT_PACKAGE, plugin.wit_version()),
        spec: plugin.spec(),
        outbound_http: plugin.capabilities().outbound_http,
        variables: plugin.capabilities().variables,
        reads_clock: plugin.capabilities().clock,
        reads_randomness: plugin.capabilities().randomness,
    };
    match args.output {
        Format::Yaml => print!("{}", serde_saphyr::to_string(&inspection)?),
        Format::Json => println!("{}", serde_json::to_string_pretty(&inspection)?),
    }
    Ok(())
}
