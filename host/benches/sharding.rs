//! Benchmark: sharded mode with 1, 2 and 3 replicas. For each replica count, a fresh embedded API server (its own
//! process) and that many `wasm-reconciler run --sharding` processes with the `configmapset` plugin; 10,000
//! ConfigMapSets of 2 replicas each (30,000 objects to cache) are created, and the run measures the converge time
//! and each replica's resident memory and cached objects once every set is Ready and the shares have settled.
//! Writes `docs/benchmarks/sharding.md`. Run it with `make bench-sharding` (`cargo bench -p wasm-reconciler --bench
//! sharding`).
//!
//! Knobs (environment variables, defaults in brackets): `SHARDING_SETS` [10000], `SHARDING_CHILDREN` [2],
//! `SHARDING_REPLICAS` [1,2,3], `SHARDING_OUTPUT` [docs/benchmarks/sharding.md].

use std::collections::HashSet;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use futures::{StreamExt as _, TryStreamExt as _};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, Command};

mod support;
use support::{Machine, Memory, load_average, start_api_server, write_run_lines};

const NAMESPACE: &str = "default";
const HOST_NAMESPACE: &str = "wasm-reconciler";
const IN_FLIGHT: usize = 64;
const SET_KIND: &str = "examples.wasm-reconciler.io/v1alpha1/ConfigMapSet";

fn set_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "examples.wasm-reconciler.io",
        "v1alpha1",
        "ConfigMapSet",
    ))
}

async fn client_from(kubeconfig: &Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

fn env_list(name: &str, default: &str) -> anyhow::Result<Vec<usize>> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .with_context(|| format!("{name} is a comma-separated list of numbers"))
        })
        .collect()
}

/// The embedded API server in its own process, with the ConfigMapSet CRD and the host's namespace.
async fn start_cluster(dir: &Path) -> anyhow::Result<(Child, PathBuf, kube::Client)> {
    let (child, kubeconfig) = start_api_server(dir).await?;
    let client = client_from(&kubeconfig).await?;
    let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/configmapset/crd.yaml");
    wasm_reconciler::delivery::directory::install_crds(&client, &crd)
        .await
        .map_err(|error| anyhow!("installing {}: {error}", crd.display()))?;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": HOST_NAMESPACE}}))?,
        )
        .await?;
    Ok((child, kubeconfig, client))
}

/// One host replica: `wasm-reconciler run --sharding`.
struct Replica {
    identity: String,
    child: Child,
    metrics: SocketAddr,
}

impl Replica {
    async fn start(kubeconfig: &Path, plugins: &Path, identity: String, log: &Path) -> anyhow::Result<Self> {
        let metrics = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            listener.local_addr()?
        };
        let log = std::fs::File::create(log)?;
        let child = Command::new(env!("CARGO_BIN_EXE_wasm-reconciler"))
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args([
                "--namespace",
                HOST_NAMESPACE,
                "--no-configmaps",
                "--sharding",
                "--identity",
                &identity,
            ])
            .arg("--plugins-dir")
            .arg(plugins)
            .args(["--metrics-addr", &metrics.to_string()])
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .context("starting a host")?;
        Ok(Self {
            identity,
            child,
            metrics,
        })
    }

    fn pid(&self) -> anyhow::Result<u32> {
        self.child.id().context("the host exited")
    }

    async fn get(&self, path: &str) -> Option<(u16, String)> {
        let mut stream = tokio::net::TcpStream::connect(self.metrics).await.ok()?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.ok()?;
        let response = String::from_utf8_lossy(&response).into_owned();
        let status = response.split_whitespace().nth(1)?.parse().ok()?;
        let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_owned())?;
        Some((status, body))
    }

    /// Objects of every kind in this replica's caches, and of the sets alone.
    async fn cached(&self) -> Option<(f64, f64)> {
        let (_, body) = self.get("/metrics").await?;
        let mut all = 0.0;
        let mut sets = 0.0;
        for line in body.lines().filter(|l| l.starts_with("wasm_reconciler_cache_objects{")) {
            let value: f64 = line.rsplit(' ').next()?.parse().ok()?;
            all += value;
            if line.contains(SET_KIND) {
                sets += value;
            }
        }
        Some((all, sets))
    }

    async fn wait_ready(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !matches!(self.get("/readyz").await, Some((200, _))) {
            anyhow::ensure!(
                Instant::now() < deadline,
                "{} did not become Ready in 120 s",
                self.identity
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    }
}

/// What one replica measured.
struct Reading {
    /// RSS at rest with the plugin loaded, before the load (KiB).
    before_kib: u64,
    /// RSS at rest once the caches settled (KiB).
    rss_kib: u64,
    peak_kib: u64,
    /// Objects of every kind in its caches.
    objects: f64,
    /// It held the sharder role.
    sharder: bool,
}

/// What one replica count measured.
struct Run {
    replicas: usize,
    converge: Duration,
    settled: Duration,
    per_replica: Vec<Reading>,
}

async fn measure(replicas: usize, sets: usize, children: u32, logs: &Path) -> anyhow::Result<Run> {
    let dir = tempfile::tempdir()?;
    let (mut api_server, kubeconfig, client) = start_cluster(dir.path()).await?;
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(plugins.join("configmapset"))?;
    std::fs::write(
        plugins.join("configmapset/plugin.wasm"),
        wasm_reconciler_artifacts::read(wasm_reconciler_artifacts::CONFIGMAPSET),
    )?;
    let mut hosts = Vec::new();
    for index in 0..replicas {
        let identity = format!("host-{index}");
        let log = logs.join(format!("replicas{replicas}-{identity}.log"));
        hosts.push(Replica::start(&kubeconfig, &plugins, identity, &log).await?);
    }
    for host in &hosts {
        host.wait_ready().await?;
    }
    // The plugin is loaded and its (empty) caches synced once each replica reports its ConfigMapSet cache.
    let series = format!(r#"wasm_reconciler_cache_objects{{kind="{SET_KIND}"}}"#);
    for host in &hosts {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !host
            .get("/metrics")
            .await
            .is_some_and(|(_, body)| body.contains(&series))
        {
            anyhow::ensure!(Instant::now() < deadline, "{} did not start the plugin", host.identity);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before: Vec<u64> = hosts
        .iter()
        .map(|host| Memory::of(host.pid()?).map(|m| m.rss_kib))
        .collect::<anyhow::Result<_>>()?;

    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &set_resource());
    let (ready_tx, mut ready_rx) = tokio::sync::watch::channel(0usize);
    let watch = tokio::spawn({
        let api = api.clone();
        async move {
            let mut ready: HashSet<String> = HashSet::new();
            let mut events = std::pin::pin!(watcher::watcher(api, watcher::Config::default()));
            while let Some(Ok(event)) = events.next().await {
                if let Event::Apply(set) | Event::InitApply(set) = event {
                    let is_ready = set.data["status"]["conditions"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
                        && set.data["status"]["readyReplicas"] == json!(children);
                    if is_ready && ready.insert(set.metadata.name.clone().unwrap_or_default()) {
                        ready_tx.send_replace(ready.len());
                    }
                }
            }
        }
    });
    eprintln!("sharding: {replicas} replica(s), creating {sets} sets of {children}");
    let started = Instant::now();
    futures::stream::iter(0..sets)
        .map(|index| {
            let api = api.clone();
            async move {
                let set = DynamicObject::new(&format!("set-{index:05}"), &set_resource())
                    .within(NAMESPACE)
                    .data(json!({"spec": {"replicas": children, "template": {"data": {"k": "v"}}}}));
                api.create(&PostParams::default(), &set).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_for_each(|()| async { Ok(()) })
        .await?;
    tokio::time::timeout(Duration::from_secs(1800), ready_rx.wait_for(|ready| *ready >= sets))
        .await
        .context("the sets did not converge in 30 min")??;
    let converge = started.elapsed();
    eprintln!(
        "sharding: {replicas} replica(s) converged in {:.1} s",
        converge.as_secs_f64()
    );
    watch.abort();
    // Settled: every object is cached by exactly one replica.
    let expected = (sets * (1 + children as usize)) as f64;
    let deadline = Instant::now() + Duration::from_secs(300);
    let cached = loop {
        let mut cached = Vec::new();
        for host in &hosts {
            cached.push(host.cached().await.unwrap_or_default());
        }
        if cached.iter().map(|(all, _)| all).sum::<f64>() == expected {
            break cached;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the caches hold {cached:?}, not {expected} objects in all"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let settled = started.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut per_replica = Vec::new();
    for ((host, before_kib), (objects, _)) in hosts.iter().zip(before).zip(cached) {
        let memory = Memory::of(host.pid()?)?;
        let sharder = host
            .get("/metrics")
            .await
            .is_some_and(|(_, body)| body.contains(r#"wasm_reconciler_shard_role{role="sharder"} 1"#));
        per_replica.push(Reading {
            sharder,
            before_kib,
            rss_kib: memory.rss_kib,
            peak_kib: memory.peak_kib,
            objects,
        });
    }
    for host in &mut hosts {
        host.child.kill().await?;
    }
    api_server.kill().await?;
    Ok(Run {
        replicas,
        converge,
        settled,
        per_replica,
    })
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn render(machine: &Machine, load_before: &str, took: Duration, sets: usize, children: u32, runs: &[Run]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmark: sharded mode with 1, 2 and 3 replicas\n");
    let _ = writeln!(
        out,
        "Generated by `make bench-sharding` (`cargo bench -p wasm-reconciler --bench sharding`, \
         `host/benches/sharding.rs`); do not edit.\n"
    );
    write_run_lines(&mut out, machine, load_before, took);
    let objects = sets * (1 + children as usize);
    let _ = writeln!(
        out,
        "- Load: {sets} ConfigMapSets × {children} replicas = {objects} objects to cache, created {IN_FLIGHT} at a time\n"
    );
    let _ = writeln!(
        out,
        "For each replica count, a fresh embedded API server (its own process) and that many `wasm-reconciler run \
         --sharding` processes with the `configmapset` plugin from a directory, all on the same machine. Converge: \
         from the first create until a watch has seen every set Ready. Settled: until the replicas' caches hold \
         every object exactly once between them (`wasm_reconciler_cache_objects`). RSS (`VmRSS`) is read at rest \
         with the plugin loaded before the load, and 2 s after the caches settled; peak is `VmHWM`. The replica \
         marked (sharder) also holds the sharder role: a compact metadata entry for every primary and child of the \
         cluster, and the label writes. One round per count; the machine's 2 CPUs are shared by the API server, every replica and the driver, so converge times \
         compare the overhead of sharding, not its speed-up on more machines.\n"
    );
    let _ = writeln!(
        out,
        "| replicas | converge (s) | sets/s | settled (s) | total RSS (MiB) | RSS per replica (MiB), host-0 / host-1 / … | peak RSS per replica (MiB) | objects cached per replica | RSS at rest before the load (MiB) |"
    );
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---|---|---|---|");
    for run in runs {
        let total: u64 = run.per_replica.iter().map(|r| r.rss_kib).sum();
        let join = |f: &dyn Fn(&Reading) -> String| run.per_replica.iter().map(f).collect::<Vec<_>>().join(" / ");
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.0} | {:.1} | {} | {} | {} | {} | {} |",
            run.replicas,
            run.converge.as_secs_f64(),
            sets as f64 / run.converge.as_secs_f64(),
            run.settled.as_secs_f64(),
            mib(total),
            join(&|r| format!("{}{}", mib(r.rss_kib), if r.sharder { " (sharder)" } else { "" })),
            join(&|r| mib(r.peak_kib)),
            join(&|r| format!("{:.0}", r.objects)),
            join(&|r| mib(r.before_kib)),
        );
    }
    out
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let machine = Machine::detect();
        let load_before = load_average();
        let sets = env_list("SHARDING_SETS", "10000")?[0];
        let children = u32::try_from(env_list("SHARDING_CHILDREN", "2")?[0])?;
        let counts = env_list("SHARDING_REPLICAS", "1,2,3")?;
        let output = std::env::var("SHARDING_OUTPUT")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/benchmarks/sharding.md").to_owned());
        let logs = tempfile::Builder::new().prefix("sharding-bench-").tempdir()?.keep();
        let started = Instant::now();
        let mut runs = Vec::new();
        for replicas in counts {
            runs.push(
                measure(replicas, sets, children, &logs)
                    .await
                    .with_context(|| format!("{replicas} replica(s); host logs in {}", logs.display()))?,
            );
        }
        let report = render(&machine, &load_before, started.elapsed(), sets, children, &runs);
        std::fs::write(&output, &report).with_context(|| format!("writing {output}"))?;
        eprintln!("{report}\nwrote {output}");
        anyhow::Ok(())
    })
}
