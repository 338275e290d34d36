//! Failing plugins: an error is visible on the object and in a Warning Event, retried with exponential backoff, and
//! recovered from by a hot reload; endless loops, panics and memory bombs are contained while other plugins in the
//! same host keep converging — and a host that has seen all that exports every metric `docs/metrics.md` documents.

use std::time::Instant;

use serde_json::Value;

use crate::harness::Host;
use crate::harness::{Cluster, condition};
use crate::kinds::{
    CHAOS_CRD, ECHO_CRD, chaos_resource, configmapset, configmapset_resource, create_namespace, create_when_served,
    echo_resource, failed_with, install_example, install_test_plugin, namespaced, occurrences, reconciled,
    set_ready_with, test_object, wait_event, wait_object,
};
use crate::telemetry_probe::{
    SHARDED_ONLY, documented_metrics, exported, free_local_addr, http_get, sample, sum_samples,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_error_is_reported_retried_with_backoff_and_recovers_on_hot_reload() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let plugins = cluster.dir.path().join("plugins");
    let broken = "fail: the backend is down\n";
    install_test_plugin(
        &plugins,
        "echo",
        wasm_reconciler_artifacts::ECHO,
        ECHO_CRD,
        broken,
        None,
    )?;
    let host = Host::start(&cluster, Host::dev_options(&plugins)).await?;
    let client = cluster.client().await?;
    let echoes = namespaced(&client, "default", &echo_resource());
    create_when_served(&echoes, test_object("Echo", "default", "flaky")).await?;
    let created = Instant::now();

    let failed = wait_object(&echoes, "flaky", "Reconciled=False with PluginError", |echo| {
        failed_with(echo, "PluginError")
    })
    .await;
    let (_, _, message) = reconciled(&failed).expect("a Reconciled condition");
    assert!(message.contains("the backend is down"), "{message}");
    assert_eq!(failed["status"]["observedGeneration"], 1);

    // Every failed attempt is recorded as the same Warning, aggregated into one series.
    let warning = wait_event(&client, "default", "flaky", "Warning", "PluginError", |event| {
        occurrences(event) >= 5
    })
    .await;
    assert!(
        warning
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("the backend is down"),
        "{warning:?}"
    );

    // Fix the configuration on disk: the directory source hot-reloads it and the object reconciles.
    install_test_plugin(
        &plugins,
        "echo",
        wasm_reconciler_artifacts::ECHO,
        ECHO_CRD,
        "greeting: fixed\n",
        None,
    )?;
    let recovered = wait_object(&echoes, "flaky", "Reconciled=True after the fix", |echo| {
        condition(echo, "Reconciled") == Some("True") && echo["status"]["echo"]["config"]["greeting"] == "fixed"
    })
    .await;
    let failing_for = created.elapsed();
    assert_eq!(condition(&recovered, "Ready"), Some("True"));
    // The first successful reconcile is told how many attempts failed before it; its Echoed event says so (later
    // reconciles, with the count reset, say `attempt 0` in Events of their own).
    let echoed = wait_event(&client, "default", "flaky", "Normal", "Echoed", |_| true).await;
    let attempt: u64 = echoed
        .note
        .as_deref()
        .and_then(|note| note.strip_prefix("reconciled attempt "))
        .and_then(|count| count.parse().ok())
        .expect("the plugin's Echoed note names the attempt");
    assert!(
        attempt >= 5,
        "the first success sees the failures before it: attempt {attempt}"
    );
    // Exponential backoff from 5 ms: k failures need about 5 ms * 2^(k-1) of waiting. A few extra immediate
    // retries come from the object's own changes (finalizer, failure status).
    let millis = failing_for.as_millis() as f64;
    let bound = (millis / 5.0 + 1.0).log2() + 5.0;
    assert!(
        (attempt as f64) <= bound,
        "{attempt} attempts in {failing_for:?} is more than exponential backoff allows ({bound:.1})"
    );
    wait_event(&client, "default", "flaky", "Normal", "Reconciled", |event| {
        event
            .note
            .as_deref()
            .is_some_and(|note| note.contains("after failing with PluginError"))
    })
    .await;
    host.stop().await
}

/// A chaos plugin misbehaving with `behaviour`, limited to the namespace of the same name.
fn install_chaos(plugins: &std::path::Path, behaviour: &str, limits: &str) -> anyhow::Result<()> {
    install_test_plugin(
        plugins,
        &format!("chaos-{behaviour}"),
        wasm_reconciler_artifacts::CHAOS,
        CHAOS_CRD,
        &format!("behaviour: {behaviour}\n"),
        Some(&format!("{limits}namespaces: [{behaviour}]\n")),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_plugins_fail_visibly_while_other_plugins_converge() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let client = cluster.client().await?;
    let cases = [
        ("loop", "deadline: 200ms\n", "Timeout", "deadline of 200ms"),
        ("panic", "", "PluginTrapped", "trapped"),
        ("memory-bomb", "memoryLimit: 16Mi\n", "MemoryExhausted", "memory limit"),
    ];
    let plugins = cluster.dir.path().join("plugins");
    for (behaviour, limits, _, _) in cases {
        create_namespace(&client, behaviour).await?;
        install_chaos(&plugins, behaviour, limits)?;
    }
    install_example(&plugins, "configmapset", wasm_reconciler_artifacts::CONFIGMAPSET)?;
    let telemetry = free_local_addr();
    let host = Host::start(
        &cluster,
        wasm_reconciler::cli::serve::HostOptions {
            metrics_addr: Some(telemetry),
            ..Host::dev_options(&plugins)
        },
    )
    .await?;

    for (behaviour, _, reason, detail) in cases {
        let chaos = namespaced(&client, behaviour, &chaos_resource());
        create_when_served(&chaos, test_object("Chaos", behaviour, "trouble")).await?;
        let failed = wait_object(
            &chaos,
            "trouble",
            &format!("{behaviour}: Reconciled=False {reason}"),
            |o| failed_with(o, reason),
        )
        .await;
        let (_, _, message) = reconciled(&failed).expect("a Reconciled condition");
        assert!(message.contains(detail), "{behaviour}: {message}");
        wait_event(&client, behaviour, "trouble", "Warning", reason, |_| true).await;
    }

    // Meanwhile the configmapset plugin in the same host serves as usual.
    let sets = namespaced(&client, "default", &configmapset_resource());
    create_when_served(&sets, configmapset("calm", 5, 5, "hello")).await?;
    wait_object(&sets, "calm", "calm Ready with 5 replicas", |set| {
        set_ready_with(set, 5)
    })
    .await;

    for (behaviour, _, reason, _) in cases {
        let chaos = namespaced(&client, behaviour, &chaos_resource());
        let object: Value = serde_json::to_value(chaos.get("trouble").await?)?;
        assert!(
            failed_with(&object, reason),
            "{behaviour} keeps failing: {}",
            object["status"]
        );
        assert!(
            object["status"].get("behaved").is_none(),
            "a failed reconcile writes no plugin status"
        );
    }

    // Every documented metric is exported by this host, which has reconciled, failed and retried.
    let (status, metrics) = http_get(telemetry, "/metrics").await.expect("the host serves /metrics");
    assert_eq!(status, 200);
    // Sharded mode's metrics are checked by the sharding test.
    let documented: Vec<String> = documented_metrics()
        .into_iter()
        .filter(|name| !name.starts_with(SHARDED_ONLY))
        .collect();
    assert!(
        documented.len() >= 12,
        "docs/metrics.md lists the metrics: {documented:?}"
    );
    let missing: Vec<&String> = documented.iter().filter(|name| !exported(&metrics, name)).collect();
    assert!(
        missing.is_empty(),
        "documented but not exported: {missing:?}\n{metrics}"
    );
    let of = |plugin: &str| format!(r#"plugin="{plugin}""#);
    for (metric, plugin) in [
        ("wasm_reconciler_workqueue_adds_total", "configmapset"),
        ("wasm_reconciler_workqueue_retries_total", "chaos-loop"),
        ("wasm_reconciler_plugin_timeouts_total", "chaos-loop"),
        ("wasm_reconciler_plugin_memory_exhausted_total", "chaos-memory-bomb"),
        ("wasm_reconciler_reconcile_duration_seconds_count", "configmapset"),
    ] {
        assert!(
            sum_samples(&metrics, metric, &[&of(plugin)]) > 0.0,
            "{metric} of {plugin}\n{metrics}"
        );
    }
    assert!(
        sum_samples(
            &metrics,
            "wasm_reconciler_reconcile_total",
            &[&of("configmapset"), r#"result="success""#]
        ) > 0.0
    );
    assert!(
        sum_samples(
            &metrics,
            "wasm_reconciler_reconcile_errors_total",
            &[&of("chaos-panic"), r#"reason="PluginTrapped""#]
        ) > 0.0
    );
    assert!(
        sum_samples(
            &metrics,
            "wasm_reconciler_plugin_loads_total",
            &[&of("configmapset"), r#"result="loaded""#]
        ) > 0.0
    );
    assert!(sum_samples(&metrics, "wasm_reconciler_plugin_info", &[&of("configmapset")]) == 1.0);
    assert!(sum_samples(&metrics, "wasm_reconciler_workqueue_depth", &[&of("configmapset")]) >= 0.0);
    assert_eq!(sample(&metrics, "wasm_reconciler_leader"), Some(1.0));
    // The cache metric is refreshed every half second; the five children are there by then.
    let cached = crate::harness::wait_for(
        std::time::Duration::from_secs(10),
        "cached ConfigMaps counted",
        || async move {
            let (_, metrics) = http_get(telemetry, "/metrics").await?;
            let cached = sum_samples(&metrics, "wasm_reconciler_cache_objects", &[r#"kind="v1/ConfigMap""#]);
            (cached >= 5.0).then_some(cached)
        },
    )
    .await;
    assert!(cached >= 5.0);
    host.stop().await
}
