//! Plugins by reference from a real OCI registry (CNCF Distribution, Debian's `docker-registry`): pushed with
//! `plugin push`, packed with `plugin pack --ref`, pulled by a running host. A 19 MB Python component goes live; a
//! moved tag hot-reloads; a digest mismatch, a missing manifest, a registry that is down, and — under the signature
//! policy — an unsigned plugin, a plugin signed by the wrong key and an inline plugin without a detached signature
//! are each refused with an Event while the old version keeps serving and the host stays healthy. TLS with a
//! generated CA, a pull secret, and a component at an `https://` URL work too.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Parser as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::Value;
use wasm_reconciler::cli::Cli;
use wasm_reconciler::cli::serve::HostOptions;

use crate::echo_kind::{create_echo, echoes, wait_for_echo};
use crate::harness::{Cluster, Host, condition, example_crd, wait_for};
use crate::kinds::{ECHO_CRD, configmapset, configmapset_resource, create_namespace, namespaced};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed, plugin_events};
use crate::registry::{Registry, RegistryConfig};
use crate::telemetry_probe::{free_local_addr, http_get, sum_samples};

/// Where the primaries live.
const WORKLOAD_NAMESPACE: &str = "default";
/// How soon a small plugin serves after its ConfigMap (or tag) changed: pull, compile, swap. Generous: `make test`
/// runs both servers' suites at once, and each compiles the 19 MB Python component beside the other tests.
const SERVE_WITHIN: Duration = Duration::from_secs(120);
/// How long a Python component may take to pull, compile and load on a loaded machine.
const PYTHON_LOAD: Duration = Duration::from_secs(300);
/// How soon a refusal is reported (as generous as `SERVE_WITHIN`, for the same reason).
const REFUSED_WITHIN: Duration = Duration::from_secs(120);

/// Runs the `wasm-reconciler` command line in this process (on a thread of its own: it starts its own runtime).
async fn cli(args: Vec<String>) -> anyhow::Result<()> {
    let shown = args.join(" ");
    let exit = tokio::task::spawn_blocking(move || {
        let mut full = vec!["wasm-reconciler".to_owned()];
        full.extend(args);
        Cli::try_parse_from(full).map(wasm_reconciler::cli::run)
    })
    .await??;
    anyhow::ensure!(
        exit == std::process::ExitCode::SUCCESS,
        "`wasm-reconciler {shown}` failed"
    );
    Ok(())
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

/// `plugin push FILE TARGET EXTRA…`; the digest reference it reports.
async fn push(registry: &Registry, file: &str, repository: &str, tag: &str, extra: &[&str]) -> anyhow::Result<String> {
    let output = registry.dir().join(format!("pushed-{}", uuid_like()));
    let mut args = strings(&["plugin", "push", file, &registry.reference(repository, tag), "-o"]);
    args.push(output.display().to_string());
    args.extend(strings(extra));
    cli(args).await?;
    Ok(std::fs::read_to_string(&output)?.trim().to_owned())
}

/// A name unique within the test process.
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// What `plugin pack --ref` writes for `reference` as plugin `name`.
async fn pack_ref(
    dir: &Path,
    reference: &str,
    name: &str,
    config: Option<&str>,
    settings: Option<&str>,
    extra: &[&str],
) -> anyhow::Result<ConfigMap> {
    let id = uuid_like();
    let output = dir.join(format!("{name}-{id}.yaml"));
    let mut args = strings(&[
        "plugin",
        "pack",
        "--ref",
        reference,
        "--name",
        name,
        "--namespace",
        HOST_NAMESPACE,
    ]);
    args.extend(["-o".to_owned(), output.display().to_string()]);
    for (flag, text) in [("--config", config), ("--settings", settings)] {
        if let Some(text) = text {
            let file = dir.join(format!("{name}-{id}{flag}.yaml"));
            std::fs::write(&file, text)?;
            args.extend([flag.to_owned(), file.display().to_string()]);
        }
    }
    args.extend(strings(extra));
    cli(args).await?;
    Ok(serde_saphyr::from_str(&std::fs::read_to_string(&output)?)?)
}

/// `plugin generate-key` into `dir`; the private and public key paths.
async fn generate_key(dir: &Path, name: &str) -> anyhow::Result<(PathBuf, PathBuf)> {
    let (key, public) = (dir.join(format!("{name}.key")), dir.join(format!("{name}.pub")));
    cli(strings(&[
        "plugin",
        "generate-key",
        "--key-out",
        &key.display().to_string(),
        "--pub-out",
        &public.display().to_string(),
    ]))
    .await?;
    Ok((key, public))
}

fn path_str(path: &Path) -> String {
    path.display().to_string()
}

/// A cluster with the host namespace, the CRDs in `crds`, and a host loading plugin ConfigMaps.
struct Setup {
    _cluster: Cluster,
    client: kube::Client,
    host: Host,
    telemetry: SocketAddr,
}

impl Setup {
    async fn start(crds: &[&str], configure: impl FnOnce(&mut HostOptions)) -> anyhow::Result<Self> {
        let cluster = Cluster::start().await?;
        let client = cluster.client().await?;
        create_namespace(&client, HOST_NAMESPACE).await?;
        for crd in crds {
            install_crd(&client, crd).await?;
        }
        let telemetry = free_local_addr();
        let mut options = Host::cluster_options(HOST_NAMESPACE, "registry-host", Some(telemetry));
        configure(&mut options);
        let host = Host::start(&cluster, options).await?;
        Ok(Self {
            _cluster: cluster,
            client,
            host,
            telemetry,
        })
    }

    /// Plugin loads of `plugin` with `result` (`loaded` or `refused`) so far.
    async fn loads(&self, plugin: &str, result: &str) -> f64 {
        let (status, body) = http_get(self.telemetry, "/metrics").await.expect("/metrics answers");
        assert_eq!(status, 200);
        let plugin = format!("plugin=\"{plugin}\"");
        let result = format!("result=\"{result}\"");
        sum_samples(&body, "wasm_reconciler_plugin_loads_total", &[&plugin, &result])
    }

    /// Waits for a PluginRefused Event on plugin ConfigMap `name` whose note contains `text`; returns the note.
    async fn refused(&self, name: &str, text: &str) -> String {
        let note = wait_for(
            REFUSED_WITHIN,
            &format!("a PluginRefused Event saying {text:?}"),
            || async {
                plugin_events(&self.client, name, "PluginRefused")
                    .await
                    .ok()?
                    .into_iter()
                    .filter_map(|event| event.note)
                    .find(|note| note.contains(text))
            },
        )
        .await;
        assert!(
            note.starts_with("refused, the previous version keeps serving"),
            "{note}"
        );
        note
    }

    /// The host is alive and the metric counted the refusal.
    async fn still_healthy_after_refusing(&self, plugin: &str) {
        let (status, _) = http_get(self.telemetry, "/healthz").await.expect("/healthz answers");
        assert_eq!(status, 200, "the host is alive");
        assert!(self.loads(plugin, "refused").await >= 1.0, "the refusal is counted");
    }
}

fn greets(greeting: &'static str) -> impl Fn(&Value) -> bool {
    move |config| config["greeting"] == greeting
}

/// Asserts that the echo plugin still serves the version greeting `greeting`: a new Echo is reconciled by it.
async fn still_serves(client: &kube::Client, greeting: &'static str) -> anyhow::Result<()> {
    let echoes = echoes(client, WORKLOAD_NAMESPACE);
    let name = format!("probe-{}", uuid_like());
    create_echo(&echoes, &name).await?;
    wait_for_echo(
        &echoes,
        &name,
        SERVE_WITHIN,
        "the old version to keep serving",
        greets(greeting),
    )
    .await;
    Ok(())
}

/// The echo plugin greeting `greeting`, by `reference`, with `settings`.
async fn echo_by_reference(
    registry: &Registry,
    reference: &str,
    greeting: &str,
    settings: Option<&str>,
    extra: &[&str],
) -> anyhow::Result<ConfigMap> {
    pack_ref(
        registry.dir(),
        reference,
        "echo",
        Some(&format!("greeting: {greeting}\n")),
        settings,
        extra,
    )
    .await
}

/// A host serving the echo plugin from `registry` (pushed to `plugins/echo:v1`, referenced by digest) with greeting
/// `hello`, and an Echo reconciled by it.
async fn serving_echo(setup: &Setup, registry: &Registry, push_extra: &[&str]) -> anyhow::Result<String> {
    let pushed = push(
        registry,
        wasm_reconciler_artifacts::ECHO,
        "plugins/echo",
        "v1",
        push_extra,
    )
    .await?;
    apply_config_map(
        &setup.client,
        &echo_by_reference(registry, &pushed, "hello", None, &[]).await?,
    )
    .await?;
    let echoes = echoes(&setup.client, WORKLOAD_NAMESPACE);
    create_echo(&echoes, "greeter").await?;
    wait_for_echo(
        &echoes,
        "greeter",
        SERVE_WITHIN,
        "the plugin by reference to serve",
        greets("hello"),
    )
    .await;
    Ok(pushed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_plugin_goes_live_from_a_registry_reference() -> anyhow::Result<()> {
    let python = wasm_reconciler_artifacts::polyglot(wasm_reconciler_artifacts::CONFIGMAPSET_PY);
    let size = std::fs::metadata(python)?.len();
    assert!(
        size > 6 * 1024 * 1024,
        "a component a ConfigMap cannot hold ({size} bytes)"
    );
    let registry = Registry::start().await?;
    let started = Instant::now();
    let pushed = push(&registry, python, "plugins/configmapset-py", "1.0.0", &[]).await?;
    let push_time = started.elapsed();
    assert!(pushed.starts_with(&format!(
        "{}@sha256:",
        registry.reference("plugins/configmapset-py", "1.0.0")
    )));

    let setup = Setup::start(&[&example_crd("configmapset")], |_| {}).await?;
    let settings =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/configmapset-py/settings.yaml"))
            .ok();
    let config_map = pack_ref(registry.dir(), &pushed, "configmapset", None, settings.as_deref(), &[]).await?;
    assert!(
        config_map.binary_data.is_none(),
        "the ConfigMap carries the reference only"
    );
    let applied = Instant::now();
    apply_config_map(&setup.client, &config_map).await?;

    let sets = namespaced(&setup.client, WORKLOAD_NAMESPACE, &configmapset_resource());
    let set: DynamicObject = serde_json::from_value(configmapset("greetings", 3, 3, "hello"))?;
    sets.create(&PostParams::default(), &set).await?;
    wait_for(
        PYTHON_LOAD,
        "the Python plugin from the registry to make the set Ready",
        || {
            let sets = sets.clone();
            async move {
                let set = serde_json::to_value(sets.get("greetings").await.ok()?).ok()?;
                (condition(&set, "Ready") == Some("True")).then_some(())
            }
        },
    )
    .await;
    let live = applied.elapsed();
    let loaded = wait_for(SERVE_WITHIN, "a PluginLoaded Event naming the digest", || async {
        plugin_events(&setup.client, "configmapset", "PluginLoaded")
            .await
            .ok()?
            .into_iter()
            .filter_map(|event| event.note)
            .find(|note| note.contains(&pushed))
    })
    .await;
    assert!(loaded.contains("(Started)"), "{loaded}");
    assert_eq!(setup.loads("configmapset", "refused").await, 0.0);
    println!(
        "a {size}-byte Python component: pushed (validated, uploaded) in {push_time:?}; Ready {live:?} after its \
         ConfigMap reference was applied"
    );
    setup.host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_tag_hot_reloads_the_plugin() -> anyhow::Result<()> {
    let registry = Registry::start().await?;
    let setup = Setup::start(&[ECHO_CRD, &example_crd("configmapset")], |_| {}).await?;
    push(
        &registry,
        wasm_reconciler_artifacts::ECHO,
        "plugins/workload",
        "live",
        &[],
    )
    .await?;
    let tag = registry.reference("plugins/workload", "live");
    let config_map = pack_ref(
        registry.dir(),
        &tag,
        "workload",
        Some("greeting: hello\n"),
        Some("refreshInterval: 1s\n"),
        &[],
    )
    .await?;
    apply_config_map(&setup.client, &config_map).await?;
    let echoes = echoes(&setup.client, WORKLOAD_NAMESPACE);
    create_echo(&echoes, "greeter").await?;
    wait_for_echo(
        &echoes,
        "greeter",
        SERVE_WITHIN,
        "the tag's version to serve",
        greets("hello"),
    )
    .await;

    // The tag moves to another component; nothing about the ConfigMap changes.
    let moved = Instant::now();
    push(
        &registry,
        wasm_reconciler_artifacts::CONFIGMAPSET,
        "plugins/workload",
        "live",
        &[],
    )
    .await?;
    let sets = namespaced(&setup.client, WORKLOAD_NAMESPACE, &configmapset_resource());
    let set: DynamicObject = serde_json::from_value(configmapset("moved", 2, 2, "hi"))?;
    sets.create(&PostParams::default(), &set).await?;
    wait_for(SERVE_WITHIN, "the component the tag moved to to reconcile", || {
        let sets = sets.clone();
        async move {
            let set = serde_json::to_value(sets.get("moved").await.ok()?).ok()?;
            (condition(&set, "Ready") == Some("True")).then_some(())
        }
    })
    .await;
    println!("the moved tag served {:?} after the push", moved.elapsed());
    let (_, metrics) = http_get(setup.telemetry, "/metrics").await.expect("/metrics answers");
    let moved_to = sha256_hex(&std::fs::read(wasm_reconciler_artifacts::CONFIGMAPSET)?);
    assert_eq!(
        sum_samples(
            &metrics,
            "wasm_reconciler_plugin_info",
            &["plugin=\"workload\"", &format!("sha256=\"{moved_to}\"")]
        ),
        1.0,
        "the info metric names the component the tag moved to"
    );
    assert_eq!(setup.loads("workload", "loaded").await, 2.0);
    assert_eq!(setup.loads("workload", "refused").await, 0.0);
    setup.host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_mismatch_is_refused_and_the_old_version_keeps_serving() -> anyhow::Result<()> {
    let registry = Registry::start().await?;
    let setup = Setup::start(&[ECHO_CRD], |_| {}).await?;
    push(
        &registry,
        wasm_reconciler_artifacts::ECHO,
        "plugins/echo",
        "pinned",
        &[],
    )
    .await?;
    let echo_sha256 = sha256_hex(&std::fs::read(wasm_reconciler_artifacts::ECHO)?);
    // A tag, with the component pinned by the ConfigMap: whatever else the tag moves to is refused.
    let config_map = echo_by_reference(
        &registry,
        &registry.reference("plugins/echo", "pinned"),
        "hello",
        Some("refreshInterval: 1s\n"),
        &["--sha256", &echo_sha256],
    )
    .await?;
    apply_config_map(&setup.client, &config_map).await?;
    still_serves(&setup.client, "hello").await?;

    push(
        &registry,
        wasm_reconciler_artifacts::CONFIGMAPSET,
        "plugins/echo",
        "pinned",
        &[],
    )
    .await?;
    let note = setup.refused("echo", "but the package pins").await;
    assert!(note.contains(&echo_sha256), "{note}");
    still_serves(&setup.client, "hello").await?;
    setup.still_healthy_after_refusing("echo").await;
    setup.host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_manifest_is_refused_then_loaded_once_pushed() -> anyhow::Result<()> {
    let registry = Registry::start().await?;
    let setup = Setup::start(&[ECHO_CRD], |_| {}).await?;
    serving_echo(&setup, &registry, &[]).await?;

    let missing = registry.reference("plugins/echo", "v2");
    apply_config_map(
        &setup.client,
        &echo_by_reference(&registry, &missing, "bonjour", None, &[]).await?,
    )
    .await?;
    let note = setup.refused("echo", "manifest not found").await;
    assert!(note.contains("retrying with backoff"), "{note}");
    still_serves(&setup.client, "hello").await?;
    setup.still_healthy_after_refusing("echo").await;

    // Pushed later, the version goes live without touching the ConfigMap: the host kept retrying.
    push(&registry, wasm_reconciler_artifacts::ECHO, "plugins/echo", "v2", &[]).await?;
    still_serves(&setup.client, "bonjour").await?;
    setup.host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_is_down_is_refused_and_retried() -> anyhow::Result<()> {
    let mut registry = Registry::start().await?;
    let setup = Setup::start(&[ECHO_CRD], |_| {}).await?;
    serving_echo(&setup, &registry, &[]).await?;

    registry.stop().await;
    let tag = registry.reference("plugins/echo", "v1");
    apply_config_map(
        &setup.client,
        &echo_by_reference(&registry, &tag, "bonjour", None, &[]).await?,
    )
    .await?;
    let note = setup.refused("echo", "is unreachable").await;
    assert!(note.contains(&registry.authority()), "{note}");
    still_serves(&setup.client, "hello").await?;
    setup.still_healthy_after_refusing("echo").await;

    registry.start_again().await?;
    still_serves(&setup.client, "bonjour").await?;
    setup.host.stop().await
}

/// A host that requires signatures by `trusted.pub`, the echo plugin signed by it serving, and a key nobody trusts.
async fn signed_setup(registry: &Registry) -> anyhow::Result<(Setup, PathBuf, PathBuf, PathBuf)> {
    let (trusted_key, trusted_pub) = generate_key(registry.dir(), "trusted").await?;
    let (other_key, _) = generate_key(registry.dir(), "other").await?;
    let setup = Setup::start(&[ECHO_CRD, crate::plugin_state::WASMPLUGIN_CRD], |options| {
        options.trusted_keys = vec![trusted_pub.clone()]
    })
    .await?;
    let pushed = serving_echo(&setup, registry, &["--sign-key", &path_str(&trusted_key)]).await?;
    cli(strings(&[
        "plugin",
        "verify",
        &pushed,
        "--key",
        &path_str(&trusted_pub),
    ]))
    .await?;
    Ok((setup, trusted_key, trusted_pub, other_key))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsigned_plugin_is_refused_under_the_signature_policy() -> anyhow::Result<()> {
    let registry = Registry::start().await?;
    let (setup, _, trusted_pub, _) = signed_setup(&registry).await?;
    let unsigned = push(
        &registry,
        wasm_reconciler_artifacts::ECHO,
        "plugins/unsigned",
        "v1",
        &[],
    )
    .await?;
    let error = cli(strings(&[
        "plugin",
        "verify",
        &unsigned,
        "--key",
        &path_str(&trusted_pub),
    ]))
    .await;
    assert!(error.is_err(), "`plugin verify` refuses an unsigned artifact");

    apply_config_map(
        &setup.client,
        &echo_by_reference(&registry, &unsigned, "bonjour", None, &[]).await?,
    )
    .await?;
    let note = setup.refused("echo", "signatures are required").await;
    assert!(note.contains("has none"), "{note}");
    still_serves(&setup.client, "hello").await?;
    setup.still_healthy_after_refusing("echo").await;
    setup.host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_signed_by_an_untrusted_key_is_refused() -> anyhow::Result<()> {
    let registry = Registry::start().await?;
    let (setup, _, trusted_pub, other_key) = signed_setup(&registry).await?;
    let wrong = push(
        &registry,
        wasm_reconciler_artifacts::ECHO,
        "plugins/wrong",
        "v1",
        &["--sign-key", &path_str(&other_key)],
    )
    .await?;
    let error = cli(strings(&["plugin", "verify", &wrong, "--key", &path_str(&trusted_pub)])).await;
    assert!(error.is_err(), "`plugin verify` refuses a signature by another key");

    apply_config_map(
        &setup.client,
        &echo_by_reference(&registry, &wrong, "bonjour", None, &[]).await?,
    )
    .await?;
    let note = setup.refused("echo", "none of the 1 signature(s)").await;
    assert!(
        note.contains("trusted.pub"),
        "the message names the trusted key: {note}"
    );
    still_serves(&setup.client, "hello").await?;
    setup.still_healthy_after_refusing("echo").await;
    setup.host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inline_plugin_needs_a_detached_signature_under_the_policy() -> anyhow::Result<()> {
    let registry = Registry::start().await?;
    let (setup, trusted_key, trusted_pub, _) = signed_setup(&registry).await?;

    // Inline, unsigned: refused.
    apply_config_map(
        &setup.client,
        &packed(
            wasm_reconciler_artifacts::ECHO,
            "echo",
            Some("greeting: bonjour\n"),
            false,
        )?,
    )
    .await?;
    setup.refused("echo", "has no `plugin.wasm.sig`").await;
    still_serves(&setup.client, "hello").await?;
    setup.still_healthy_after_refusing("echo").await;

    // Signed with `plugin sign FILE` and packed with `--signature`: it loads.
    let component = registry.dir().join("echo.wasm");
    std::fs::copy(wasm_reconciler_artifacts::ECHO, &component)?;
    cli(strings(&[
        "plugin",
        "sign",
        &path_str(&component),
        "--key",
        &path_str(&trusted_key),
    ]))
    .await?;
    let signature = registry.dir().join("echo.wasm.sig");
    cli(strings(&[
        "plugin",
        "verify",
        &path_str(&component),
        "--key",
        &path_str(&trusted_pub),
    ]))
    .await?;
    let config = registry.dir().join("echo-config.yaml");
    std::fs::write(&config, "greeting: bonjour\n")?;
    let output = registry.dir().join("echo-signed.yaml");
    cli(strings(&[
        "plugin",
        "pack",
        &path_str(&component),
        "--name",
        "echo",
        "--namespace",
        HOST_NAMESPACE,
        "--config",
        &path_str(&config),
        "--signature",
        &path_str(&signature),
        "-o",
        &path_str(&output),
    ]))
    .await?;
    let signed: ConfigMap = serde_saphyr::from_str(&std::fs::read_to_string(&output)?)?;
    apply_config_map(&setup.client, &signed).await?;
    still_serves(&setup.client, "bonjour").await?;

    // Revision 1, the version signed in its registry, keeps no detached signature: pinned under the policy, it is
    // refused, and the signed inline version (revision 2) keeps serving.
    let plugins = namespaced(
        &setup.client,
        HOST_NAMESPACE,
        &wasm_reconciler::telemetry::plugin_status::resource(),
    );
    let status = |plugin: DynamicObject| plugin.data["status"].clone();
    wait_for(SERVE_WITHIN, "the WasmPlugin to report revision 2", || async {
        let plugin = plugins.get_opt("echo").await.ok()??;
        (status(plugin)["revision"] == 2).then_some(())
    })
    .await;
    plugins
        .patch(
            "echo",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"revision": 1}})),
        )
        .await?;
    let refusal = wait_for(SERVE_WITHIN, "the pin to revision 1 to be refused", || async {
        let plugin = plugins.get_opt("echo").await.ok()??;
        let message = status(plugin)["lastRefusal"]["message"].as_str()?.to_owned();
        message.contains("pinned to revision 1").then_some(message)
    })
    .await;
    assert!(refusal.contains("plugin.wasm.sig"), "{refusal}");
    still_serves(&setup.client, "bonjour").await?;
    setup.host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_registry_with_a_pull_secret() -> anyhow::Result<()> {
    let registry = Registry::start_with(RegistryConfig {
        tls: true,
        user: Some(("puller".into(), "s3cret-pass".into())),
    })
    .await?;
    let docker_config = format!(
        r#"{{"auths": {{"{}": {{"username": "puller", "password": "s3cret-pass"}}}}}}"#,
        registry.authority()
    );
    let auth_file = registry.dir().join("docker-config.json");
    std::fs::write(&auth_file, &docker_config)?;
    let ca = path_str(&registry.ca_bundle());

    // Without the CA the registry's certificate is not trusted; without credentials the registry says no.
    let untrusted = push(
        &registry,
        wasm_reconciler_artifacts::ECHO,
        "plugins/echo",
        "v1",
        &["--auth-file", &path_str(&auth_file)],
    )
    .await;
    assert!(
        untrusted.is_err(),
        "a registry certificate from an unknown CA is refused"
    );
    let anonymous = push(
        &registry,
        wasm_reconciler_artifacts::ECHO,
        "plugins/echo",
        "v1",
        &["--registry-ca", &ca],
    )
    .await;
    assert!(anonymous.is_err(), "the registry requires credentials");
    let pushed = push(
        &registry,
        wasm_reconciler_artifacts::ECHO,
        "plugins/echo",
        "v1",
        &["--registry-ca", &ca, "--auth-file", &path_str(&auth_file)],
    )
    .await?;

    let ca_bundle = registry.ca_bundle();
    let setup = Setup::start(&[ECHO_CRD], |options| options.registry.ca_bundle = Some(ca_bundle)).await?;
    let secrets: Api<Secret> = Api::namespaced(setup.client.clone(), HOST_NAMESPACE);
    let mut secret = Secret::default();
    secret.metadata.name = Some("regcred".into());
    secret.type_ = Some("kubernetes.io/dockerconfigjson".into());
    secret.data = Some([(".dockerconfigjson".to_owned(), ByteString(docker_config.into_bytes()))].into());

    // Referenced before the pull secret exists: refused, retried, and loaded once the Secret is there.
    apply_config_map(
        &setup.client,
        &echo_by_reference(&registry, &pushed, "hello", Some("pullSecret: regcred\n"), &[]).await?,
    )
    .await?;
    setup.refused("echo", "pull secret \"regcred\"").await;
    secrets.create(&PostParams::default(), &secret).await?;
    let echoes = echoes(&setup.client, WORKLOAD_NAMESPACE);
    create_echo(&echoes, "greeter").await?;
    wait_for_echo(
        &echoes,
        "greeter",
        SERVE_WITHIN,
        "the plugin pulled over TLS with the pull secret",
        greets("hello"),
    )
    .await;
    setup.host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_at_an_https_url() -> anyhow::Result<()> {
    let registry = Registry::start_with(RegistryConfig { tls: true, user: None }).await?;
    let ca = path_str(&registry.ca_bundle());
    push(
        &registry,
        wasm_reconciler_artifacts::ECHO,
        "plugins/echo",
        "v1",
        &["--registry-ca", &ca],
    )
    .await?;
    // The registry serves each blob at a plain URL: the component's own address, pinned by its sha256.
    let sha256 = sha256_hex(&std::fs::read(wasm_reconciler_artifacts::ECHO)?);
    let url = format!("https://{}/v2/plugins/echo/blobs/sha256:{sha256}", registry.authority());

    let ca_bundle = registry.ca_bundle();
    let setup = Setup::start(&[ECHO_CRD], |options| options.registry.ca_bundle = Some(ca_bundle)).await?;
    let config_map = echo_by_reference(&registry, &url, "hello", None, &["--sha256", &sha256]).await?;
    apply_config_map(&setup.client, &config_map).await?;
    still_serves(&setup.client, "hello").await?;

    // The same URL pinned to another digest is refused.
    let wrong = "0".repeat(64);
    apply_config_map(
        &setup.client,
        &echo_by_reference(&registry, &url, "bonjour", None, &["--sha256", &wrong]).await?,
    )
    .await?;
    setup.refused("echo", "was expected").await;
    still_serves(&setup.client, "hello").await?;
    setup.still_healthy_after_refusing("echo").await;
    setup.host.stop().await
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = wasm_reconciler::delivery::artifact::sha256_digest(bytes);
    digest.trim_start_matches("sha256:").to_owned()
}
