//! Traces over OTLP as an operator enables them: `wasm-reconciler run` with the `OTEL_*` environment pointing at a
//! real OpenTelemetry Collector (`tests/otelcol/`: the OTLP receiver and the file exporter, on loopback). The batch
//! span processor is told to wait a minute, so what the collector receives was sent by the flush of a SIGTERM.
//! Each reconcile is one trace: a `reconcile` root naming the plugin and the object, with its queue wait, view
//! assembly, plugin call (and the plugin's reads and outbound requests under it) and every write as children.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::harness::{Cluster, example_crd, wait_for};
use crate::host_process::HostProcess;
use crate::kinds::{
    MIRROR_CRD, OUTBOUND_CRD, configmapset, configmapset_resource, create_namespace, namespaced, wait_set_ready,
};
use crate::mirror::{create_mirrors, wait_mirrored};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed};
use crate::telemetry_probe::free_local_addr;

const NAMESPACE: &str = "traced";

/// The directory holding the collector `tests/otelcol/build.sh` built (`make test` builds it first).
fn collector_binary() -> anyhow::Result<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("otelcol/build.sh");
    let output = std::process::Command::new(&script)
        .arg("--print-bin-dir")
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    anyhow::ensure!(output.status.success(), "{} --print-bin-dir failed", script.display());
    let binary = PathBuf::from(String::from_utf8(output.stdout)?.trim()).join("otelcol");
    anyhow::ensure!(
        binary.exists(),
        "the OpenTelemetry Collector is not built ({} is missing): run `make otelcol` (tests/otelcol/build.sh) first",
        binary.display()
    );
    Ok(binary)
}

/// An OpenTelemetry Collector receiving OTLP over HTTP on a loopback port and writing what it receives to a file,
/// one OTLP JSON request per line; killed when dropped.
struct Collector {
    endpoint: SocketAddr,
    spans: PathBuf,
    _process: tokio::process::Child,
}

impl Collector {
    async fn start(dir: &Path) -> anyhow::Result<Self> {
        let endpoint = free_local_addr();
        let spans = dir.join("spans.jsonl");
        let config = dir.join("otelcol.yaml");
        // No telemetry of its own (it would listen on :8888); warnings and errors to its log.
        std::fs::write(
            &config,
            format!(
                "receivers:
  otlp:
    protocols:
      http:
        endpoint: {endpoint}
exporters:
  file:
    path: {spans}
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
",
                spans = spans.display()
            ),
        )?;
        let log = std::fs::File::create(dir.join("otelcol.log"))?;
        let process = tokio::process::Command::new(collector_binary()?)
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .context("starting the OpenTelemetry Collector")?;
        let collector = Self {
            endpoint,
            spans,
            _process: process,
        };
        wait_for(Duration::from_secs(30), "the collector to listen", || async {
            tokio::net::TcpStream::connect(endpoint).await.ok().map(|_| ())
        })
        .await;
        Ok(collector)
    }

    /// Every span received so far.
    fn spans(&self) -> Vec<Span> {
        let text = std::fs::read_to_string(&self.spans).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .flat_map(|request| Span::all_of(&request))
            .collect()
    }
}

/// One span as the collector wrote it (OTLP JSON), with its resource's attributes.
#[derive(Debug, Clone)]
struct Span {
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    /// 1 internal, 2 server, 3 client, …
    kind: i64,
    start: u128,
    end: u128,
    attributes: HashMap<String, Value>,
    status_code: i64,
    resource: HashMap<String, Value>,
}

impl Span {
    fn all_of(request: &Value) -> Vec<Self> {
        let mut spans = Vec::new();
        for resource_spans in request["resourceSpans"].as_array().into_iter().flatten() {
            let resource = attributes(&resource_spans["resource"]["attributes"]);
            for scope_spans in resource_spans["scopeSpans"].as_array().into_iter().flatten() {
                for span in scope_spans["spans"].as_array().into_iter().flatten() {
                    let nanos = |field: &str| span[field].as_str().and_then(|n| n.parse().ok()).unwrap_or_default();
                    spans.push(Self {
                        trace_id: span["traceId"].as_str().unwrap_or_default().to_owned(),
                        span_id: span["spanId"].as_str().unwrap_or_default().to_owned(),
                        parent_span_id: span["parentSpanId"].as_str().unwrap_or_default().to_owned(),
                        name: span["name"].as_str().unwrap_or_default().to_owned(),
                        kind: span["kind"].as_i64().unwrap_or_default(),
                        start: nanos("startTimeUnixNano"),
                        end: nanos("endTimeUnixNano"),
                        attributes: attributes(&span["attributes"]),
                        status_code: span["status"]["code"].as_i64().unwrap_or_default(),
                        resource: resource.clone(),
                    });
                }
            }
        }
        spans
    }

    /// A string attribute.
    fn text(&self, key: &str) -> Option<&str> {
        self.attributes.get(key)?.as_str()
    }
}

/// OTLP JSON attributes (`[{"key": …, "value": {"stringValue": …}}]`) as plain JSON values (integers, which OTLP
/// JSON writes as strings, as numbers).
fn attributes(list: &Value) -> HashMap<String, Value> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|attribute| {
            let key = attribute["key"].as_str()?.to_owned();
            let value = &attribute["value"];
            let value = if let Some(text) = value.get("stringValue") {
                text.clone()
            } else if let Some(integer) = value.get("intValue") {
                json!(
                    integer
                        .as_str()
                        .and_then(|i| i.parse::<i64>().ok())
                        .or(integer.as_i64())
                )
            } else if let Some(flag) = value.get("boolValue") {
                flag.clone()
            } else {
                value.clone()
            };
            Some((key, value))
        })
        .collect()
}

/// The trace of the reconcile of `plugin`'s object `namespace/name` that wrote `writes` (span names, in any order
/// and number, each at least once): its root and every span of the trace.
fn reconcile_trace(spans: &[Span], plugin: &str, object: &str, writes: &[&str]) -> Option<(Span, Vec<Span>)> {
    spans
        .iter()
        .filter(|span| {
            span.name == "reconcile" && span.text("plugin") == Some(plugin) && span.text("object") == Some(object)
        })
        .map(|root| {
            let trace: Vec<Span> = spans
                .iter()
                .filter(|span| span.trace_id == root.trace_id)
                .cloned()
                .collect();
            (root.clone(), trace)
        })
        .find(|(_, trace)| writes.iter().all(|write| trace.iter().any(|span| span.name == *write)))
}

/// The spans of `trace` named `name`.
fn named<'a>(trace: &'a [Span], name: &str) -> Vec<&'a Span> {
    trace.iter().filter(|span| span.name == name).collect()
}

/// The one span of `trace` named `name`, checked to be a child of `parent`.
fn child<'a>(trace: &'a [Span], name: &str, parent: &Span) -> &'a Span {
    let spans = named(trace, name);
    assert_eq!(spans.len(), 1, "one {name} span in the trace: {trace:#?}");
    assert_eq!(
        spans[0].parent_span_id, parent.span_id,
        "{name} is a child of {}",
        parent.name
    );
    spans[0]
}

/// An HTTP server on loopback answering every request with `200 pong`: where the outbound plugin sends its request.
async fn pong_server() -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0; 1024];
                while !request.windows(4).any(|window| window == b"\r\n\r\n") {
                    match stream.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(read) => request.extend_from_slice(&buffer[..read]),
                    }
                }
                let response = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\npong";
                let _ = stream.write_all(response).await;
            });
        }
    });
    Ok(address)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_is_one_trace_of_its_steps_at_an_otlp_collector() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let collector = Collector::start(cluster.dir.path()).await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    create_namespace(&admin, NAMESPACE).await?;
    install_crd(&admin, MIRROR_CRD).await?;
    install_crd(&admin, &example_crd("configmapset")).await?;
    let outbounds = install_crd(&admin, OUTBOUND_CRD).await?;
    apply_config_map(
        &admin,
        &packed(wasm_reconciler_artifacts::MIRROR, "mirror", None, false)?,
    )
    .await?;
    apply_config_map(
        &admin,
        &packed(wasm_reconciler_artifacts::CONFIGMAPSET, "configmapset", None, true)?,
    )
    .await?;
    // The outbound plugin (contract 0.2) sends one GET to a server on loopback, which its settings allow.
    let pong = pong_server().await?;
    let mut outbound = packed(
        wasm_reconciler_artifacts::OUTBOUND,
        "outbound",
        Some(&format!("requests:\n  - url: http://{pong}/ping\n")),
        false,
    )?;
    outbound.data.get_or_insert_default().insert(
        "settings.yaml".into(),
        format!("allowedOutboundHosts: [\"http://{pong}\"]\n"),
    );
    apply_config_map(&admin, &outbound).await?;
    let source: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "source"}, "data": {"version": "v1"}}))?;
    Api::<ConfigMap>::namespaced(admin.clone(), NAMESPACE)
        .create(&PostParams::default(), &source)
        .await?;

    let endpoint = format!("http://{}", collector.endpoint);
    let host = HostProcess::start_with_env(
        cluster.dir.path(),
        &cluster.kubeconfig,
        "traced",
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=e2e"),
            // Nothing is sent before the host stops: the spans the collector gets were flushed by the SIGTERM.
            ("OTEL_BSP_SCHEDULE_DELAY", "60000"),
        ],
    )?;
    host.wait_ready(Duration::from_secs(60)).await;
    // A Mirror reads its source ConfigMap (`host::get`) and writes two copies and its status; a ConfigMapSet gets the
    // plugin's finalizer first.
    create_mirrors(&admin, NAMESPACE, 1, 2).await?;
    let sets = namespaced(&admin, NAMESPACE, &configmapset_resource());
    let mut set: DynamicObject = serde_json::from_value(configmapset("greetings", 2, 2, "hello"))?;
    set.metadata.namespace = Some(NAMESPACE.to_owned());
    sets.create(&PostParams::default(), &set).await?;
    let outbounds = namespaced(&admin, NAMESPACE, &outbounds);
    let ping = json!({"apiVersion": "tests.wasm-reconciler.io/v1", "kind": "Outbound", "metadata": {"name": "ping"}});
    outbounds
        .create(&PostParams::default(), &serde_json::from_value(ping)?)
        .await?;
    wait_mirrored(&admin, NAMESPACE, 1, 2, "v1", Duration::from_secs(60)).await;
    wait_set_ready(&sets, "greetings", 2).await;
    wait_for(
        Duration::from_secs(60),
        "the Outbound's request to be answered",
        || async {
            let ping = serde_json::to_value(outbounds.get("ping").await.ok()?).ok()?;
            (ping["status"]["responses"][0]["status"] == 200).then_some(())
        },
    )
    .await;
    // The ConfigMapSet deleted: its cleanup deletes the children, then the finalizer goes.
    sets.delete("greetings", &DeleteParams::default()).await?;
    wait_for(Duration::from_secs(60), "the ConfigMapSet to be gone", || async {
        matches!(sets.get_opt("greetings").await, Ok(None)).then_some(())
    })
    .await;
    let log = host.log.clone();
    assert!(
        host.terminate(Duration::from_secs(30)).await,
        "the host exits cleanly on SIGTERM"
    );

    let mirror_object = format!("{NAMESPACE}/m0");
    let set_object = format!("{NAMESPACE}/greetings");
    let ping_object = format!("{NAMESPACE}/ping");
    let ((mirror, mirror_trace), (set_root, set_trace), (ping, ping_trace)) = wait_for(
        Duration::from_secs(30),
        "the collector to write the three reconciles' traces",
        || async {
            let spans = collector.spans();
            let mirror = reconcile_trace(
                &spans,
                "mirror",
                &mirror_object,
                &["host.get", "child.apply", "status.write"],
            )?;
            let set = reconcile_trace(&spans, "configmapset", &set_object, &["finalizer.add", "child.apply"])?;
            let ping = reconcile_trace(&spans, "outbound", &ping_object, &["outbound.request", "status.write"])?;
            reconcile_trace(&spans, "configmapset", &set_object, &["finalizer.remove"])?;
            Some((mirror, set, ping))
        },
    )
    .await;

    // The Mirror's reconcile: the root names the plugin and the object; the resource, the service.
    assert_eq!(mirror.parent_span_id, "", "reconcile is the root of its trace");
    assert_eq!(mirror.text("object.kind"), Some("Mirror"));
    assert_eq!(mirror.text("object.api_version"), Some("test.wasm-reconciler.io/v1"));
    assert_eq!(mirror.text("object.namespace"), Some(NAMESPACE));
    assert_eq!(mirror.text("object.name"), Some("m0"));
    // A watch event brings the new Mirror, or the first list does when the plugin's controller starts after it.
    assert!(
        matches!(mirror.text("trigger"), Some("change" | "relist")),
        "trigger: {:?}",
        mirror.text("trigger")
    );
    assert_eq!(mirror.text("outcome"), Some("success"));
    assert_eq!(mirror.resource.get("service.name"), Some(&json!("wasm-reconciler")));
    assert_eq!(mirror.resource.get("deployment.environment.name"), Some(&json!("e2e")));
    // Its steps, each under the reconcile, the plugin's read under the plugin call.
    let waited = child(&mirror_trace, "queue.wait", &mirror);
    assert!(
        waited.start <= waited.end && waited.end <= mirror.start,
        "the queue wait ends as the reconcile starts: {waited:?} {mirror:?}"
    );
    let view = child(&mirror_trace, "view.assemble", &mirror);
    assert_eq!(
        view.attributes.get("children"),
        Some(&json!(0)),
        "no copies yet: {view:?}"
    );
    let call = child(&mirror_trace, "plugin.call", &mirror);
    assert!(view.end <= call.start, "the view is assembled before the call");
    assert!(
        call.text("plugin.digest").is_some_and(|digest| digest.len() == 64),
        "{call:?}"
    );
    let read = child(&mirror_trace, "host.get", call);
    assert_eq!(read.text("kind"), Some("v1/ConfigMap"));
    assert_eq!(read.text("namespace"), Some(NAMESPACE));
    assert_eq!(read.text("name"), Some("source"));
    assert_eq!(read.attributes.get("found"), Some(&json!(true)));
    assert!(
        call.start <= read.start && read.end <= call.end,
        "the read happens during the call"
    );
    // Copies the cache lacks are created only once the primary is confirmed to exist (it has no finalizer).
    let confirm = child(&mirror_trace, "primary.confirm", &mirror);
    assert!(call.end <= confirm.start, "the primary is confirmed after the call");
    let mut copies: Vec<&str> = named(&mirror_trace, "child.apply")
        .iter()
        .inspect(|apply| {
            assert_eq!(
                apply.parent_span_id, mirror.span_id,
                "child.apply is a child of reconcile"
            )
        })
        .inspect(|apply| {
            assert!(
                confirm.end <= apply.start,
                "children are applied after the confirmation"
            )
        })
        .filter_map(|apply| apply.text("name"))
        .collect();
    copies.sort();
    assert_eq!(copies, ["m0-copy-0", "m0-copy-1"]);
    child(&mirror_trace, "status.write", &mirror);
    for span in &mirror_trace {
        assert!(span.start <= span.end, "{span:?}");
        assert_eq!(span.status_code, 0, "no step failed: {span:?}");
        assert!(
            span.end <= mirror.end || span.name == "event.write",
            "{} ends within the reconcile",
            span.name
        );
    }

    // The ConfigMapSet's first reconcile: its finalizer added before the call, then its children and status.
    assert_eq!(set_root.parent_span_id, "");
    assert_eq!(set_root.text("object.kind"), Some("ConfigMapSet"));
    assert_eq!(
        set_root.text("object.api_version"),
        Some("examples.wasm-reconciler.io/v1alpha1")
    );
    assert_eq!(set_root.text("outcome"), Some("success"));
    let finalizer = child(&set_trace, "finalizer.add", &set_root);
    assert_eq!(finalizer.text("finalizer"), Some("examples.wasm-reconciler.io/drain"));
    let call = child(&set_trace, "plugin.call", &set_root);
    assert!(finalizer.end <= call.start, "the finalizer is added before the call");
    child(&set_trace, "queue.wait", &set_root);
    child(&set_trace, "view.assemble", &set_root);
    child(&set_trace, "status.write", &set_root);
    let applies = named(&set_trace, "child.apply");
    assert_eq!(applies.len(), 2);
    assert!(
        applies.iter().all(|apply| apply.text("kind") == Some("v1/ConfigMap")),
        "{applies:?}"
    );

    // The ConfigMapSet's cleanup: its children deleted, by one reconcile or several, then its finalizer removed.
    let spans = collector.spans();
    let (cleanup, cleanup_trace) =
        reconcile_trace(&spans, "configmapset", &set_object, &["finalizer.remove"]).expect("the cleanup's trace");
    let removed = child(&cleanup_trace, "finalizer.remove", &cleanup);
    assert_eq!(removed.text("finalizer"), Some("examples.wasm-reconciler.io/drain"));
    let mut deleted: Vec<&str> = spans
        .iter()
        .filter(|span| span.name == "child.delete")
        .inspect(|delete| {
            let parent = spans.iter().find(|span| span.span_id == delete.parent_span_id);
            assert!(
                parent.is_some_and(|parent| parent.name == "reconcile" && parent.text("object") == Some(&*set_object)),
                "child.delete is a child of the ConfigMapSet's reconcile: {delete:?}"
            );
            assert_eq!(delete.text("kind"), Some("v1/ConfigMap"));
        })
        .filter_map(|delete| delete.text("name"))
        .collect();
    deleted.sort();
    deleted.dedup();
    assert_eq!(deleted, ["greetings-0", "greetings-1"]);

    // The Outbound's reconcile: its request, a client span under the plugin call, answered 200.
    let call = child(&ping_trace, "plugin.call", &ping);
    let request = child(&ping_trace, "outbound.request", call);
    assert_eq!(request.kind, 3, "outbound.request is a client span: {request:?}");
    assert_eq!(request.text("http.request.method"), Some("GET"));
    assert_eq!(request.text("server.address"), Some("127.0.0.1"));
    assert_eq!(request.attributes.get("server.port"), Some(&json!(pong.port())));
    assert_eq!(request.text("url.scheme"), Some("http"));
    assert_eq!(request.attributes.get("http.response.status_code"), Some(&json!(200)));
    assert_eq!(request.status_code, 0, "{request:?}");
    assert!(call.start <= request.start, "the request is sent during the call");
    child(&ping_trace, "status.write", &ping);

    // Log lines are what they were: the `reconcile` span, never a step's.
    let log = std::fs::read_to_string(log)?;
    let reconciled: Vec<Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["message"] == "reconciled" && line["span"]["plugin"] == "mirror")
        .collect();
    assert!(!reconciled.is_empty(), "the host logged the Mirror's reconcile");
    for line in &reconciled {
        assert_eq!(line["span"]["name"], "reconcile", "{line}");
        assert!(
            line["spans"]
                .as_array()
                .is_some_and(|spans| spans.iter().all(|span| span["name"] == "reconcile")),
            "{line}"
        );
    }
    println!(
        "traces: {} spans received; the Mirror's reconcile: {} spans, {} µs",
        collector.spans().len(),
        mirror_trace.len(),
        (mirror.end - mirror.start) / 1000
    );
    Ok(())
}
