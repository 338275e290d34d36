//! `wasm-reconciler plugin diff`, used as an operator would before changing a plugin: the serving version against
//! itself changes nothing; a candidate that changes one child and adds another says so for every primary, field by
//! field, and is then delivered and makes exactly the writes it predicted; a failing candidate and a component of
//! another plugin are reported; and no diff writes anything: every request the differ sends is a read or a dry run
//! (recorded in front of the embedded server, from the audit log of a real one), and the embedded server's
//! resourceVersion does not move.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde_json::Value;

use crate::harness::{Cluster, ServerKind, wait_for};
use crate::host_process::{HostProcess, binary};
use crate::kinds::{ECHO_CRD, create_namespace, create_when_served, echo_resource, namespaced};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, pack_manifest, packed};
use crate::plugin_state::WASMPLUGIN_CRD;
use crate::request_recorder::RecordingFront;

const NAMESPACES: [&str; 3] = ["diff-a", "diff-b", "diff-c"];

/// The echo plugin's configuration: the child `echo-child` holding `version`, and `echo-extra` when asked.
fn echo_config(version: &str, extra: bool) -> String {
    let mut config = format!(
        "children:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {{name: echo-child}}\n    data: {{version: \"{version}\"}}\n"
    );
    if extra {
        config.push_str(
            "  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: echo-extra, labels: {tier: extra}}\n    data: {added: \"yes\"}\n",
        );
    }
    config
}

/// Who runs the diffs, with a kubeconfig of its own, and what it sent: every request on the embedded server (a
/// recording front), its writes in a real server's audit log (a ServiceAccount of its own, bound to cluster-admin).
struct Differ {
    kubeconfig: std::path::PathBuf,
    front: Option<RecordingFront>,
}

/// The user the differ is on a real server.
const DIFFER: &str = "plugin-differ";

impl Differ {
    async fn start(cluster: &Cluster, admin: &kube::Client) -> anyhow::Result<Self> {
        let dir = cluster.dir.path().join(DIFFER);
        std::fs::create_dir_all(&dir)?;
        if ServerKind::from_environment() == ServerKind::Embedded {
            let front = RecordingFront::start(cluster.embedded(), &dir).await?;
            return Ok(Self {
                kubeconfig: front.kubeconfig.clone(),
                front: Some(front),
            });
        }
        let token = cluster
            .cluster_admin_token(admin, HOST_NAMESPACE, DIFFER, DIFFER)
            .await?;
        let kubeconfig = dir.join("kubeconfig");
        cluster.token_kubeconfig(&kubeconfig, DIFFER, &token)?;
        Ok(Self {
            kubeconfig,
            front: None,
        })
    }

    /// `wasm-reconciler plugin diff ARGS… --kubeconfig … -n wasm-reconciler`: (success, stdout, stderr).
    fn diff(&self, args: &[&str]) -> (bool, String, String) {
        let output = tokio::task::block_in_place(|| {
            std::process::Command::new(binary())
                .args(["plugin", "diff"])
                .args(args)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(["--namespace", HOST_NAMESPACE])
                .output()
                .expect("running wasm-reconciler plugin diff")
        });
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// The JSON report of `plugin diff --output json` for `candidate`.
    fn diff_json(&self, candidate: &str) -> Value {
        let (ok, stdout, stderr) = self.diff(&[candidate, "--output", "json"]);
        assert!(ok, "plugin diff {candidate} failed: {stderr}");
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("plugin diff printed no JSON ({e}): {stdout}"))
    }

    /// The differ's requests that could store something (each as `METHOD path?query`), and its dry runs.
    fn writes(&self, cluster: &Cluster) -> (Vec<String>, usize) {
        let sent: Vec<(String, bool)> = match &self.front {
            Some(front) => front
                .recording
                .requests()
                .into_iter()
                .filter(|r| r.method != "GET")
                .map(|r| {
                    (
                        format!("{} {}?{}", r.method, r.path, r.query),
                        r.query.contains("dryRun=All"),
                    )
                })
                .collect(),
            None => {
                let user = format!("system:serviceaccount:{HOST_NAMESPACE}:{DIFFER}");
                crate::audit_log::writes(&cluster.real().logs.join("audit.log"))
                    .expect("the audit log")
                    .into_iter()
                    .filter(|w| w.user == user)
                    .map(|w| (format!("{} {}", w.resource, w.uri), w.uri.contains("dryRun=All")))
                    .collect()
            }
        };
        let dry_runs = sent.iter().filter(|(_, dry)| *dry).count();
        (
            sent.into_iter().filter(|(_, dry)| !dry).map(|(w, _)| w).collect(),
            dry_runs,
        )
    }

    /// Panics if the differ sent anything but reads and dry runs; returns the dry runs.
    fn assert_no_write(&self, cluster: &Cluster, what: &str) -> usize {
        let (stored, dry_runs) = self.writes(cluster);
        assert!(stored.is_empty(), "{what} sent writes: {stored:#?}");
        dry_runs
    }
}

/// The value at a `plugin diff` path (`data.version`, `metadata.labels.tier`, `data["app.conf"]`, `list[0]`).
fn at<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let mut value = object;
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            rest = after;
        }
        if let Some(after) = rest.strip_prefix("[\"") {
            let end = after.find("\"]")?;
            value = value.get(&after[..end])?;
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            value = value.get(after[..end].parse::<usize>().ok()?)?;
            rest = &after[end + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            value = value.get(&rest[..end])?;
            rest = &rest[end..];
        }
    }
    Some(value)
}

async fn child(client: &kube::Client, namespace: &str, name: &str) -> Option<ConfigMap> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    config_maps.get_opt(name).await.ok()?
}

async fn wait_version(client: &kube::Client, version: &str) {
    for namespace in NAMESPACES {
        wait_for(
            Duration::from_secs(60),
            &format!("echo-child in {namespace} to hold version {version}"),
            || async {
                let child = child(client, namespace, "echo-child").await?;
                (child.data?.get("version")? == version).then_some(())
            },
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_is_previewed_against_live_objects_without_a_write_and_does_what_it_predicted() -> anyhow::Result<()>
{
    let cluster = Cluster::start_audited().await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    for namespace in NAMESPACES {
        create_namespace(&admin, namespace).await?;
    }
    install_crd(&admin, WASMPLUGIN_CRD).await?;
    install_crd(&admin, ECHO_CRD).await?;

    // Version 1 serves, one Echo in each namespace.
    apply_config_map(
        &admin,
        &packed(
            wasm_reconciler_artifacts::ECHO,
            "echo",
            Some(&echo_config("1", false)),
            true,
        )?,
    )
    .await?;
    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h0", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;
    for namespace in NAMESPACES {
        let echoes = namespaced(&admin, namespace, &echo_resource());
        create_when_served(&echoes, crate::kinds::test_object("Echo", namespace, "one")).await?;
    }
    wait_version(&admin, "1").await;
    let plugins = namespaced(
        &admin,
        HOST_NAMESPACE,
        &wasm_reconciler::telemetry::plugin_status::resource(),
    );
    // Every Echo's status reports its child: the reconcile its child's creation brought about is done, so the
    // serving version, diffed against itself, has nothing left to change.
    wait_for(
        Duration::from_secs(60),
        "revision 1 serving, every Echo reporting its child",
        || async {
            let plugin = serde_json::to_value(plugins.get_opt("echo").await.ok()??).ok()?;
            for namespace in NAMESPACES {
                let echoes = namespaced(&admin, namespace, &echo_resource());
                let echo = serde_json::to_value(echoes.get_opt("one").await.ok()??).ok()?;
                if crate::harness::condition(&echo, "Reconciled") != Some("True")
                    || echo["status"]["echo"]["children"] != serde_json::json!(["echo-child"])
                {
                    return None;
                }
            }
            (plugin["status"]["revision"] == 1).then_some(())
        },
    )
    .await;
    // The host stops, so that the embedded server's resourceVersion moves only if a diff stores something.
    drop(host);
    let differ = Differ::start(&cluster, &admin).await?;
    let resource_version =
        (ServerKind::from_environment() == ServerKind::Embedded).then(|| cluster.embedded().resource_version());

    let dir = tempfile::tempdir()?;
    let write_manifest = |name: &str, config: &str| -> anyhow::Result<String> {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            pack_manifest(wasm_reconciler_artifacts::ECHO, "echo", Some(config), true)?,
        )?;
        Ok(path.display().to_string())
    };

    // The serving version against itself: nothing would change.
    let same = write_manifest("same.yaml", &echo_config("1", false))?;
    let report = differ.diff_json(&same);
    assert_eq!(
        (&report["summary"]["primaries"], &report["summary"]["unchanged"]),
        (&Value::from(3), &Value::from(3)),
        "{report:#}"
    );
    assert_eq!(report["serving"]["revision"], 1, "{report:#}");

    // A candidate that changes echo-child and adds echo-extra: both, for every primary, field by field.
    let candidate = write_manifest("v2.yaml", &echo_config("2", true))?;
    let predicted = differ.diff_json(&candidate);
    let dry_runs = differ.assert_no_write(&cluster, "plugin diff of a candidate that changes children");
    // The children of the serving version against itself (3), those of the candidate (6).
    assert!(dry_runs >= 9, "{dry_runs} dry runs");
    assert_eq!(predicted["summary"]["changed"], 3, "{predicted:#}");
    for object in predicted["objects"].as_array().expect("objects") {
        assert_eq!(
            (&object["kind"], &object["result"]),
            (&Value::from("Echo"), &Value::from("changes"))
        );
        assert_eq!(object["sameAsServing"], false);
        let children = object["children"].as_array().expect("children");
        let update = children
            .iter()
            .find(|c| c["name"] == "echo-child")
            .expect("echo-child changes");
        assert_eq!(update["action"], "update", "{object:#}");
        assert_eq!(
            update["fields"],
            serde_json::json!([{"path": "data.version", "from": "1", "to": "2"}]),
            "{object:#}"
        );
        let create = children
            .iter()
            .find(|c| c["name"] == "echo-extra")
            .expect("echo-extra is created");
        assert_eq!(create["action"], "create", "{object:#}");
        let paths: Vec<&str> = create["fields"]
            .as_array()
            .expect("fields")
            .iter()
            .filter_map(|f| f["path"].as_str())
            .collect();
        // Set by the server (defaulting, ownership) as much as by the plugin: the dry run's answer.
        for path in [
            "data.added",
            "metadata.labels.tier",
            "metadata.ownerReferences",
            "metadata.namespace",
        ] {
            assert!(paths.contains(&path), "{path} missing from {paths:?}");
        }
    }
    let (ok, text, stderr) = differ.diff(&[&candidate]);
    assert!(ok, "{stderr}");
    assert!(
        text.contains("update ConfigMap diff-a/echo-child")
            && text.contains("~ data.version: \"1\" → \"2\"")
            && text.contains("create ConfigMap diff-a/echo-extra")
            && text.contains("3 primaries: 0 unchanged, 3 would change, 0 would fail"),
        "{text}"
    );

    // As a CI gate: --exit-code fails on a change, and passes on none.
    let (ok, _, stderr) = differ.diff(&[&same, "--exit-code"]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = differ.diff(&[&candidate, "--exit-code"]);
    assert!(!ok);
    assert!(
        stderr.contains("3 of 3 primaries would change and 0 would fail"),
        "{stderr}"
    );

    // A candidate that fails, a component file of another plugin, a plugin that does not exist.
    let failing = write_manifest("failing.yaml", "fail: not today\n")?;
    let report = differ.diff_json(&failing);
    assert_eq!(report["summary"]["failed"], 3, "{report:#}");
    let error = report["objects"][0]["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("PluginError:") && error.contains("not today"),
        "{error}"
    );
    let (ok, _, stderr) = differ.diff(&[wasm_reconciler_artifacts::CONFIGMAPSET, "--plugin", "echo"]);
    assert!(!ok);
    assert!(
        stderr.contains("the candidate reconciles") && stderr.contains("a component of another plugin"),
        "{stderr}"
    );
    let (ok, _, stderr) = differ.diff(&[wasm_reconciler_artifacts::ECHO, "--plugin", "nope"]);
    assert!(!ok);
    assert!(stderr.contains("there is no WasmPlugin nope"), "{stderr}");
    let dry_runs = differ.assert_no_write(&cluster, "plugin diff");
    assert!(dry_runs >= 15, "{dry_runs} dry runs");
    if let Some(before) = resource_version {
        assert_eq!(
            cluster.embedded().resource_version(),
            before,
            "the diffs stored something"
        );
    }

    // Delivered, the candidate makes exactly the writes it predicted.
    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h1", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;
    apply_config_map(
        &admin,
        &packed(
            wasm_reconciler_artifacts::ECHO,
            "echo",
            Some(&echo_config("2", true)),
            true,
        )?,
    )
    .await?;
    wait_version(&admin, "2").await;
    for object in predicted["objects"].as_array().expect("objects") {
        let namespace = object["namespace"].as_str().expect("a namespace");
        for change in object["children"].as_array().expect("children") {
            let name = change["name"].as_str().expect("a name");
            let live = wait_for(Duration::from_secs(60), &format!("{namespace}/{name}"), || async {
                child(&admin, namespace, name).await
            })
            .await;
            let live = serde_json::to_value(live)?;
            for field in change["fields"].as_array().expect("fields") {
                let path = field["path"].as_str().expect("a path");
                assert_eq!(
                    at(&live, path),
                    Some(&field["to"]),
                    "{namespace}/{name} {path}: {live:#}"
                );
            }
        }
    }
    drop(host);
    Ok(())
}

/// How long `plugin diff` takes for 1,000 primaries (each with one child, sent as a dry run), on the embedded server;
/// three runs, written to docs/benchmarks/plugin-diff.md with the machine's core count. An ignored test: run it with
/// `cargo test --release --test all -- plugin_diff::measure --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement that writes docs/benchmarks/plugin-diff.md"]
async fn measure() -> anyhow::Result<()> {
    const PRIMARIES: usize = 1000;
    let cluster = Cluster::start_embedded(None).await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    install_crd(&admin, WASMPLUGIN_CRD).await?;
    install_crd(&admin, &crate::harness::example_crd("configmapset")).await?;
    apply_config_map(
        &admin,
        &packed(wasm_reconciler_artifacts::CONFIGMAPSET, "configmapset", None, true)?,
    )
    .await?;
    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h0", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;
    let sets = namespaced(&admin, "default", &crate::kinds::configmapset_resource());
    for index in 0..PRIMARIES {
        create_when_served(
            &sets,
            crate::kinds::configmapset(&format!("set-{index}"), 1, 1, "hello"),
        )
        .await?;
    }
    wait_for(Duration::from_secs(600), "every set reconciled", || async {
        let listed = sets.list(&Default::default()).await.ok()?;
        let reconciled = listed
            .items
            .iter()
            .filter(|set| {
                let set = serde_json::to_value(set).unwrap_or_default();
                crate::harness::condition(&set, "Reconciled") == Some("True")
            })
            .count();
        (reconciled == PRIMARIES).then_some(())
    })
    .await;
    drop(host);
    let differ = Differ::start(&cluster, &admin).await?;
    let dir = tempfile::tempdir()?;
    let candidate = dir.path().join("configmapset.yaml");
    std::fs::write(
        &candidate,
        pack_manifest(wasm_reconciler_artifacts::CONFIGMAPSET, "configmapset", None, true)?,
    )?;
    let candidate = candidate.display().to_string();
    let mut seconds = Vec::new();
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let report = differ.diff_json(&candidate);
        seconds.push(started.elapsed().as_secs_f64());
        assert_eq!(report["summary"]["unchanged"], PRIMARIES, "{}", report["summary"]);
    }
    let dry_runs = differ.assert_no_write(&cluster, "plugin diff");
    assert_eq!(dry_runs, 3 * PRIMARIES, "one dry run per child per run");
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let (min, max) = seconds
        .iter()
        .fold((f64::MAX, 0.0_f64), |(lo, hi), s| (lo.min(*s), hi.max(*s)));
    let runs: Vec<String> = seconds.iter().map(|s| format!("{s:.2}")).collect();
    let results = format!(
        "# Benchmark: `plugin diff` for 1,000 primaries\n\n\
         Written by `cargo test --release --test all -- plugin_diff::measure --ignored --nocapture` (tests/all/plugin_diff.rs).\n\n\
         The embedded API server on loopback holds {PRIMARIES} ConfigMapSets, each with its one ConfigMap, reconciled by the host;\n\
         the host is then stopped, and `wasm-reconciler plugin diff` previews the serving `configmapset` component (a packed\n\
         manifest) against the live objects, three times: it lists the two kinds, reconciles every set with the serving\n\
         revision and the candidate, and sends each child as a server-side apply dry run ({dry_runs} dry runs in all).\n\
         Wall time of the whole command (process start to report), on {cores} cores:\n\n\
         | run | seconds |\n|---|---:|\n{}\n\n\
         Spread: {min:.2}–{max:.2} s.\n",
        runs.iter()
            .enumerate()
            .map(|(i, s)| format!("| {} | {s} |", i + 1))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/benchmarks/plugin-diff.md");
    std::fs::write(path, results)?;
    println!("plugin diff of {PRIMARIES} primaries: {runs:?} s; written to {path}");
    Ok(())
}
