//! Plugins delivered as ConfigMaps to a running host: a packed plugin goes live, an update swaps the serving
//! version within seconds, a bad update is refused while the old version keeps serving, and deleting the
//! ConfigMap stops that plugin's controller.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::echo_kind::{create_echo, echoed_config, echoes, wait_for_echo};
use crate::harness::{Cluster, Host, condition, example_crd, wait_for};
use crate::kinds::{ECHO_CRD, configmapset, configmapset_resource, create_namespace, namespaced};
use crate::plugin_configmaps::{
    HOST_NAMESPACE, apply_config_map, delete_config_map, install_crd, packed, plugin_events,
};
use crate::telemetry_probe::{free_local_addr, http_get, sum_samples};

/// Where the primaries live.
const WORKLOAD_NAMESPACE: &str = "default";
/// How soon a new version of a plugin must serve after its ConfigMap changed.
const SWAP_WITHIN: Duration = Duration::from_secs(5);

/// A running host that loads plugins from ConfigMaps in its namespace, with its telemetry endpoint.
struct Setup {
    _cluster: Cluster,
    client: kube::Client,
    host: Host,
    telemetry: SocketAddr,
}

impl Setup {
    /// A cluster with the host namespace and the CRDs in `crds`, and a host watching plugin ConfigMaps.
    async fn start(crds: &[&str]) -> anyhow::Result<Self> {
        let cluster = Cluster::start().await?;
        let client = cluster.client().await?;
        create_namespace(&client, HOST_NAMESPACE).await?;
        for crd in crds {
            install_crd(&client, crd).await?;
        }
        let telemetry = free_local_addr();
        let host = Host::start(
            &cluster,
            Host::cluster_options(HOST_NAMESPACE, "delivery-host", Some(telemetry)),
        )
        .await?;
        Ok(Self {
            _cluster: cluster,
            client,
            host,
            telemetry,
        })
    }

    async fn metrics(&self) -> String {
        let (status, body) = http_get(self.telemetry, "/metrics").await.expect("/metrics answers");
        assert_eq!(status, 200);
        body
    }

    /// Plugin loads of `plugin` with `result` (`loaded` or `refused`) so far.
    async fn loads(&self, plugin: &str, result: &str) -> f64 {
        let plugin = format!("plugin=\"{plugin}\"");
        let result = format!("result=\"{result}\"");
        sum_samples(
            &self.metrics().await,
            "wasm_reconciler_plugin_loads_total",
            &[&plugin, &result],
        )
    }
}

/// The echo plugin packed with a configuration naming `greeting`.
fn echo_plugin(greeting: &str) -> anyhow::Result<ConfigMap> {
    packed(
        wasm_reconciler_artifacts::ECHO,
        "echo",
        Some(&format!("greeting: {greeting}\n")),
        false,
    )
}

fn greets(greeting: &'static str) -> impl Fn(&Value) -> bool {
    move |config| config["greeting"] == greeting
}

/// ConfigMapSets (the configmapset example plugin's kind) in the workload namespace.
fn configmapsets(client: &kube::Client) -> Api<DynamicObject> {
    namespaced(client, WORKLOAD_NAMESPACE, &configmapset_resource())
}

async fn create_configmapset(api: &Api<DynamicObject>, name: &str, replicas: u32) -> anyhow::Result<()> {
    let set: DynamicObject = serde_json::from_value(configmapset(name, replicas, replicas, "hello"))?;
    api.create(&PostParams::default(), &set).await?;
    Ok(())
}

/// Asserts that `check` stays false for all of `window` (an absence can only be shown over a window).
async fn assert_stays_false<F, Fut>(window: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + window;
    while Instant::now() < deadline {
        assert!(!check().await, "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packed_plugin_goes_live_and_a_new_configuration_serves_within_seconds() -> anyhow::Result<()> {
    let setup = Setup::start(&[ECHO_CRD]).await?;
    let echoes = echoes(&setup.client, WORKLOAD_NAMESPACE);
    create_echo(&echoes, "greeter").await?;

    // Dropped into a running host, the plugin goes live.
    apply_config_map(&setup.client, &echo_plugin("hello")?).await?;
    wait_for_echo(
        &echoes,
        "greeter",
        Duration::from_secs(20),
        "the plugin to go live",
        greets("hello"),
    )
    .await;
    let loaded = wait_for(Duration::from_secs(5), "a PluginLoaded Event", || async {
        plugin_events(&setup.client, "echo", "PluginLoaded")
            .await
            .ok()?
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(loaded.type_.as_deref(), Some("Normal"));
    assert_eq!(setup.loads("echo", "loaded").await, 1.0);

    // A new configuration: every object is reconciled again by the new version.
    let updated = Instant::now();
    apply_config_map(&setup.client, &echo_plugin("bonjour")?).await?;
    wait_for_echo(
        &echoes,
        "greeter",
        SWAP_WITHIN,
        "the new configuration to serve",
        greets("bonjour"),
    )
    .await;
    let swap = updated.elapsed();
    println!("a new configuration served {swap:?} after its ConfigMap changed");
    create_echo(&echoes, "newcomer").await?;
    wait_for_echo(
        &echoes,
        "newcomer",
        SWAP_WITHIN,
        "a new object to see the new configuration",
        greets("bonjour"),
    )
    .await;
    assert_eq!(setup.loads("echo", "loaded").await, 2.0);
    assert_eq!(setup.loads("echo", "refused").await, 0.0);

    // The same component stored gzip-compressed is the same version: nothing to reload.
    let compressed = packed(
        wasm_reconciler_artifacts::ECHO,
        "echo",
        Some("greeting: bonjour\n"),
        true,
    )?;
    assert!(compressed.binary_data.as_ref().unwrap().contains_key("plugin.wasm.gz"));
    apply_config_map(&setup.client, &compressed).await?;
    create_echo(&echoes, "after-gzip").await?;
    wait_for_echo(
        &echoes,
        "after-gzip",
        SWAP_WITHIN,
        "the compressed plugin to serve",
        greets("bonjour"),
    )
    .await;
    assert_eq!(
        setup.loads("echo", "loaded").await,
        2.0,
        "an identical version is not loaded again"
    );
    setup.host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_component_in_the_configmap_replaces_the_running_one() -> anyhow::Result<()> {
    let configmapset_crd = example_crd("configmapset");
    let setup = Setup::start(&[ECHO_CRD, &configmapset_crd]).await?;
    let echoes = echoes(&setup.client, WORKLOAD_NAMESPACE);

    // One ConfigMap, `workload`, first carries the echo component ...
    let echo = packed(
        wasm_reconciler_artifacts::ECHO,
        "workload",
        Some("greeting: hello\n"),
        false,
    )?;
    apply_config_map(&setup.client, &echo).await?;
    create_echo(&echoes, "served-by-echo").await?;
    wait_for_echo(
        &echoes,
        "served-by-echo",
        Duration::from_secs(20),
        "echo to serve",
        greets("hello"),
    )
    .await;

    // ... then the configmapset component: its kinds are watched and reconciled from then on.
    let updated = Instant::now();
    let configmapset = packed(wasm_reconciler_artifacts::CONFIGMAPSET, "workload", None, true)?;
    apply_config_map(&setup.client, &configmapset).await?;
    let sets = configmapsets(&setup.client);
    create_configmapset(&sets, "greetings", 1).await?;
    wait_for(SWAP_WITHIN, "the new component to reconcile its kind", || async {
        let set = serde_json::to_value(sets.get("greetings").await.ok()?).ok()?;
        condition(&set, "Reconciled").is_some().then_some(())
    })
    .await;
    println!(
        "a new component served {:?} after its ConfigMap changed",
        updated.elapsed()
    );

    // The echo component no longer serves: a new Echo stays untouched.
    create_echo(&echoes, "after-replacement").await?;
    let set_ready = wait_for(Duration::from_secs(20), "the ConfigMapSet to be Ready", || async {
        let set = serde_json::to_value(sets.get("greetings").await.ok()?).ok()?;
        (condition(&set, "Ready") == Some("True")).then_some(set)
    })
    .await;
    assert_eq!(set_ready["status"]["replicas"], 1);
    assert_stays_false(
        Duration::from_secs(2),
        "the replaced echo component reconciled an Echo",
        || async {
            let echo = serde_json::to_value(echoes.get("after-replacement").await.expect("the Echo exists")).unwrap();
            echoed_config(&echo).is_some()
        },
    )
    .await;
    setup.host.stop().await
}

/// A bad version of the echo plugin's ConfigMap, with a configuration that would show if it ever served.
struct BadVersion {
    what: &'static str,
    config_map: ConfigMap,
    /// Part of the reason the Warning Event must give.
    cause: &'static str,
}

fn bad_versions() -> anyhow::Result<Vec<BadVersion>> {
    let variant = |greeting: &str| echo_plugin(greeting);
    let without_digest = |mut config_map: ConfigMap| {
        config_map.metadata.annotations = None;
        config_map
    };
    let with_component = |mut config_map: ConfigMap, key: &str, bytes: Vec<u8>| {
        config_map.binary_data = Some([(key.to_owned(), ByteString(bytes))].into());
        config_map
    };

    let not_wasm = with_component(
        without_digest(variant("not-wasm")?),
        "plugin.wasm",
        b"#!/bin/sh\necho this is not a component\n".to_vec(),
    );
    let future_wit = with_component(
        without_digest(variant("future-wit")?),
        "plugin.wasm",
        wasm_reconciler_artifacts::read(wasm_reconciler_artifacts::FUTURE_WIT),
    );
    let mut bad_settings = variant("bad-settings")?;
    bad_settings
        .data
        .get_or_insert_default()
        .insert("settings.yaml".into(), "concurrency: 0\n".into());
    let mut digest_mismatch = variant("digest-mismatch")?;
    digest_mismatch
        .metadata
        .annotations
        .get_or_insert_default()
        .insert("wasm-reconciler.io/sha256".into(), "0".repeat(64));
    let gzip_garbage = with_component(
        without_digest(variant("gzip-garbage")?),
        "plugin.wasm.gz",
        b"\x1f\x8b this is not a gzip stream".to_vec(),
    );
    Ok(vec![
        BadVersion {
            what: "not WebAssembly",
            config_map: not_wasm,
            cause: "not a WebAssembly binary",
        },
        BadVersion {
            what: "a future contract version",
            config_map: future_wit,
            cause: "wasm-reconciler:plugin@0.4.0",
        },
        BadVersion {
            what: "broken settings",
            config_map: bad_settings,
            cause: "setting `concurrency`",
        },
        BadVersion {
            what: "a digest mismatch",
            config_map: digest_mismatch,
            cause: "but the package pins 0000",
        },
        BadVersion {
            what: "broken gzip",
            config_map: gzip_garbage,
            cause: "is not valid gzip",
        },
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_version_is_refused_and_the_old_one_keeps_serving() -> anyhow::Result<()> {
    let setup = Setup::start(&[ECHO_CRD]).await?;
    let echoes = echoes(&setup.client, WORKLOAD_NAMESPACE);
    apply_config_map(&setup.client, &echo_plugin("hello")?).await?;
    create_echo(&echoes, "steady").await?;
    wait_for_echo(
        &echoes,
        "steady",
        Duration::from_secs(20),
        "the good version to serve",
        greets("hello"),
    )
    .await;

    for (index, bad) in bad_versions()?.into_iter().enumerate() {
        let refused_before = plugin_events(&setup.client, "echo", "PluginRefused").await?.len();
        let counted_before = setup.loads("echo", "refused").await;
        apply_config_map(&setup.client, &bad.config_map).await?;

        let event = wait_for(
            Duration::from_secs(20),
            &format!("a PluginRefused Event for {}", bad.what),
            || async {
                let events = plugin_events(&setup.client, "echo", "PluginRefused").await.ok()?;
                (events.len() > refused_before).then(|| events.last().cloned())?
            },
        )
        .await;
        assert_eq!(event.type_.as_deref(), Some("Warning"), "{}", bad.what);
        let note = event.note.clone().unwrap_or_default();
        assert!(
            note.contains("the previous version keeps serving") && note.contains(bad.cause),
            "{}: the Event should say why ({}): {note}",
            bad.what,
            bad.cause
        );
        wait_for(
            Duration::from_secs(5),
            &format!("the refused-load metric to count {}", bad.what),
            || async { (setup.loads("echo", "refused").await > counted_before).then_some(()) },
        )
        .await;

        // The old version still serves: a new object is reconciled with the old configuration.
        let probe = format!("after-refusal-{index}");
        create_echo(&echoes, &probe).await?;
        wait_for_echo(
            &echoes,
            &probe,
            Duration::from_secs(20),
            &format!("the old version to serve after {}", bad.what),
            greets("hello"),
        )
        .await;
        let steady = serde_json::to_value(echoes.get("steady").await?)?;
        assert_eq!(
            echoed_config(&steady),
            Some(&json!({"greeting": "hello"})),
            "{}",
            bad.what
        );
    }

    // A good version after the bad ones is accepted again.
    apply_config_map(&setup.client, &echo_plugin("recovered")?).await?;
    wait_for_echo(
        &echoes,
        "steady",
        SWAP_WITHIN,
        "a good version after bad ones",
        greets("recovered"),
    )
    .await;
    setup.host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_plugin_configmap_stops_reconciling_its_kind() -> anyhow::Result<()> {
    let configmapset_crd = example_crd("configmapset");
    let setup = Setup::start(&[ECHO_CRD, &configmapset_crd]).await?;
    let echoes = echoes(&setup.client, WORKLOAD_NAMESPACE);
    apply_config_map(&setup.client, &echo_plugin("hello")?).await?;
    let configmapset = packed(wasm_reconciler_artifacts::CONFIGMAPSET, "configmapset", None, true)?;
    apply_config_map(&setup.client, &configmapset).await?;
    create_echo(&echoes, "before-deletion").await?;
    wait_for_echo(
        &echoes,
        "before-deletion",
        Duration::from_secs(20),
        "echo to serve",
        greets("hello"),
    )
    .await;

    delete_config_map(&setup.client, "echo").await?;
    // The host forgets the plugin (its info metric goes away) once it has stopped its controller.
    wait_for(Duration::from_secs(10), "the echo plugin to be unloaded", || async {
        let metrics = setup.metrics().await;
        (!metrics
            .lines()
            .any(|line| line.starts_with("wasm_reconciler_plugin_info") && line.contains(r#"plugin="echo""#)))
        .then_some(())
    })
    .await;

    create_echo(&echoes, "after-deletion").await?;
    // Positive control: the host is alive and reconciles its other plugin, created after the Echo.
    let sets = configmapsets(&setup.client);
    create_configmapset(&sets, "control", 2).await?;
    wait_for(Duration::from_secs(20), "the other plugin to reconcile", || async {
        let set = serde_json::to_value(sets.get("control").await.ok()?).ok()?;
        (condition(&set, "Ready") == Some("True")).then_some(())
    })
    .await;
    assert_stays_false(
        Duration::from_secs(2),
        "an Echo was reconciled after its plugin was deleted",
        || async {
            let echo = serde_json::to_value(echoes.get("after-deletion").await.expect("the Echo exists")).unwrap();
            echoed_config(&echo).is_some()
        },
    )
    .await;
    // Objects the plugin reconciled before are left as they were.
    let before = serde_json::to_value(echoes.get("before-deletion").await?)?;
    assert_eq!(echoed_config(&before), Some(&json!({"greeting": "hello"})));
    setup.host.stop().await
}
