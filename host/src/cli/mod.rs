//! The `wasm-reconciler` command line: argument parsing, logging set-up and dispatch to the library.

mod check;
mod dev;
mod diff;
mod inspect;
mod new;
mod pack;
mod push;
mod render;
mod revision;
mod run;
pub mod serve;
mod sign;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::client::host_client;
pub use crate::fixture::WorldFixture;
use crate::telemetry::traces::{Settings as TraceSettings, Traces};
pub use check::{CheckArgs, CheckCommandError, plugin_check};
pub use render::{RenderError, render_file};

/// Run Kubernetes controllers whose reconcile logic is a WebAssembly component.
#[derive(Debug, Parser)]
#[command(name = "wasm-reconciler", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// More log output (-v: debug, -vv: trace). `RUST_LOG` overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// Log line format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true, env = "WASM_RECONCILER_LOG_FORMAT")]
    pub log_format: LogFormat,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Work with plugin components.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Run one reconcile of a plugin on a world-view fixture, offline, and print the outcome as YAML.
    ///
    /// Exits 1 when the plugin fails (its own error, a trap, a timeout, memory exhaustion, an invalid
    /// outcome) and prints the typed error.
    Render(render::RenderArgs),
    /// Run the host against a cluster: plugins from ConfigMaps (and a directory), leader election, metrics.
    Run(run::RunArgs),
    /// Local development: the embedded API server, a kubeconfig for kubectl, and the host reconciling the
    /// plugins of a directory with hot reload.
    Dev(dev::DevArgs),
    /// Run the embedded Kubernetes-compatible API server on its own.
    Apiserver(wasm_reconciler_apiserver::ApiserverArgs),
}

/// `plugin` subcommands.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Validate a component and print what it reconciles.
    Inspect(inspect::InspectArgs),
    /// Package a component (or, with --ref, a reference to it) as a ConfigMap manifest ready for `kubectl apply`.
    Pack(pack::PackArgs),
    /// Push a component to an OCI registry as a wasm artifact; prints the digest reference for `pack --ref`.
    Push(push::PushArgs),
    /// Sign an artifact in a registry (cosign-compatible, stored beside it) or a component file (detached).
    Sign(sign::SignArgs),
    /// Verify the signature of an artifact in a registry or of a component file against public keys.
    Verify(sign::VerifyArgs),
    /// Generate an ECDSA P-256 key pair for signing plugins.
    GenerateKey(sign::GenerateKeyArgs),
    /// Start a plugin project in Rust, Python or TypeScript: a reconciler for a kind, its unit tests, the kind's
    /// CRD, a world fixture with its expected outcome, a Makefile (`make test`, `make build`, `make check`) and a
    /// README.
    New(new::NewArgs),
    /// Check a component offline on its CRD and world fixtures: the same view reconciled twice gives the same
    /// outcome; once applied (as the host and server-side apply would), reconciling again changes nothing and asks
    /// for no needless requeue; spec mutations generated from the CRD's schema, each sequence reconciled until it
    /// settles, end where a fresh apply of the last spec ends; an invalid spec and a revert return to where the
    /// world was. Prints each finding with the command that replays it; exits 1 on any finding.
    Check(check::CheckArgs),
    /// Preview a candidate version of a plugin against the live cluster, writing nothing: every primary is
    /// reconciled on its live view by the serving revision and by the candidate, the candidate's children are
    /// applied as server-side dry runs and compared with the live objects, and what would be created, changed,
    /// deleted or fail is printed per primary, with a summary.
    Diff(diff::DiffArgs),
    /// List a plugin's revisions in the cluster: every version the host accepted, numbered, with its digest, source
    /// and when; the serving one marked.
    History(revision::HistoryArgs),
    /// Serve an earlier revision of a plugin from the cluster's history (it pins the WasmPlugin's `spec.revision`),
    /// and wait until the host serves it. New versions from the plugin's source are held until `plugin unpin`.
    Rollback(revision::RollbackArgs),
    /// Remove a plugin's pin, so that the newest version from its source serves again, and wait until it does.
    Unpin(revision::UnpinArgs),
}

/// Sandbox limits settable on the command line.
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// Memory limit of the plugin instance, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub memory_limit_mib: usize,
    /// Deadline of one call, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub deadline_ms: u64,
}

impl LimitArgs {
    /// The limits these arguments describe.
    pub fn limits(&self) -> crate::plugin::Limits {
        crate::plugin::Limits {
            memory_bytes: self.memory_limit_mib.saturating_mul(1024 * 1024),
            deadline: std::time::Duration::from_millis(self.deadline_ms),
            ..crate::plugin::Limits::default()
        }
    }
}

/// Sets up `tracing` for the chosen verbosity and format. Logs go to stderr so stdout stays parseable; with `traces`,
/// spans are exported over OTLP as well (`RUST_LOG` and `-v` do not change what traces hold).
pub fn init_logging(verbose: u8, format: LogFormat, traces: Option<&Traces>) {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::filter::FilterExt as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let default = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("{default},cranelift=warn,wasmtime=warn")));
    // The spans of a reconcile's steps are for traces only. The hint keeps the global maximum level (and with it the
    // `log` crate's) that of `filter`.
    let not_steps = tracing_subscriber::filter::filter_fn(|metadata| metadata.target() != crate::TRACE_ONLY_TARGET)
        .with_max_level_hint(tracing_subscriber::filter::LevelFilter::TRACE);
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = match format {
        LogFormat::Text => logs.boxed(),
        LogFormat::Json => logs.json().flatten_event(true).boxed(),
    };
    let traces = traces.map(|traces| traces.layer().with_filter(crate::telemetry::traces::filter()));
    let result = tracing_subscriber::registry()
        .with(logs.with_filter(filter.and(not_steps)))
        .with(traces)
        .try_init();
    // A subscriber already installed (tests) is fine.
    drop(result);
}

/// Starts the export of traces for the commands that reconcile (`run`, `dev`) when the `OTEL_*` environment asks for
/// it (docs/deploy.md, "Traces").
fn start_traces(command: &Command) -> Result<Option<Traces>, crate::telemetry::traces::TracesError> {
    match command {
        Command::Run(_) | Command::Dev(_) => Traces::start(&TraceSettings::from_process_env()?),
        _ => Ok(None),
    }
}

/// Runs the parsed command and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    let traces = match start_traces(&cli.command) {
        Ok(traces) => traces,
        Err(error) => {
            init_logging(cli.verbose, cli.log_format, None);
            eprintln!("error: {}", crate::error_chain(&error));
            return ExitCode::FAILURE;
        }
    };
    init_logging(cli.verbose, cli.log_format, traces.as_ref());
    if traces.is_some() {
        tracing::info!("exporting traces over OTLP");
    }
    let result = match cli.command {
        Command::Plugin(PluginCommand::Inspect(args)) => inspect::run(&args),
        Command::Plugin(PluginCommand::Pack(args)) => pack_validated(&args),
        Command::Plugin(PluginCommand::Push(args)) => block_on(async move {
            push::run(&args, |wasm| {
                validate_component(&args.file, wasm)?;
                Ok(())
            })
            .await
        }),
        Command::Plugin(PluginCommand::Sign(args)) => block_on(async move { sign::sign(&args).await }),
        Command::Plugin(PluginCommand::Verify(args)) => block_on(async move { sign::verify(&args).await }),
        Command::Plugin(PluginCommand::GenerateKey(args)) => sign::generate_key(&args),
        Command::Plugin(PluginCommand::New(args)) => new::run(&args),
        Command::Plugin(PluginCommand::Check(args)) => check::run(&args),
        Command::Plugin(PluginCommand::Diff(args)) => block_on(async move { diff::run(&args).await }),
        Command::Plugin(PluginCommand::History(args)) => block_on(async move { revision::history(&args).await }),
        Command::Plugin(PluginCommand::Rollback(args)) => block_on(async move { revision::rollback(&args).await }),
        Command::Plugin(PluginCommand::Unpin(args)) => block_on(async move { revision::unpin(&args).await }),
        Command::Render(args) => render::run(&args),
        Command::Run(args) => block_on(run::run(args)),
        Command::Dev(args) => block_on(dev::run(args)),
        Command::Apiserver(args) => block_on(async move {
            wasm_reconciler_apiserver::run_standalone(args)
                .await
                .map_err(|e| Box::new(e) as Box<dyn std::error::Error>)
        }),
    };
    // After a stop (SIGTERM, Ctrl-C) too: the spans still queued are sent before the process exits.
    if let Some(traces) = traces {
        traces.shutdown();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", crate::error_chain(error.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// Runs a future on a multi-threaded runtime.
fn block_on(
    future: impl std::future::Future<Output = Result<(), Box<dyn std::error::Error>>>,
) -> Result<(), Box<dyn std::error::Error>> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(future)
}

/// Validates the component with the host's own loader (contract version, `describe()`) before packing it.
fn pack_validated(args: &pack::PackArgs) -> Result<(), Box<dyn std::error::Error>> {
    pack::run(args, |wasm, _| {
        validate_component(args.file.as_deref().unwrap_or(std::path::Path::new("-")), wasm)?;
        Ok(())
    })
}

/// Loads a component with the host's own loader (contract version, `describe()`), naming `file` on failure.
fn validate_component(file: &std::path::Path, wasm: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
    let engine = crate::plugin::PluginEngine::new(None)?;
    let name = file
        .file_stem()
        .map_or_else(|| "plugin".into(), |s| s.to_string_lossy().into_owned());
    // Offline, a slow machine is no reason to call a component unusable: `describe()` gets far longer than the 1 s a
    // host gives it by default (a Python component's takes most of a second on a loaded 2-core machine).
    let limits = crate::plugin::Limits {
        deadline: std::time::Duration::from_secs(30),
        ..crate::plugin::Limits::default()
    };
    let plugin = engine
        .load(&name, wasm, limits)
        .map_err(|e| format!("{} is not a usable plugin: {}", file.display(), crate::error_chain(&e)))?;
    tracing::debug!(file = %file.display(), primary = %plugin.spec().primary, "validated");
    Ok(())
}

/// Reads a file, naming it in the error.
pub(crate) fn read_file(path: &PathBuf) -> Result<Vec<u8>, std::io::Error> {
    std::fs::read(path).map_err(|e| std::io::Error::new(e.kind(), format!("reading {}: {e}", path.display())))
}
