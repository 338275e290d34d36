//! `wasm-reconciler plugin diff`: what a candidate version of a plugin would change in the live cluster, computed
//! without a write.
//!
//! The plugin's kinds are read as the host reads them (list and watch into caches, under the plugin's ServiceAccount
//! when its settings name one), and every primary is reconciled on its live view by the serving revision and by the
//! candidate. The candidate's children go to the API server as server-side apply dry runs with the host's field
//! manager, so defaulting, validation and field ownership are the server's own; what comes back is compared with the
//! live objects field by field, with the children the host would prune and the status it would write. Nothing is
//! stored: the only requests besides reads are those dry runs.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde::Serialize;
use serde_json::Value;

use super::push::CredentialArgs;
use super::revision::{Cluster, ClusterArgs, serving_revision};
use super::run::RegistryArgs;
use crate::apply::children::{PrimaryRef, prepare_children};
use crate::apply::status::{ReconciledState, desired_status};
use crate::controller::Impersonation;
use crate::delivery::configmap::{self, Delivered};
use crate::delivery::reference::PluginReference;
use crate::delivery::{OciReference, PluginPackage, PluginSettings, RegistryClient, SignaturePolicy};
use crate::plugin::{ClusterReader, ControllerSpec, Gvk, Limits, Outcome, Plugin, PluginEngine};
use crate::runtime::{CacheReader, CacheSync, CachedObject, Caches, KindCache, world_view};

/// How long the caches of the plugin's kinds may take to fill.
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Metadata the API server writes on every change, which says nothing about what a plugin asked for.
const SERVER_METADATA: [&str; 6] = [
    "managedFields",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "uid",
    "selfLink",
];

/// Arguments of `plugin diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The candidate: a component file (`.wasm`), a plugin ConfigMap manifest (what `plugin pack` writes, with the
    /// component or a reference to it), or `oci://REGISTRY/REPOSITORY[:TAG|@DIGEST]`.
    pub candidate: String,
    /// The plugin it would replace (default: the manifest's name; needed for a component file or a reference).
    #[arg(long)]
    pub plugin: Option<String>,
    /// Configuration of a component file or reference (YAML or JSON mapping; default: the serving revision's).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = DiffFormat::Text)]
    pub output: DiffFormat,
    /// Exit with 1 when any primary would change or fail, as `git diff --exit-code` does: a gate for CI.
    #[arg(long)]
    pub exit_code: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub credentials: CredentialArgs,
}

/// Output formats of `plugin diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// One block per primary that would change or fail, then a summary line.
    Text,
    /// The whole report as one JSON document.
    Json,
}

/// What the candidate would do, per primary.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The plugin.
    pub plugin: String,
    /// The candidate.
    pub candidate: VersionInfo,
    /// The serving revision it is compared with.
    pub serving: VersionInfo,
    /// Every primary, by kind, namespace and name.
    pub objects: Vec<ObjectReport>,
    /// The counts.
    pub summary: Summary,
}

/// One version of the plugin.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// `sha256:<hex>` of the component.
    pub sha256: String,
    /// Where it comes from: the file or reference, or the revision's source.
    pub source: String,
    /// The revision's number (the serving version only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
}

/// The counts of a report.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Primaries reconciled.
    pub primaries: usize,
    /// Primaries the candidate would leave as they are.
    pub unchanged: usize,
    /// Primaries whose children or status the candidate would change.
    pub changed: usize,
    /// Primaries whose reconcile would fail under the candidate.
    pub failed: usize,
}

/// What the candidate would do to one primary.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReport {
    /// The primary's kind.
    pub kind: String,
    /// Its namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// The verdict.
    pub result: Verdict,
    /// Why it would fail: the reason the host would put on the `Reconciled` condition, and the message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Children the candidate would create, change or delete.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildChange>,
    /// Fields of `.status` the candidate would change.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<FieldChange>,
    /// Whether the serving revision computes the same outcome: then a change is pending under the serving revision
    /// too (the world moved since its last reconcile), not brought by the candidate.
    pub same_as_serving: bool,
}

/// The verdict on one primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// Nothing would be written.
    Unchanged,
    /// Children or status would change.
    Changes,
    /// The reconcile would fail (the plugin's error or trap, an outcome out of scope, a child the API server refuses).
    Fails,
}

/// A child the candidate would write.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildChange {
    /// `apiVersion` and kind, as `ConfigMap` or `apps/v1 Deployment`.
    pub kind: String,
    /// Its namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// What would happen to it.
    pub action: ChildAction,
    /// The fields that would change (for a create, every field it would have).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
}

/// What would happen to a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ChildAction {
    /// Created.
    Create,
    /// Changed in place.
    Update,
    /// Deleted: the primary controls it and the candidate no longer wants it.
    Delete,
}

/// One field that would change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    /// Its path, as `data.key` or `spec.ports[0].port`.
    pub path: String,
    /// Its value now; absent when the field would be added.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<Value>,
    /// Its value after; absent when the field would be removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<Value>,
}

/// A version ready to reconcile.
struct Loaded {
    plugin: Plugin,
    config: Arc<str>,
    settings: PluginSettings,
    info: VersionInfo,
}

/// `plugin diff`: prints the report; writes nothing.
pub(super) async fn run(args: &DiffArgs) -> Result<(), Box<dyn std::error::Error>> {
    let report = diff(args).await?;
    match args.output {
        DiffFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        DiffFormat::Text => print!("{}", text(&report)),
    }
    let summary = &report.summary;
    if args.exit_code && summary.changed + summary.failed > 0 {
        return Err(format!(
            "{} of {} primaries would change and {} would fail (--exit-code)",
            summary.changed, summary.primaries, summary.failed
        )
        .into());
    }
    Ok(())
}

/// The report of `args`' candidate against the serving revision.
pub async fn diff(args: &DiffArgs) -> Result<Report, Box<dyn std::error::Error>> {
    let config = super::run::config(args.cluster.kubeconfig.as_deref()).await?;
    let client = crate::client::host_client(config.clone())?;
    let engine = PluginEngine::new(None)?;

    let (name, candidate) = candidate_package(args).await?;
    let serving = serving(&args.cluster, &name, &engine).await?;
    let candidate_config = match &args.config {
        Some(path) => Some(read_config(path)?),
        None => candidate.config,
    };
    let candidate = {
        let package = candidate.package;
        let plugin = load(&engine, &name, package.wasm, package.settings.limits)
            .await
            .map_err(|e| format!("the candidate does not load: {e}"))?;
        Loaded {
            info: VersionInfo {
                sha256: format!("sha256:{}", plugin.sha256().trim_start_matches("sha256:")),
                source: candidate.source,
                revision: None,
            },
            plugin,
            config: candidate_config.unwrap_or_else(|| serving.config.to_string()).into(),
            settings: package.settings,
        }
    };
    let spec = candidate.plugin.spec().clone();
    if spec.primary != serving.plugin.spec().primary {
        return Err(format!(
            "the candidate reconciles {}, but plugin {name} reconciles {}: is it a component of another plugin?",
            spec.primary,
            serving.plugin.spec().primary
        )
        .into());
    }

    let caches = match &candidate.settings.service_account {
        Some(account) => Impersonation::new(config, client.clone())
            .caches(account)
            .await
            .map_err(|message| format!("acting as the plugin's ServiceAccount: {message}"))?,
        None => Caches::new(client.clone()),
    };
    let namespaces = candidate.settings.namespaces.as_deref();
    let mut kinds: Vec<&Gvk> = vec![&spec.primary];
    for extra in [spec.owns.iter(), spec.reads.iter(), serving.plugin.spec().reads.iter()] {
        kinds.extend(extra);
    }
    let mut by_kind: HashMap<Gvk, Arc<KindCache>> = HashMap::new();
    for gvk in kinds {
        if by_kind.contains_key(gvk) {
            continue;
        }
        let cache = caches
            .get_or_start(gvk, namespaces)
            .await
            .map_err(|e| format!("reading {gvk}: {}", crate::error_chain(&e)))?;
        wait_synced(&cache, gvk).await?;
        by_kind.insert(gvk.clone(), cache);
    }
    let primary_cache = by_kind[&spec.primary].clone();
    let owned: Vec<Arc<KindCache>> = spec.owns.iter().map(|gvk| by_kind[gvk].clone()).collect();
    let field_manager = format!("wasm-reconciler/{name}");
    let writer = caches.client().clone();

    let mut primaries = primary_cache.list(None);
    primaries.sort_by(|a, b| a.key.cmp(&b.key));
    let mut objects = Vec::with_capacity(primaries.len());
    for primary in primaries {
        let children = world_view::children(&primary, &owned);
        let reader: Arc<dyn ClusterReader> = Arc::new(CacheReader::new(by_kind.clone()));
        let serving_outcome = reconcile(&serving, &primary, &children, reader.clone()).await;
        let candidate_outcome = reconcile(&candidate, &primary, &children, reader).await;
        let same_as_serving = match (&serving_outcome, &candidate_outcome) {
            (Ok(a), Ok(b)) => a == b,
            (Err(a), Err(b)) => a == b,
            _ => false,
        };
        let mut report = ObjectReport {
            kind: spec.primary.kind.clone(),
            namespace: primary.key.namespace.as_deref().map(str::to_owned),
            name: primary.key.name.to_string(),
            result: Verdict::Unchanged,
            error: None,
            children: Vec::new(),
            status: Vec::new(),
            same_as_serving,
        };
        let preview = match candidate_outcome {
            Ok(outcome) => {
                let target = Target {
                    client: &writer,
                    field_manager: &field_manager,
                    by_kind: &by_kind,
                    owned: &owned,
                };
                preview(&primary, &spec, &target, outcome).await
            }
            Err(error) => Err(error),
        };
        match preview {
            Ok((children, status)) => {
                report.result = if children.is_empty() && status.is_empty() {
                    Verdict::Unchanged
                } else {
                    Verdict::Changes
                };
                report.children = children;
                report.status = status;
            }
            Err(error) => {
                report.result = Verdict::Fails;
                report.error = Some(error);
            }
        }
        objects.push(report);
    }
    let mut summary = Summary {
        primaries: objects.len(),
        ..Summary::default()
    };
    for object in &objects {
        match object.result {
            Verdict::Unchanged => summary.unchanged += 1,
            Verdict::Changes => summary.changed += 1,
            Verdict::Fails => summary.failed += 1,
        }
    }
    Ok(Report {
        plugin: name,
        candidate: candidate.info,
        serving: serving.info,
        objects,
        summary,
    })
}

/// The candidate as given: its package, its configuration when it carries one, and where it came from.
struct Candidate {
    package: PluginPackage,
    config: Option<String>,
    source: String,
}

/// Reads the candidate: a component file, a ConfigMap manifest (inline or by reference) or an OCI reference.
async fn candidate_package(args: &DiffArgs) -> Result<(String, Candidate), Box<dyn std::error::Error>> {
    let given = &args.candidate;
    let needs_name = || {
        args.plugin
            .clone()
            .ok_or_else(|| format!("name the plugin {given} would replace with --plugin"))
    };
    if given.starts_with("oci://") {
        let name = needs_name()?;
        let reference = OciReference::parse(given)?;
        let wasm = pull(args, &name, &PluginReference::Oci(reference), None).await?;
        let package = PluginPackage::decode(Some(&wasm), None, None, None, None)?;
        return Ok((
            name,
            Candidate {
                package,
                config: None,
                source: given.clone(),
            },
        ));
    }
    let path = PathBuf::from(given);
    let bytes = super::read_file(&path)?;
    if bytes.starts_with(b"\0asm") {
        let name = needs_name()?;
        let package = PluginPackage::decode(Some(&bytes), None, None, None, None)?;
        return Ok((
            name,
            Candidate {
                package,
                config: None,
                source: path.display().to_string(),
            },
        ));
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        format!(
            "{} is neither a component (.wasm) nor a ConfigMap manifest",
            path.display()
        )
    })?;
    let config_map: ConfigMap = serde_saphyr::from_str(text).map_err(|e| {
        format!(
            "{} is neither a component (.wasm) nor a ConfigMap manifest: {e}",
            path.display()
        )
    })?;
    let name = match (&args.plugin, &config_map.metadata.name) {
        (Some(name), _) | (None, Some(name)) => name.clone(),
        (None, None) => {
            return Err(format!("{} has no metadata.name; name the plugin with --plugin", path.display()).into());
        }
    };
    let source = format!(
        "{} (ConfigMap {})",
        path.display(),
        config_map.metadata.name.as_deref().unwrap_or(&name)
    );
    match configmap::read(&config_map, &SignaturePolicy::none())? {
        Delivered::Inline(package) => Ok((
            name,
            Candidate {
                config: Some(package.config.to_string()),
                package,
                source,
            },
        )),
        Delivered::Referenced(referenced) => {
            let wasm = pull(args, &name, &referenced.reference, referenced.pinned_sha256.as_deref()).await?;
            let package = PluginPackage::decode(
                Some(&wasm),
                None,
                referenced.config.as_deref(),
                referenced.settings_text.as_deref(),
                referenced.pinned_sha256.as_deref(),
            )?;
            Ok((
                name,
                Candidate {
                    config: Some(package.config.to_string()),
                    package,
                    source: format!("{source}: {}", referenced.reference),
                },
            ))
        }
    }
}

/// Pulls a referenced component with the command's registry flags and credentials.
async fn pull(
    args: &DiffArgs,
    plugin: &str,
    reference: &PluginReference,
    sha256: Option<&str>,
) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let client = RegistryClient::new(args.registry.options(), None)?;
    let pulled = match reference {
        PluginReference::Oci(reference) => {
            let auth = args.credentials.auth(&reference.registry)?;
            client.pull(plugin, reference, &auth).await?
        }
        PluginReference::Url(url) => {
            let sha256 = sha256.ok_or("a component by URL needs its sha256 annotation")?;
            client.fetch(plugin, url, sha256).await?
        }
    };
    Ok(pulled.wasm.to_vec())
}

/// The serving revision of `name`, from its WasmPlugin and the revisions in the cluster.
async fn serving(args: &ClusterArgs, name: &str, engine: &PluginEngine) -> Result<Loaded, Box<dyn std::error::Error>> {
    let cluster = Cluster::connect(args).await?;
    let number = serving_revision(&cluster.plugin(name).await?)
        .ok_or_else(|| format!("plugin {name} serves no revision yet (its WasmPlugin shows none)"))?;
    let (package, revision) = cluster.revisions.load(name, number).await?;
    let plugin = load(engine, name, package.wasm, package.settings.limits)
        .await
        .map_err(|e| format!("revision {number} of {name} does not load: {e}"))?;
    Ok(Loaded {
        plugin,
        config: package.config.to_string().into(),
        settings: package.settings,
        info: VersionInfo {
            sha256: revision.sha256,
            source: revision.source,
            revision: Some(number),
        },
    })
}

/// Loads a component off the async runtime; the error is its cause chain.
async fn load(engine: &PluginEngine, name: &str, wasm: Vec<u8>, limits: Limits) -> Result<Plugin, String> {
    let engine = engine.clone();
    let name = name.to_owned();
    tokio::task::spawn_blocking(move || engine.load(&name, &wasm, limits))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| crate::error_chain(&e))
}

/// Waits until `cache` holds the whole kind, or says why it cannot.
async fn wait_synced(cache: &KindCache, gvk: &Gvk) -> Result<(), Box<dyn std::error::Error>> {
    let mut sync = cache.watch_sync();
    let waited = tokio::time::timeout(SYNC_TIMEOUT, async {
        loop {
            let state = sync.borrow_and_update().clone();
            match state {
                CacheSync::Synced => return Ok(()),
                CacheSync::Forbidden(message) => return Err(format!("cannot list and watch {gvk}: {message}")),
                CacheSync::Pending => {}
            }
            if sync.changed().await.is_err() {
                return Err(format!("the cache of {gvk} stopped"));
            }
        }
    })
    .await;
    match waited {
        Ok(result) => result.map_err(Into::into),
        Err(_) => Err(format!("{gvk} was not listed within {} s", SYNC_TIMEOUT.as_secs()).into()),
    }
}

/// One reconcile of `primary` by `version`, off the async runtime; the error is the reason and the message the host
/// would record.
async fn reconcile(
    version: &Loaded,
    primary: &CachedObject,
    children: &[Arc<CachedObject>],
    reader: Arc<dyn ClusterReader>,
) -> Result<Outcome, String> {
    let view = world_view::of(primary, children, &version.config, primary.meta.deleting, 0);
    let plugin = version.plugin.clone();
    tokio::task::spawn_blocking(move || plugin.reconcile(view, reader))
        .await
        .map_err(|e| format!("PluginTrapped: the reconcile task failed: {e}"))?
        .map_err(|e| format!("{}: {e}", e.reason()))
}

/// The writes `outcome` would make for `primary`: children applied as dry runs and compared with the live ones,
/// children pruned, and the status.
async fn preview(
    primary: &CachedObject,
    spec: &ControllerSpec,
    target: &Target<'_>,
    outcome: Outcome,
) -> Result<(Vec<ChildChange>, Vec<FieldChange>), String> {
    let by_kind = target.by_kind;
    let object = primary.dynamic();
    let resource = by_kind[&spec.primary].resource();
    let primary_ref = PrimaryRef::of(&object, resource).ok_or("the primary has no name or uid")?;
    let mut changes = Vec::new();
    if let Some(desired) = &outcome.children {
        let prepared = prepare_children(&primary_ref, spec, desired, |gvk| {
            by_kind.get(gvk).is_some_and(|cache| cache.namespaced())
        })
        .map_err(|e| format!("ScopeDenied: outcome refused, nothing would be written: {e}"))?;
        let mut wanted = HashSet::new();
        for child in &prepared {
            let cache = &by_kind[&child.gvk];
            let namespace = child.object["metadata"]["namespace"].as_str().map(str::to_owned);
            wanted.insert((child.gvk.clone(), namespace.clone(), child.name.clone()));
            let key = crate::runtime::ObjectKey::new(namespace.as_deref(), &child.name);
            let live = cache.get(&key);
            let mut object = child.object.clone();
            if let Some(live) = &live {
                object["metadata"]["uid"] = Value::from(&*live.meta.uid);
                object["metadata"]["resourceVersion"] = Value::from(live.meta.resource_version.to_string());
            }
            let api = api_for(target.client, cache, namespace.as_deref());
            let params = PatchParams::apply(target.field_manager).force().dry_run();
            let applied = api
                .patch(&child.name, &params, &Patch::Apply(&object))
                .await
                .map_err(|e| {
                    format!(
                        "ApplyFailed: the API server refuses {} {}: {}",
                        child.gvk.kind,
                        child.name,
                        crate::error_chain(&e)
                    )
                })?;
            let after = without_server_metadata(serde_json::to_value(&applied).map_err(|e| e.to_string())?);
            let (action, fields) = match &live {
                Some(live) => (
                    ChildAction::Update,
                    field_changes(Some(&without_server_metadata(live.value())), Some(&after)),
                ),
                None => (ChildAction::Create, field_changes(None, Some(&after))),
            };
            if !fields.is_empty() {
                changes.push(ChildChange {
                    kind: kind_name(&child.gvk),
                    namespace,
                    name: child.name.clone(),
                    action,
                    fields,
                });
            }
        }
        let uid = &*primary.meta.uid;
        for (gvk, cache) in spec.owns.iter().zip(target.owned) {
            for observed in cache.controlled_by(uid) {
                let namespace = observed.key.namespace.as_deref().map(str::to_owned);
                let elsewhere = cache.namespaced() && namespace.as_deref() != primary.key.namespace.as_deref();
                if !elsewhere && !wanted.contains(&(gvk.clone(), namespace.clone(), observed.key.name.to_string())) {
                    changes.push(ChildChange {
                        kind: kind_name(gvk),
                        namespace,
                        name: observed.key.name.to_string(),
                        action: ChildAction::Delete,
                        fields: Vec::new(),
                    });
                }
            }
        }
    }
    let live_status = object.data.get("status");
    let status = desired_status(
        live_status,
        outcome.status.as_ref(),
        &outcome.conditions,
        &ReconciledState::succeeded(),
        object.metadata.generation,
        &crate::apply::now(),
    );
    // The host writes it as a merge patch: a `null` removes a field.
    let mut written = live_status.cloned().unwrap_or(Value::Object(Default::default()));
    json_patch::merge(&mut written, &status);
    let status_changes = if live_status == Some(&written) {
        Vec::new()
    } else {
        let mut changes = Vec::new();
        compare("status".to_owned(), live_status, Some(&written), &mut changes);
        changes
    };
    Ok((changes, status_changes))
}

/// Where the candidate's children would be written: the client the host would write with (the plugin's identity when
/// it has one), its field manager, and the caches of the plugin's kinds.
struct Target<'a> {
    client: &'a kube::Client,
    field_manager: &'a str,
    by_kind: &'a HashMap<Gvk, Arc<KindCache>>,
    owned: &'a [Arc<KindCache>],
}

fn api_for(client: &kube::Client, cache: &KindCache, namespace: Option<&str>) -> Api<DynamicObject> {
    let client = client.clone();
    match namespace {
        Some(namespace) if cache.namespaced() => Api::namespaced_with(client, namespace, cache.resource()),
        _ => Api::all_with(client, cache.resource()),
    }
}

/// A configuration file (YAML or JSON mapping) as JSON text.
fn read_config(path: &std::path::Path) -> Result<String, Box<dyn std::error::Error>> {
    let config: Value = crate::fixture::read_yaml(path, "configuration")?;
    if !config.is_object() {
        return Err(format!("{}: the configuration must be a mapping", path.display()).into());
    }
    Ok(config.to_string())
}

/// `Kind` for the core group, `group/version Kind` otherwise.
fn kind_name(gvk: &Gvk) -> String {
    if gvk.group.is_empty() {
        gvk.kind.clone()
    } else {
        format!("{}/{} {}", gvk.group, gvk.version, gvk.kind)
    }
}

/// `object` without the metadata the API server maintains ([`SERVER_METADATA`]).
fn without_server_metadata(mut object: Value) -> Value {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in SERVER_METADATA {
            metadata.remove(field);
        }
    }
    object
}

/// The leaves that differ between `before` and `after`, in path order. Objects are compared key by key and lists
/// of the same length item by item; anything else that differs is one change.
pub fn field_changes(before: Option<&Value>, after: Option<&Value>) -> Vec<FieldChange> {
    let mut changes = Vec::new();
    compare(String::new(), before, after, &mut changes);
    changes
}

fn compare(path: String, before: Option<&Value>, after: Option<&Value>, changes: &mut Vec<FieldChange>) {
    match (before, after) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: BTreeMap<&String, ()> = a.keys().chain(b.keys()).map(|k| (k, ())).collect();
            for key in keys.into_keys() {
                compare(join(&path, key), a.get(key), b.get(key), changes);
            }
        }
        (None, Some(Value::Object(b))) if !b.is_empty() => {
            let sorted: BTreeMap<&String, &Value> = b.iter().collect();
            for (key, value) in sorted {
                compare(join(&path, key), None, Some(value), changes);
            }
        }
        (Some(Value::Object(a)), None) if !a.is_empty() => {
            let sorted: BTreeMap<&String, &Value> = a.iter().collect();
            for (key, value) in sorted {
                compare(join(&path, key), Some(value), None, changes);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                compare(format!("{path}[{index}]"), Some(x), Some(y), changes);
            }
        }
        (a, b) if a != b => changes.push(FieldChange {
            path,
            from: a.cloned(),
            to: b.cloned(),
        }),
        _ => {}
    }
}

/// `path.key`, with keys that are not plain words quoted (`data["app.conf"]`).
fn join(path: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => key.to_owned(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{}]", Value::from(key)),
    }
}

/// The report for people: each primary that would change or fail, then the counts.
pub fn text(report: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let serving = report
        .serving
        .revision
        .map_or_else(String::new, |revision| format!("revision {revision}, "));
    let _ = writeln!(
        out,
        "plugin {}: candidate {} ({}) against the serving {}{} ({})",
        report.plugin,
        short(&report.candidate.sha256),
        report.candidate.source,
        serving,
        short(&report.serving.sha256),
        report.serving.source
    );
    for object in &report.objects {
        let key = match &object.namespace {
            Some(namespace) => format!("{namespace}/{}", object.name),
            None => object.name.clone(),
        };
        let note = if object.same_as_serving {
            " (as the serving revision would)"
        } else {
            ""
        };
        match object.result {
            Verdict::Unchanged => continue,
            Verdict::Fails => {
                let _ = writeln!(
                    out,
                    "\n{} {key}: would fail{note}: {}",
                    object.kind,
                    object.error.as_deref().unwrap_or_default()
                );
            }
            Verdict::Changes => {
                let _ = writeln!(out, "\n{} {key}: would change{note}", object.kind);
            }
        }
        for child in &object.children {
            let child_key = match &child.namespace {
                Some(namespace) => format!("{namespace}/{}", child.name),
                None => child.name.clone(),
            };
            let action = match child.action {
                ChildAction::Create => "create",
                ChildAction::Update => "update",
                ChildAction::Delete => "delete",
            };
            let _ = writeln!(out, "  {action} {} {child_key}", child.kind);
            for field in &child.fields {
                let _ = writeln!(out, "    {}", field_line(field));
            }
        }
        if !object.status.is_empty() {
            let _ = writeln!(out, "  status");
            for field in &object.status {
                let _ = writeln!(out, "    {}", field_line(field));
            }
        }
    }
    let summary = &report.summary;
    let _ = writeln!(
        out,
        "\n{} primaries: {} unchanged, {} would change, {} would fail",
        summary.primaries, summary.unchanged, summary.changed, summary.failed
    );
    out
}

fn field_line(field: &FieldChange) -> String {
    match (&field.from, &field.to) {
        (Some(from), Some(to)) => format!("~ {}: {from} → {to}", field.path),
        (None, Some(to)) => format!("+ {}: {to}", field.path),
        (Some(from), None) => format!("- {}: {from}", field.path),
        (None, None) => format!("  {}", field.path),
    }
}

/// `sha256:` and the first 12 hex digits.
fn short(sha256: &str) -> &str {
    let end = "sha256:".len() + 12;
    sha256.get(..end).unwrap_or(sha256)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn field_changes_name_each_leaf_that_differs() {
        let before = json!({"data": {"a": "1", "b": "2", "app.conf": "x"}, "spec": {"ports": [{"port": 80}]}});
        let after = json!({"data": {"a": "1", "b": "3", "c": "4"}, "spec": {"ports": [{"port": 8080}]}});
        let changes = field_changes(Some(&before), Some(&after));
        let lines: Vec<String> = changes.iter().map(field_line).collect();
        assert_eq!(
            lines,
            [
                "- data[\"app.conf\"]: \"x\"",
                "~ data.b: \"2\" → \"3\"",
                "+ data.c: \"4\"",
                "~ spec.ports[0].port: 80 → 8080",
            ]
        );
        assert!(field_changes(Some(&before), Some(&before)).is_empty());
    }

    #[test]
    fn a_created_object_is_every_field_it_would_have_and_lists_of_other_lengths_change_whole() {
        let created = json!({"kind": "ConfigMap", "data": {"a": "1"}});
        let lines: Vec<String> = field_changes(None, Some(&created)).iter().map(field_line).collect();
        assert_eq!(lines, ["+ data.a: \"1\"", "+ kind: \"ConfigMap\""]);
        let lines: Vec<String> = field_changes(Some(&json!({"l": [1]})), Some(&json!({"l": [1, 2]})))
            .iter()
            .map(field_line)
            .collect();
        assert_eq!(lines, ["~ l: [1] → [1,2]"]);
    }

    #[test]
    fn server_metadata_is_not_a_change() {
        let live = json!({"metadata": {"name": "a", "uid": "u", "resourceVersion": "5", "managedFields": [{}]}});
        let applied = json!({"metadata": {"name": "a", "uid": "u", "resourceVersion": "6"}});
        assert!(
            field_changes(
                Some(&without_server_metadata(live)),
                Some(&without_server_metadata(applied))
            )
            .is_empty()
        );
    }
}
