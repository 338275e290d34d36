//! Cross-language conformance: the configmapset plugin written in Python and in TypeScript renders every shared
//! fixture to the golden outcome the Rust plugin must match, describes the same controller, and fails with the
//! same plugin errors. The components are built by `make polyglot`.
//!
//! Also a measurement (ignored by default; it writes `docs/benchmarks/polyglot.md`): per-reconcile time of the
//! three languages on the 21 KB world view of the plugin runtime benchmark, with the phases of a call, the peak
//! linear memory each needs, component sizes and compile times. Run it with
//! `cargo test --release -p wasm-reconciler --test plugins polyglot::measure -- --ignored --nocapture`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_reconciler::cli::{WorldFixture, render_file};
use wasm_reconciler::delivery::PluginSettings;
use wasm_reconciler::plugin::{Limits, Outcome, Plugin, PluginEngine, ReconcileError, WorldView};

use crate::{engine, reader};

/// A port of the configmapset plugin: its language, component and plugin directory.
struct Port {
    language: &'static str,
    wasm: &'static str,
    directory: &'static str,
}

const PORTS: [Port; 2] = [
    Port {
        language: "Python",
        wasm: wasm_reconciler_artifacts::CONFIGMAPSET_PY,
        directory: "configmapset-py",
    },
    Port {
        language: "TypeScript",
        wasm: wasm_reconciler_artifacts::CONFIGMAPSET_TS,
        directory: "configmapset-ts",
    },
];

fn plugins_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins")
}

impl Port {
    /// The component's path, failing with the command that builds it when it is absent.
    fn component(&self) -> &'static str {
        wasm_reconciler_artifacts::polyglot(self.wasm)
    }

    /// The limits the port's `settings.yaml` asks for (the defaults when it has none), as the host applies them.
    fn limits(&self) -> Limits {
        let path = plugins_dir().join(self.directory).join("settings.yaml");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        PluginSettings::parse(&text)
            .unwrap_or_else(|e| panic!("{}: {}", path.display(), wasm_reconciler::error_chain(&e)))
            .limits
    }

    /// The port loaded once for the whole test binary (compiling a Python component takes seconds).
    fn plugin(&self) -> &'static Plugin {
        static LOADED: [OnceLock<Plugin>; 2] = [OnceLock::new(), OnceLock::new()];
        let slot = PORTS
            .iter()
            .position(|port| port.wasm == self.wasm)
            .expect("one of PORTS");
        LOADED[slot].get_or_init(|| {
            let wasm = wasm_reconciler_artifacts::read_polyglot(self.wasm);
            engine()
                .load(self.directory, &wasm, self.limits())
                .unwrap_or_else(|e| panic!("loading {}: {}", self.wasm, wasm_reconciler::error_chain(&e)))
        })
    }
}

fn fixtures() -> Vec<PathBuf> {
    let dir = plugins_dir().join("configmapset/fixtures");
    let mut worlds: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".world.yaml"))
        .collect();
    worlds.sort();
    assert!(worlds.len() >= 7, "only {} configmapset fixtures", worlds.len());
    worlds
}

/// Renders a world fixture as `wasm-reconciler render` does (the same fixture format and reader), with a plugin
/// loaded once.
fn render(plugin: &Plugin, world: &Path) -> Outcome {
    let fixture: WorldFixture = serde_saphyr::from_str(&std::fs::read_to_string(world).unwrap()).unwrap();
    let reader = reader(
        std::iter::once(&fixture.primary)
            .chain(&fixture.children)
            .chain(&fixture.objects)
            .cloned()
            .collect(),
    );
    let config = fixture.config.unwrap_or_else(|| json!({}));
    let view = WorldView {
        deleting: fixture.deleting,
        attempt: fixture.attempt,
        ..WorldView::from_json(&fixture.primary, &fixture.children, &config)
    };
    plugin
        .reconcile(view, reader)
        .unwrap_or_else(|e| panic!("rendering {}: {}", world.display(), wasm_reconciler::error_chain(&e)))
}

fn golden(world: &Path) -> String {
    let path = PathBuf::from(world.to_string_lossy().replace(".world.yaml", ".outcome.yaml"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

#[test]
fn python_and_typescript_render_every_fixture_to_the_rust_golden_outcome() {
    let mut mismatches = Vec::new();
    for port in &PORTS {
        for world in fixtures() {
            let outcome = render(port.plugin(), &world);
            let rendered = serde_saphyr::to_string(&outcome).unwrap();
            let expected = golden(&world);
            // Equal as JSON: the order of an object's keys means nothing (the Rust plugin's children come from a
            // base with the name patched in, so `name` follows the labels there).
            if !same_json(&outcome, &expected) {
                mismatches.push(format!(
                    "{} differs from {}:\n{}",
                    port.language,
                    world.display(),
                    pretty_assertions::StrComparison::new(&expected, &rendered)
                ));
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn the_render_command_runs_the_typescript_component() {
    // The Python component goes through the same `render_file`; compiling it again here would only cost time.
    let world = plugins_dir().join("configmapset/fixtures/slow-start.world.yaml");
    let port = &PORTS[1];
    let outcome = render_file(Path::new(port.component()), &world, None, port.limits())
        .unwrap_or_else(|e| panic!("{}", wasm_reconciler::error_chain(&e)));
    assert!(
        same_json(&outcome, &golden(&world)),
        "{}",
        serde_saphyr::to_string(&outcome).unwrap()
    );
}

/// Whether `outcome` is the outcome the YAML text `golden` describes, as JSON values.
fn same_json(outcome: &impl serde::Serialize, golden: &str) -> bool {
    let golden: Value = serde_saphyr::from_str(golden).expect("golden files are YAML");
    serde_json::to_value(outcome).expect("outcomes serialise") == golden
}

#[test]
fn every_port_describes_the_rust_controller() {
    let rust = crate::load(wasm_reconciler_artifacts::CONFIGMAPSET, Limits::default());
    for port in &PORTS {
        assert_eq!(
            port.plugin().spec(),
            rust.spec(),
            "{} describes another controller",
            port.language
        );
    }
}

/// A child no API server would return (`data` must be a map of strings): the contract 0.1 ports read every child
/// whole and refuse it; the Rust plugin, built against 0.3, asks the host which children contain the template, so it
/// finds this one drifted and rewrites it.
#[test]
fn a_malformed_child_is_refused_by_the_ports_and_rewritten_by_the_contract_0_3_plugin() {
    let world = view(
        json!({"replicas": 1, "template": {"data": {"greeting": "hello"}}}),
        vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "demo-0"}, "data": 5})],
    );
    let rust = crate::load(wasm_reconciler_artifacts::CONFIGMAPSET, Limits::default());
    let outcome = rust
        .reconcile(world.clone(), reader(vec![]))
        .expect("the Rust plugin answers");
    let children = outcome.children.expect("children declared");
    assert_eq!(children.len(), 1);
    assert_eq!(children[0]["data"], json!({"greeting": "hello"}));
    let progressing = outcome
        .conditions
        .iter()
        .find(|condition| condition.condition_type == "Progressing")
        .expect("Progressing");
    assert_eq!(progressing.reason, "Updating");
    for port in &PORTS {
        match port.plugin().reconcile(world.clone(), reader(vec![])) {
            Err(ReconcileError::Plugin(message)) => assert!(message.contains("demo-0"), "{message}"),
            other => panic!("{} answered {other:?}, expected a plugin error", port.language),
        }
    }
}

/// A ConfigMapSet view whose spec is `spec`, with `children`.
fn view(spec: Value, children: Vec<Value>) -> WorldView {
    let primary = json!({
        "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "ConfigMapSet",
        "metadata": {"name": "demo", "namespace": "apps", "uid": "u-1", "generation": 1},
        "spec": spec,
    });
    WorldView::from_json(&primary, &children, &json!({}))
}

#[test]
fn every_port_refuses_a_bad_spec_with_the_rust_plugin_error() {
    let template = json!({"data": {"greeting": "hello"}});
    let cases = [
        (
            "negative replicas",
            view(json!({"replicas": -1, "template": template}), vec![]),
        ),
        (
            "zero burst",
            view(json!({"replicas": 1, "burst": 0, "template": template}), vec![]),
        ),
        ("no template", view(json!({"replicas": 1}), vec![])),
        (
            "replicas as text",
            view(json!({"replicas": "3", "template": template}), vec![]),
        ),
        (
            "replicas past i32",
            view(json!({"replicas": 3_000_000_000_u64, "template": template}), vec![]),
        ),
        (
            "a template data key the API server refuses",
            view(json!({"replicas": 1, "template": {"data": {"check key": "v"}}}), vec![]),
        ),
        (
            "a template label value the API server refuses",
            view(
                json!({"replicas": 1, "template": {"metadata": {"labels": {"app": "-web"}}}}),
                vec![],
            ),
        ),
        (
            "a template annotation key the API server refuses",
            view(
                json!({"replicas": 1, "template": {"metadata": {"annotations": {"Example.com/x": "v"}}}}),
                vec![],
            ),
        ),
    ];
    let rust = crate::load(wasm_reconciler_artifacts::CONFIGMAPSET, Limits::default());
    let ports: Vec<(&str, &Plugin)> = PORTS.iter().map(|port| (port.language, port.plugin())).collect();
    for (case, world) in &cases {
        let expected = match rust.reconcile(world.clone(), reader(vec![])) {
            Err(ReconcileError::Plugin(message)) => message,
            other => panic!("{case}: the Rust plugin answered {other:?}"),
        };
        for (language, plugin) in &ports {
            match plugin.reconcile(world.clone(), reader(vec![])) {
                Err(ReconcileError::Plugin(message)) => {
                    assert_eq!(
                        message, expected,
                        "{case}: {language} words the plugin error differently"
                    )
                }
                other => panic!("{case}: {language} answered {other:?}, expected the plugin error {expected:?}"),
            }
        }
    }
}

#[test]
fn python_and_typescript_reconcile_the_benchmark_view_within_their_limits() {
    for port in &PORTS {
        let outcome = port
            .plugin()
            .reconcile(benchmark_view().view(), reader(vec![]))
            .unwrap_or_else(|e| {
                panic!(
                    "{} on the 21 KB view: {}",
                    port.language,
                    wasm_reconciler::error_chain(&e)
                )
            });
        assert_eq!(outcome.children.map(|children| children.len()), Some(BENCH_CHILDREN));
        let ready = outcome
            .conditions
            .iter()
            .find(|c| c.condition_type == "Ready")
            .expect("a Ready condition");
        assert_eq!(ready.reason, "ReplicasReady", "{}", port.language);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Measurement.

/// Child ConfigMaps in the benchmark's world view.
const BENCH_CHILDREN: usize = 10;
/// Children of the large view.
const LARGE_CHILDREN: usize = 100;
/// Total JSON of the world view (primary + children + config) the padding aims for, as in `benches/reconcile.rs`.
const BENCH_VIEW_BYTES: usize = 20 * 1024;
/// Measured rounds; each round calls every language in turn, so load from elsewhere hits all alike.
const ROUNDS: usize = 20;
/// Calls per language per round, and before measuring.
const CALLS: [(&str, usize); 4] = [
    ("Rust", 100),
    ("TypeScript", 40),
    ("Python", 20),
    ("TypeScript (StarlingMonkey)", 20),
];

/// A steady-state ConfigMapSet and its children as JSON.
struct SetView {
    primary: Value,
    children: Vec<Value>,
}

impl SetView {
    /// The view the host hands the plugin.
    fn view(&self) -> WorldView {
        WorldView::from_json(&self.primary, &self.children, &json!({}))
    }

    /// Bytes of JSON the view puts on the wire.
    fn wire_bytes(&self) -> usize {
        let view = self.view();
        view.primary.len() + view.children.iter().map(String::len).sum::<usize>() + view.config.len()
    }
}

/// The world view of `host/benches/reconcile.rs`: one ConfigMapSet and ten matching children, ~21 KB of JSON.
fn benchmark_view() -> SetView {
    let unpadded = padded_view(BENCH_CHILDREN, 0);
    let per_object = BENCH_VIEW_BYTES.saturating_sub(unpadded.wire_bytes()) / (BENCH_CHILDREN + 1);
    padded_view(BENCH_CHILDREN, per_object)
}

/// A larger steady state, to see how memory and time grow with the view: 100 children of ~10 KB each.
fn large_view() -> SetView {
    padded_view(LARGE_CHILDREN, 10 * 1024)
}

fn padded_view(replicas: usize, padding: usize) -> SetView {
    let mut settings = String::new();
    let mut line = 0;
    while settings.len() < padding {
        let _ = writeln!(settings, "setting-{line}: value-{line}");
        line += 1;
    }
    settings.truncate(padding);
    let data = json!({"greeting": "hello", "settings.yaml": settings});
    let set_uid = "5b0c1a52-1d7e-4c55-9a57-0f3c2b7e1a01";
    let children = (0..replicas)
        .map(|index| {
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {
                    "name": format!("bench-{index}"), "namespace": "apps",
                    "uid": format!("9d1e0000-0000-4000-8000-{index:012}"),
                    "resourceVersion": (200 + index).to_string(), "creationTimestamp": "2026-01-05T10:00:01Z",
                    "labels": {"app": "bench", "examples.wasm-reconciler.io/configmapset": "bench"},
                    "annotations": {"team": "platform"},
                    "ownerReferences": [{
                        "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "ConfigMapSet",
                        "name": "bench", "uid": set_uid, "controller": true, "blockOwnerDeletion": true,
                    }],
                },
                "data": data,
            })
        })
        .collect();
    SetView {
        primary: json!({
            "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "ConfigMapSet",
            "metadata": {
                "name": "bench", "namespace": "apps", "uid": set_uid, "resourceVersion": "100", "generation": 1,
                "creationTimestamp": "2026-01-05T10:00:00Z", "finalizers": ["examples.wasm-reconciler.io/drain"],
            },
            "spec": {
                "replicas": replicas, "burst": 10,
                "template": {"metadata": {"labels": {"app": "bench"}, "annotations": {"team": "platform"}}, "data": data},
            },
        }),
        children,
    }
}

/// One language's component and what was measured of it.
struct Measured {
    language: &'static str,
    path: &'static str,
    bytes: usize,
    gzip_bytes: usize,
    compile: Duration,
    build: Option<String>,
    samples: Vec<Duration>,
    phases: phases::Phases,
    large: phases::Phases,
}

fn gzip_size(bytes: &[u8]) -> usize {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap().len()
}

fn percentile(samples: &[Duration], percent: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let index = ((sorted.len() as f64 - 1.0) * percent / 100.0).round() as usize;
    sorted[index].as_secs_f64() * 1e3
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

#[test]
#[ignore = "a measurement: writes docs/benchmarks/polyglot.md; run with --ignored in release mode"]
fn measure() {
    let load_before = load_average();
    let set = benchmark_view();
    let view = set.view();
    let view_bytes = set.wire_bytes();
    let mut components = vec![
        ("Rust", wasm_reconciler_artifacts::CONFIGMAPSET, None),
        ("Python", PORTS[0].component(), Some(&PORTS[0])),
        ("TypeScript", PORTS[1].component(), Some(&PORTS[1])),
    ];
    // The TypeScript port built with the other engine (`npx wasm-reconciler-build --engine starlingmonkey`), to
    // compare QuickJS with StarlingMonkey on the same code.
    let starlingmonkey = std::env::var("POLYGLOT_STARLINGMONKEY_COMPONENT").ok();
    if let Some(path) = &starlingmonkey {
        let path: &'static str = Box::leak(path.clone().into_boxed_str());
        components.push(("TypeScript (StarlingMonkey)", path, Some(&PORTS[1])));
    }
    // A fresh engine per component, so each compile is measured cold.
    let mut loaded = Vec::new();
    for (language, path, port) in components {
        let wasm = std::fs::read(path).unwrap();
        let engine = PluginEngine::new(None).unwrap();
        let started = Instant::now();
        let plugin = engine
            .load(language, &wasm, port.map_or_else(Limits::default, Port::limits))
            .unwrap_or_else(|e| panic!("{language}: {}", wasm_reconciler::error_chain(&e)));
        let compile = started.elapsed();
        let build = port.and_then(|_| {
            let seconds = Path::new(path).with_extension("build-seconds");
            std::fs::read_to_string(seconds).ok().map(|text| text.trim().to_owned())
        });
        let phases = phases::measure(engine.engine(), &wasm, &view, phases::CALLS).unwrap();
        let large = phases::measure(engine.engine(), &wasm, &large_view().view(), phases::CALLS / 10).unwrap();
        loaded.push((
            Measured {
                language,
                path,
                bytes: wasm.len(),
                gzip_bytes: gzip_size(&wasm),
                compile,
                build,
                samples: Vec::new(),
                phases,
                large,
            },
            plugin,
            engine,
        ));
    }
    let reader = reader(set.children.clone());
    let call = |plugin: &Plugin| {
        let outcome = plugin.reconcile(view.clone(), reader.clone()).unwrap();
        assert_eq!(outcome.children.map(|c| c.len()), Some(BENCH_CHILDREN));
    };
    for (measured, plugin, _) in &loaded {
        let calls = CALLS
            .iter()
            .find(|(language, _)| *language == measured.language)
            .unwrap()
            .1;
        for _ in 0..calls {
            call(plugin);
        }
    }
    for _ in 0..ROUNDS {
        for (measured, plugin, _) in &mut loaded {
            let calls = CALLS
                .iter()
                .find(|(language, _)| *language == measured.language)
                .unwrap()
                .1;
            for _ in 0..calls {
                let started = Instant::now();
                call(plugin);
                measured.samples.push(started.elapsed());
            }
        }
    }
    let load = format!("{load_before} before, {} after", load_average());
    let report = markdown(&loaded.iter().map(|(m, _, _)| m).collect::<Vec<_>>(), view_bytes, &load);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/benchmarks/polyglot.md");
    std::fs::write(&path, &report).unwrap();
    println!("{report}");
}

fn markdown(measured: &[&Measured], view_bytes: usize, load: &str) -> String {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let rust_p50 = percentile(&measured[0].samples, 50.0);
    let mut text = String::new();
    let _ = writeln!(text, "# Plugins in three languages: per-reconcile cost, memory, size\n");
    let _ = writeln!(
        text,
        "Generated by `cargo test --release -p wasm-reconciler --test plugins polyglot::measure -- --ignored` \
         (`host/tests/plugins/polyglot.rs`) at commit `{commit}` on a machine with {cores} cores. The same \
         configmapset controller in Rust (`plugins/configmapset`), Python (`plugins/configmapset-py`, \
         componentize-py 0.25.1) and TypeScript (`plugins/configmapset-ts`, componentize-qjs 0.4.5, QuickJS, \
         `--sync`), each called through the host's plugin runtime (`Plugin::reconcile`: a fresh instance per \
         call from the pooling allocator, encode, call, decode and check the outcome) on the world view of \
         `host/benches/reconcile.rs`: one ConfigMapSet with ten matching children, {view_bytes} bytes of JSON, a \
         steady state (ten children kept, Ready). Load average (1, 5, 15 min): {load}.\n"
    );
    let _ = writeln!(text, "## Per reconcile\n");
    let _ = writeln!(text, "| language | p50 | p90 | p99 | vs Rust (p50) | calls |");
    let _ = writeln!(text, "|---|---:|---:|---:|---:|---:|");
    for m in measured {
        let p50 = percentile(&m.samples, 50.0);
        let _ = writeln!(
            text,
            "| {} | {:.3} ms | {:.3} ms | {:.3} ms | {:.1}x | {} |",
            m.language,
            p50,
            percentile(&m.samples, 90.0),
            percentile(&m.samples, 99.0),
            p50 / rust_p50,
            m.samples.len()
        );
    }
    let _ = writeln!(
        text,
        "\n## Where a call's time goes\n\nThe same component replayed phase by phase on the same engine (p50 of \
         {} calls each; `instantiate` is a fresh instance of the pre-instantiated component, `call` is the guest \
         parsing the view, reconciling and encoding its answer). Peak memory is the largest linear memory the \
         instance reached (its initial memory included), recorded by the store's limiter.\n",
        phases::CALLS
    );
    let _ = writeln!(text, "| language | instantiate | call | total | peak linear memory |");
    let _ = writeln!(text, "|---|---:|---:|---:|---:|");
    for m in measured {
        let p = &m.phases;
        let _ = writeln!(
            text,
            "| {} | {:.3} ms | {:.3} ms | {:.3} ms | {:.1} MiB |",
            m.language,
            percentile(&p.instantiate, 50.0),
            percentile(&p.call, 50.0),
            percentile(&p.total, 50.0),
            p.peak_memory as f64 / (1024.0 * 1024.0)
        );
    }
    let _ = writeln!(text);
    for m in measured {
        let p = &m.phases;
        let instantiate = percentile(&p.instantiate, 50.0);
        let call = percentile(&p.call, 50.0);
        let _ = writeln!(
            text,
            "- {}: the guest's own work dominates ({:.0}% of a call); a fresh instance costs {:.0}%.",
            m.language,
            100.0 * call / (call + instantiate),
            100.0 * instantiate / (call + instantiate),
        );
    }
    let _ = writeln!(
        text,
        "\nThe guest's work is parsing ~21 KB of JSON, comparing ten children with the template and writing ten \
         desired children back: in Python and JavaScript that runs in an interpreter compiled to WebAssembly \
         (CPython in the Python component, QuickJS or SpiderMonkey in the TypeScript one), which is what the \
         factor against Rust measures. An instance starts from the snapshot its build took after importing the \
         plugin, so no interpreter start-up is paid per call; instantiating copies on write the snapshot's memory, \
         which grows with the interpreter's heap (CPython's is the largest)."
    );
    let large_bytes = large_view().wire_bytes();
    let _ = writeln!(
        text,
        "\n## A larger view\n\nThe same steady state with {LARGE_CHILDREN} children of ~10 KB each ({:.2} MB of \
         JSON), replayed the same way ({} calls each): how time and memory grow with the view.\n",
        large_bytes as f64 / 1e6,
        phases::CALLS / 10
    );
    let _ = writeln!(text, "| language | instantiate | call | total | peak linear memory |");
    let _ = writeln!(text, "|---|---:|---:|---:|---:|");
    for m in measured {
        let p = &m.large;
        let _ = writeln!(
            text,
            "| {} | {:.3} ms | {:.3} ms | {:.3} ms | {:.1} MiB |",
            m.language,
            percentile(&p.instantiate, 50.0),
            percentile(&p.call, 50.0),
            percentile(&p.total, 50.0),
            p.peak_memory as f64 / (1024.0 * 1024.0)
        );
    }
    let _ = writeln!(text, "\n## Components\n");
    let _ = writeln!(
        text,
        "A component's size is dominated by the runtime it embeds: CPython with the part of its standard library \
         the plugin needs, QuickJS, or SpiderMonkey; the plugin's own code is a few KB. Compile is wasmtime \
         compiling the component when the host loads it (once per version; `PluginEngine::load`, cold). Build is \
         the componentizer's time in `make polyglot`.\n"
    );
    let _ = writeln!(
        text,
        "| language | component | size | gzip | compile (wasmtime, cold) | build (`make polyglot`) |"
    );
    let _ = writeln!(text, "|---|---|---:|---:|---:|---:|");
    for m in measured {
        let file = Path::new(m.path).file_name().unwrap().to_string_lossy();
        let _ = writeln!(
            text,
            "| {} | `{file}` | {:.2} MB | {:.2} MB | {:.2} s | {} |",
            m.language,
            m.bytes as f64 / 1e6,
            m.gzip_bytes as f64 / 1e6,
            m.compile.as_secs_f64(),
            m.build
                .as_deref()
                .map_or_else(|| "cargo".to_owned(), |s| format!("{s} s")),
        );
    }
    if measured.iter().any(|m| m.language.contains("StarlingMonkey")) {
        let _ = writeln!(
            text,
            "\nTypeScript (StarlingMonkey) is the same TypeScript port built with \
             `npx wasm-reconciler-build dist/src/index.js --engine starlingmonkey` \
             (@bytecodealliance/componentize-js 0.23.0, with @bytecodealliance/preview2-shim 0.17.9 installed \
             beside it), measured by passing its path in `POLYGLOT_STARLINGMONKEY_COMPONENT`."
        );
    }
    text
}

/// The phases of a call, replayed with the contract's bindings, and the peak linear memory of an instance.
mod phases {
    use std::time::{Duration, Instant};

    use wasm_reconciler::plugin::WorldView;
    use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
    use wasmtime::{ResourceLimiter, Store};
    use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

    mod bindings {
        wasmtime::component::bindgen!({ path: "../wit", world: "reconciler" });
    }
    use bindings::wasm_reconciler::plugin::{host, types};

    /// Calls measured per language.
    pub(super) const CALLS: usize = 200;

    pub(super) struct Phases {
        pub(super) instantiate: Vec<Duration>,
        pub(super) call: Vec<Duration>,
        pub(super) total: Vec<Duration>,
        pub(super) peak_memory: usize,
    }

    struct State {
        wasi: WasiCtx,
        table: ResourceTable,
        limiter: PeakMemory,
    }

    /// Grants every growth and remembers the largest memory asked for.
    #[derive(Default)]
    struct PeakMemory {
        peak: usize,
    }

    impl ResourceLimiter for PeakMemory {
        fn memory_growing(&mut self, _: usize, desired: usize, _: Option<usize>) -> wasmtime::Result<bool> {
            self.peak = self.peak.max(desired);
            Ok(true)
        }

        fn table_growing(&mut self, _: usize, _: usize, _: Option<usize>) -> wasmtime::Result<bool> {
            Ok(true)
        }
    }

    impl WasiView for State {
        fn ctx(&mut self) -> WasiCtxView<'_> {
            WasiCtxView {
                ctx: &mut self.wasi,
                table: &mut self.table,
            }
        }
    }

    impl types::Host for State {}

    impl host::Host for State {
        fn log(&mut self, _: host::Level, _: String) {}

        fn get(&mut self, _: types::Gvk, _: Option<String>, _: String) -> Result<Option<String>, String> {
            Ok(None)
        }

        fn list(&mut self, _: types::Gvk, _: Option<String>, _: Option<String>) -> Result<Vec<String>, String> {
            Ok(Vec::new())
        }
    }

    pub(super) fn measure(
        engine: &wasmtime::Engine,
        wasm: &[u8],
        view: &WorldView,
        calls: usize,
    ) -> wasmtime::Result<Phases> {
        let component = Component::new(engine, wasm)?;
        let mut linker: Linker<State> = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        bindings::Reconciler::add_to_linker::<State, HasSelf<State>>(&mut linker, |state| state)?;
        let pre = bindings::ReconcilerPre::new(linker.instantiate_pre(&component)?)?;
        let wire_view = types::WorldView {
            primary: view.primary.clone(),
            children: view.children.clone(),
            config: view.config.clone(),
            deleting: view.deleting,
            attempt: view.attempt,
        };
        let mut phases = Phases {
            instantiate: Vec::new(),
            call: Vec::new(),
            total: Vec::new(),
            peak_memory: 0,
        };
        for round in 0..calls * 2 {
            let state = State {
                wasi: WasiCtx::builder().allow_ip_name_lookup(false).build(),
                table: ResourceTable::new(),
                limiter: PeakMemory::default(),
            };
            let mut store = Store::new(engine, state);
            store.limiter(|state| &mut state.limiter);
            store.set_epoch_deadline(100_000);
            let started = Instant::now();
            let instance = pre.instantiate(&mut store)?;
            let instantiated = Instant::now();
            instance
                .wasm_reconciler_plugin_controller()
                .call_reconcile(&mut store, &wire_view)?
                .map_err(|message| wasmtime::format_err!("plugin error: {message}"))?;
            let called = Instant::now();
            phases.peak_memory = phases.peak_memory.max(store.data().limiter.peak);
            if round >= calls {
                phases.instantiate.push(instantiated - started);
                phases.call.push(called - instantiated);
                phases.total.push(called - started);
            }
        }
        Ok(phases)
    }
}
