//! Capacity at a service level: for each setup (one contender, or 1–3 sharded replicas of the host), an open-loop
//! load of ConfigMapSet creates, spec edits and deletes is raised in steps, and each step is judged by the
//! service-level objectives p99 queue time ≤ 1 s and p99 reconcile time ≤ 5 s. The capacity of a setup is the
//! highest rate whose step held them, every lower step having held too.
//!
//! Both times are read at the proxy in front of the contender, the same way for every contender:
//! - **queue time**: from the load generator sending the write to the contender's first request about that set
//!   (the set or one of its ConfigMaps). It includes the API server's write and watch delivery and the
//!   reconcile's work before its first request, so it is an upper bound of the time the key waited.
//! - **reconcile time**: from that first request to the end of the contender's last request about the set before
//!   the operation was done (Ready at the edited generation, or gone), across however many reconciles the
//!   contender needed.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::bench::{Prepared, Server, prepare, wait_idle};
use crate::contender::{Contender, Programs};
use crate::load::{self, is_ready, set_resource};
use crate::process::Running;
use crate::procfs::{self, Machine};
use crate::proxy::{Proxy, Traced};

/// The field manager of the host's sharder: its labelling of a set is not the owner's reconcile, so its requests
/// count as waiting.
const SHARDER: &str = "wasm-reconciler-sharder";

/// The host's namespace for the sharded replicas' Leases.
const HOST_NAMESPACE: &str = "wasm-reconciler";

/// What runs the controller in one capacity run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// One process of a contender.
    One(Contender),
    /// `wasm-reconciler run --sharding` with this many replicas (the wasm plugin).
    Sharded(usize),
}

impl Setup {
    /// Every setup, in report order.
    pub fn all() -> Vec<Setup> {
        Contender::CAPACITY
            .into_iter()
            .map(Setup::One)
            .chain((1..=3).map(Setup::Sharded))
            .collect()
    }

    /// Its name in the report.
    pub fn label(self) -> String {
        match self {
            Self::One(contender) => contender.label().to_owned(),
            Self::Sharded(1) => "wasm-reconciler, sharded, 1 replica".to_owned(),
            Self::Sharded(n) => format!("wasm-reconciler, sharded, {n} replicas"),
        }
    }

    /// Its name in namespaces and file names, and on the command line.
    pub fn slug(self) -> String {
        match self {
            Self::One(contender) => contender.slug().to_owned(),
            Self::Sharded(n) => format!("sharded-{n}"),
        }
    }

    fn contender(self) -> Contender {
        match self {
            Self::One(contender) => contender,
            Self::Sharded(_) => Contender::Wasm,
        }
    }
}

impl FromStr for Setup {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Some(n) = text.strip_prefix("sharded-") {
            return match n.parse() {
                Ok(n @ 1..=9) => Ok(Self::Sharded(n)),
                _ => Err(format!("{text:?}: sharded-N takes 1 to 9 replicas")),
            };
        }
        Contender::CAPACITY
            .into_iter()
            .find(|contender| contender.slug() == text)
            .map(Self::One)
            .ok_or_else(|| {
                format!(
                    "{text:?} is not a setup; one of {}",
                    Setup::all().iter().map(|s| s.slug()).collect::<Vec<_>>().join(", ")
                )
            })
    }
}

/// The service-level objectives a step must hold.
#[derive(Debug, Clone, Copy)]
pub struct Slo {
    /// p99 queue time at most this.
    pub queue_p99: Duration,
    /// p99 reconcile time at most this.
    pub reconcile_p99: Duration,
}

/// The knobs of a capacity run.
#[derive(Debug, Clone)]
pub struct CapacitySettings {
    /// The API server.
    pub server: Server,
    /// Setups, in report order.
    pub setups: Vec<Setup>,
    /// Operations per second of the steps, ascending.
    pub rates: Vec<f64>,
    /// How long each step issues operations.
    pub step: Duration,
    /// How long after a step its operations may take to finish before they count as failed.
    pub grace: Duration,
    /// Sets created (and converged) before the first step.
    pub population: usize,
    /// Replicas of every set.
    pub replicas: u32,
    /// The objectives.
    pub slo: Slo,
    /// How long a contender must make no request and use (almost) no CPU to count as idle.
    pub quiet: Duration,
    /// Programs of the contenders.
    pub programs: Programs,
    /// The ConfigMapSet CRD.
    pub crd: PathBuf,
    /// Logs, kubeconfigs and the plugin directory.
    pub work_dir: PathBuf,
}

/// The mix, in words for the report.
pub const MIX_TEXT: &str = "one create, two spec edits (the template's data) and one delete in every four operations";

/// The fixed mix, repeated: one create, two spec edits, one delete (the population stays level).
const MIX: [OpKind; 4] = [OpKind::Create, OpKind::Edit, OpKind::Edit, OpKind::Delete];

/// How long after its last operation finished a set may be edited or deleted again, so that no late request
/// of the last operation is taken for the next one's.
const SETTLE: Duration = Duration::from_secs(2);

/// What an operation does to a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// Creates a new set.
    Create,
    /// Changes the template's data (a new generation).
    Edit,
    /// Deletes the set.
    Delete,
}

/// One operation of the load and what became of it.
#[derive(Debug, Clone)]
pub struct Op {
    /// The set.
    pub set: String,
    /// What was done.
    pub kind: OpKind,
    /// When it was due (open loop: due times do not wait for anything).
    pub due: Instant,
    /// When its write was sent.
    pub sent: Instant,
    /// The generation the set must be Ready at (creates and edits).
    pub generation: i64,
    /// When the driver's watch saw it done: Ready at `generation`, or the set gone.
    pub done: Option<Instant>,
    /// The write failed (the error, logged).
    pub failed: bool,
    /// An edit or delete sent as a create, no set being free for it.
    pub substituted: bool,
}

/// What the load knows of every set: operations under way and sets free for the next one.
#[derive(Debug, Default)]
struct Book {
    ops: Vec<Op>,
    /// Set → index of its operation under way.
    pending: HashMap<String, usize>,
    /// Set → its generation, as last known.
    generations: HashMap<String, i64>,
    /// Sets whose last operation is done, with when, oldest first.
    settled: VecDeque<(String, Instant)>,
    /// Latest Ready generation seen per set, for an operation whose news came before it was recorded.
    ready_at: HashMap<String, i64>,
    /// Sets seen gone.
    gone: HashSet<String>,
    next_set: usize,
    edits: u64,
}

impl Book {
    /// Marks the pending operation of `set` done if what the watch saw of it (`ready_at`, `gone`) completes it.
    fn observe(&mut self, set: &str, now: Instant) {
        let Some(&index) = self.pending.get(set) else {
            return;
        };
        let op = &self.ops[index];
        let kind = op.kind;
        let done = match kind {
            OpKind::Create | OpKind::Edit => self.ready_at.get(set).is_some_and(|&at| at >= op.generation),
            OpKind::Delete => self.gone.contains(set),
        };
        if done {
            self.pending.remove(set);
            self.ops[index].done = Some(now);
            if kind != OpKind::Delete {
                self.settled.push_back((set.to_owned(), now));
            }
        }
    }

    /// After the watch listed again (a watch that failed re-lists without reporting what was deleted meanwhile):
    /// a set being deleted that the list no longer holds is gone.
    fn relisted(&mut self, present: &HashSet<String>, now: Instant) {
        let deleted: Vec<String> = self
            .pending
            .iter()
            .filter(|&(set, &index)| self.ops[index].kind == OpKind::Delete && !present.contains(set))
            .map(|(set, _)| set.clone())
            .collect();
        for set in deleted {
            self.gone.insert(set.clone());
            self.observe(&set, now);
        }
    }

    /// A set free for an edit or a delete: settled at least [`SETTLE`] ago.
    fn take_settled(&mut self, now: Instant) -> Option<String> {
        let (_, at) = self.settled.front()?;
        if now.saturating_duration_since(*at) < SETTLE {
            return None;
        }
        self.settled.pop_front().map(|(set, _)| set)
    }
}

type SharedBook = Arc<Mutex<Book>>;

fn lock(book: &SharedBook) -> std::sync::MutexGuard<'_, Book> {
    book.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One step's numbers.
#[derive(Debug, Clone)]
pub struct StepResult {
    /// Target operations per second.
    pub rate: f64,
    /// Operations issued.
    pub issued: usize,
    /// Operations per second actually sent.
    pub achieved: f64,
    /// Edits and deletes that found no settled set and were sent as creates.
    pub substituted: usize,
    /// Operations not done by the end of the grace period, or whose write failed.
    pub unfinished: usize,
    /// Queue times (p50, p99).
    pub queue: Option<(Duration, Duration)>,
    /// Reconcile times (p50, p99).
    pub reconcile: Option<(Duration, Duration)>,
    /// Write sent → done (p50, p99).
    pub end_to_end: Option<(Duration, Duration)>,
    /// Latest start of a write after its due time (the generator's own lag).
    pub max_lag: Duration,
    /// CPUs the contender used over the step (all replicas).
    pub cpu: f64,
    /// CPUs the API server (and etcd, when found) used over the step.
    pub server_cpu: Option<f64>,
    /// CPUs this driver (load, watch and the proxy) used over the step.
    pub driver_cpu: f64,
    /// Resident memory of the contender at the end of the step (all replicas).
    pub rss_bytes: u64,
    /// Whether the step held the objectives (and sent its rate, and finished every operation).
    pub held: bool,
}

/// One setup's steps.
#[derive(Debug, Clone)]
pub struct SetupResult {
    /// Which.
    pub setup: Setup,
    /// Start until ready and idle (the slowest replica).
    pub startup: Duration,
    /// Time to create and converge the population.
    pub population: Duration,
    /// The steps, in the order run; the last one failed unless every rate held.
    pub steps: Vec<StepResult>,
}

impl SetupResult {
    /// The highest rate held with every lower step held too.
    pub fn capacity(&self) -> Option<&StepResult> {
        self.steps.iter().take_while(|step| step.held).last()
    }

    /// The first step that did not hold.
    pub fn first_failure(&self) -> Option<&StepResult> {
        self.steps.iter().find(|step| !step.held)
    }
}

/// Everything a capacity run measured.
#[derive(Debug)]
pub struct CapacityOutcome {
    /// The knobs.
    pub settings: CapacitySettings,
    /// The machine.
    pub machine: Machine,
    /// When it started (UTC).
    pub started: chrono::DateTime<chrono::Utc>,
    /// How long it took.
    pub elapsed: Duration,
    /// Kubernetes version the API server reports.
    pub server_version: String,
    /// Results per setup.
    pub setups: Vec<SetupResult>,
}

/// Runs the whole capacity benchmark.
pub async fn run(settings: CapacitySettings) -> Result<CapacityOutcome> {
    let started = chrono::Utc::now();
    let clock = Instant::now();
    let machine = Machine::read();
    let contenders: Vec<Contender> = settings.setups.iter().map(|setup| setup.contender()).collect();
    settings.programs.check(&contenders)?;
    let Prepared {
        plugins_dir,
        embedded,
        client,
        upstream,
        server_version,
    } = prepare(&settings.server, &settings.programs, &settings.work_dir, &settings.crd).await?;
    if settings.setups.iter().any(|setup| matches!(setup, Setup::Sharded(_))) {
        match load::create_namespace(&client, HOST_NAMESPACE).await {
            Ok(()) => {}
            Err(load::LoadError::Api {
                source: kube::Error::Api(status),
                ..
            }) if status.code == 409 => {}
            Err(error) => return Err(error.into()),
        }
    }
    let server_pids = match &embedded {
        Some(server) => vec![server.process.pid()],
        None => procfs::pids_named(&["kube-apiserver", "etcd"]),
    };
    let run = Run {
        settings: &settings,
        client,
        upstream,
        plugins_dir,
        server_pids,
    };
    let mut setups = Vec::new();
    for &setup in &settings.setups {
        tracing::info!(setup = %setup.label(), "capacity run");
        let result = run.setup_run(setup).await?;
        tracing::info!(
            setup = %setup.label(),
            capacity = result.capacity().map(|step| step.rate),
            "capacity at the objectives"
        );
        setups.push(result);
    }
    if let Some(server) = embedded {
        server.process.stop().await;
    }
    Ok(CapacityOutcome {
        settings,
        machine,
        started,
        elapsed: clock.elapsed(),
        server_version,
        setups,
    })
}

struct Run<'a> {
    settings: &'a CapacitySettings,
    client: Client,
    upstream: Client,
    plugins_dir: PathBuf,
    server_pids: Vec<u32>,
}

impl Run<'_> {
    fn server_cpu(&self) -> Option<f64> {
        let seconds: Vec<f64> = self
            .server_pids
            .iter()
            .filter_map(|&pid| procfs::sample(pid).ok())
            .map(|sample| sample.cpu_seconds)
            .collect();
        (!seconds.is_empty()).then(|| seconds.iter().sum())
    }

    /// Waits until every replica holds its membership Lease, has its watches open and uses (almost) no CPU. (The
    /// ring's Lease renewals never leave the proxy quiet for long, so requests are not waited out.)
    async fn wait_ring(&self, processes: &mut [Running], proxy: &Proxy, replicas: usize) -> Result<Duration> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), HOST_NAMESPACE);
        let started = Instant::now();
        let deadline = started + Duration::from_secs(180);
        loop {
            let members = leases
                .list(&Default::default())
                .await
                .context("listing the ring's Leases")?
                .items
                .iter()
                .filter(|lease| lease.name_any().contains("-shard-capacity-"))
                .count();
            let watching = proxy.log().watches(Contender::Wasm.watched());
            let mut quiet = true;
            for process in processes.iter_mut() {
                let before = process.sample()?.cpu_seconds;
                tokio::time::sleep(self.settings.quiet / 4).await;
                let used = process.sample()?.cpu_seconds - before;
                quiet &= used <= 0.05 * (self.settings.quiet / 4).as_secs_f64() + 0.01;
            }
            if members == replicas && watching && quiet {
                return Ok(started.elapsed());
            }
            if Instant::now() > deadline {
                anyhow::bail!(
                    "{replicas} sharded replicas not ready within 180 s ({members} membership Leases, watches \
                     open: {watching}, CPU quiet: {quiet}); logs under {}",
                    self.settings.work_dir.join("logs").display()
                );
            }
        }
    }

    async fn setup_run(&self, setup: Setup) -> Result<SetupResult> {
        let settings = self.settings;
        let namespace = format!("capacity-{}", setup.slug());
        load::create_namespace(&self.client, &namespace).await?;
        let proxy = Proxy::start_tracing(self.upstream.clone(), Some(namespace.clone())).await?;
        let kubeconfig = settings.work_dir.join(format!("capacity-{}.kubeconfig", setup.slug()));
        std::fs::write(
            &kubeconfig,
            serde_json::to_string_pretty(&load::proxy_kubeconfig(&proxy.url()))?,
        )
        .with_context(|| format!("writing {}", kubeconfig.display()))?;
        let log = |suffix: &str| {
            settings
                .work_dir
                .join("logs")
                .join(format!("capacity-{}{suffix}.log", setup.slug()))
        };
        let mut processes = match setup {
            Setup::One(contender) => {
                vec![
                    settings
                        .programs
                        .start(contender, &kubeconfig, &self.plugins_dir, &log(""))?,
                ]
            }
            Setup::Sharded(n) => (0..n)
                .map(|replica| {
                    settings.programs.start_sharded(
                        &kubeconfig,
                        &self.plugins_dir,
                        HOST_NAMESPACE,
                        &format!("capacity-{replica}"),
                        &log(&format!("-{replica}")),
                    )
                })
                .collect::<Result<_, _>>()?,
        };
        let startup = match setup {
            Setup::One(contender) => wait_idle(
                &mut processes[0],
                proxy.log(),
                settings.quiet,
                Duration::from_secs(180),
                contender.watched(),
            )
            .await
            .with_context(|| format!("{} did not become ready and idle", setup.label()))?,
            Setup::Sharded(n) => self.wait_ring(&mut processes, &proxy, n).await?,
        };

        let book: SharedBook = Arc::default();
        let watch = spawn_watch(&self.client, &namespace, Arc::clone(&book)).await?;
        let load = Load {
            sets: Api::namespaced_with(self.client.clone(), &namespace, &set_resource()),
            book: Arc::clone(&book),
            replicas: settings.replicas,
        };
        let converging = Instant::now();
        for _ in 0..settings.population {
            load.issue(OpKind::Create, converging).await;
        }
        let deadline = converging + Duration::from_secs(600);
        while !lock(&book).pending.is_empty() {
            if Instant::now() > deadline {
                anyhow::bail!(
                    "{}: {} of {} sets not Ready 600 s after their creation; logs under {}",
                    setup.label(),
                    lock(&book).pending.len(),
                    settings.population,
                    settings.work_dir.join("logs").display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let population = converging.elapsed();
        tracing::info!(setup = %setup.label(), seconds = population.as_secs_f64(), sets = settings.population, "population Ready");
        tokio::time::sleep(SETTLE).await;

        let mut steps = Vec::new();
        for &rate in &settings.rates {
            let step = self.step(&load, &mut processes, &proxy, rate).await?;
            tracing::info!(
                setup = %setup.label(),
                rate,
                achieved = step.achieved,
                queue_p99_ms = step.queue.map(|(_, p99)| p99.as_millis()),
                reconcile_p99_ms = step.reconcile.map(|(_, p99)| p99.as_millis()),
                unfinished = step.unfinished,
                cpu = step.cpu,
                held = step.held,
                "step"
            );
            let held = step.held;
            steps.push(step);
            if !held {
                break;
            }
        }

        watch.abort();
        for process in processes {
            process.stop().await;
        }
        proxy.stop();
        load::strip_finalizers(&self.client, &namespace).await?;
        load::delete_namespace(&self.client, &namespace, Duration::from_secs(600)).await?;
        Ok(SetupResult {
            setup,
            startup,
            population,
            steps,
        })
    }

    /// One step: `rate` operations per second for the step's length, open loop, then the grace period.
    async fn step(&self, load: &Load, processes: &mut [Running], proxy: &Proxy, rate: f64) -> Result<StepResult> {
        let settings = self.settings;
        let cpu_of = |processes: &mut [Running]| -> Result<(f64, u64)> {
            let mut cpu = 0.0;
            let mut rss = 0;
            for process in processes.iter_mut() {
                let sample = process.sample()?;
                cpu += sample.cpu_seconds;
                rss += sample.rss_bytes;
            }
            Ok((cpu, rss))
        };
        let first_op = lock(&load.book).ops.len();
        let (cpu_before, _) = cpu_of(processes)?;
        let server_before = self.server_cpu();
        let driver_before = driver_cpu();
        let start = Instant::now();
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let count = (rate * settings.step.as_secs_f64()).round().max(1.0) as usize;
        let mut writes = tokio::task::JoinSet::new();
        for index in 0..count {
            #[allow(clippy::cast_precision_loss)]
            let due = start + Duration::from_secs_f64(index as f64 / rate);
            tokio::time::sleep_until(due.into()).await;
            let wanted = MIX[index % MIX.len()];
            let load = load.clone();
            writes.spawn(async move { load.issue(wanted, due).await });
        }
        let issued_for = start.elapsed();
        let (cpu_after, rss_bytes) = cpu_of(processes)?;
        let server_after = self.server_cpu();
        let driver_after = driver_cpu();
        while writes.join_next().await.is_some() {}
        let last_op = lock(&load.book).ops.len();
        let grace_end = Instant::now() + settings.grace;
        loop {
            let open = lock(&load.book).ops[first_op..last_op]
                .iter()
                .filter(|op| op.done.is_none() && !op.failed)
                .count();
            if open == 0 || Instant::now() >= grace_end {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let ops = lock(&load.book).ops[first_op..last_op].to_vec();
        let trace = proxy.log().trace();
        let evaluated = evaluate(&ops, &trace);
        // The span the operations were due over: the last one is due (count - 1) / rate after the first.
        let wall = issued_for.as_secs_f64() + 1.0 / rate;
        #[allow(clippy::cast_precision_loss)]
        let achieved = ops.len() as f64 / wall;
        let max_lag = ops
            .iter()
            .map(|op| op.sent.saturating_duration_since(op.due))
            .max()
            .unwrap_or_default();
        let mut step = StepResult {
            rate,
            issued: ops.len(),
            achieved,
            substituted: ops.iter().filter(|op| op.substituted).count(),
            unfinished: evaluated.unfinished,
            queue: percentiles(&evaluated.queue),
            reconcile: percentiles(&evaluated.reconcile),
            end_to_end: percentiles(&evaluated.end_to_end),
            max_lag,
            cpu: (cpu_after - cpu_before) / wall,
            server_cpu: server_after
                .zip(server_before)
                .map(|(after, before)| (after - before) / wall),
            driver_cpu: (driver_after - driver_before) / wall,
            rss_bytes,
            held: false,
        };
        step.held = holds(&step, &settings.slo);
        Ok(step)
    }
}

/// CPU seconds this process used so far.
fn driver_cpu() -> f64 {
    procfs::sample(std::process::id()).map_or(0.0, |sample| sample.cpu_seconds)
}

/// Whether a step held: every operation finished, the generator kept the rate (within 5%, no write more than
/// a second late), and both p99s are within the objectives.
pub fn holds(step: &StepResult, slo: &Slo) -> bool {
    let kept_rate = step.achieved >= 0.95 * step.rate && step.max_lag <= Duration::from_secs(1);
    let queue = step.queue.is_some_and(|(_, p99)| p99 <= slo.queue_p99);
    let reconcile = step.reconcile.is_some_and(|(_, p99)| p99 <= slo.reconcile_p99);
    step.unfinished == 0 && kept_rate && queue && reconcile
}

/// The load generator: writes straight to the API server (not through the proxy) and records them in the book.
#[derive(Clone)]
struct Load {
    sets: Api<DynamicObject>,
    book: SharedBook,
    replicas: u32,
}

impl Load {
    /// Sends one operation of `kind` (a create when no set is free for an edit or a delete).
    async fn issue(&self, kind: OpKind, due: Instant) {
        let wanted = kind;
        let (set, kind, generation, edit) = {
            let mut book = lock(&self.book);
            let now = Instant::now();
            let existing = match kind {
                OpKind::Create => None,
                OpKind::Edit | OpKind::Delete => book.take_settled(now),
            };
            match existing {
                Some(set) => {
                    let generation = book.generations.get(&set).copied().unwrap_or(1);
                    book.edits += 1;
                    let edit = book.edits;
                    match kind {
                        OpKind::Edit => {
                            book.generations.insert(set.clone(), generation + 1);
                            (set, OpKind::Edit, generation + 1, edit)
                        }
                        _ => (set, OpKind::Delete, generation, edit),
                    }
                }
                None => {
                    let set = load::set_name(book.next_set);
                    book.next_set += 1;
                    book.generations.insert(set.clone(), 1);
                    (set, OpKind::Create, 1, 0)
                }
            }
        };
        let index = {
            let mut book = lock(&self.book);
            book.ops.push(Op {
                set: set.clone(),
                kind,
                due,
                sent: Instant::now(),
                generation,
                done: None,
                failed: false,
                substituted: kind != wanted,
            });
            let index = book.ops.len() - 1;
            book.pending.insert(set.clone(), index);
            index
        };
        let result = match kind {
            OpKind::Create => {
                let mut object = DynamicObject::new(&set, &set_resource());
                object.data = json!({"spec": {"replicas": self.replicas, "template": {"data": {"k": "v"}}}});
                self.sets.create(&PostParams::default(), &object).await.map(|_| ())
            }
            OpKind::Edit => {
                let patch = Patch::Merge(json!({"spec": {"template": {"data": {"k": format!("v{edit}")}}}}));
                self.sets.patch(&set, &PatchParams::default(), &patch).await.map(|_| ())
            }
            OpKind::Delete => self.sets.delete(&set, &DeleteParams::default()).await.map(|_| ()),
        };
        let mut book = lock(&self.book);
        if let Err(error) = result {
            tracing::warn!(set, ?kind, %error, "the load's write failed");
            book.ops[index].failed = true;
            book.pending.remove(&set);
        } else {
            // The watch may have seen it done before the write's answer came.
            book.observe(&set, Instant::now());
        }
    }
}

/// Watches the sets of `namespace` and marks operations done in `book`.
async fn spawn_watch(client: &Client, namespace: &str, book: SharedBook) -> Result<tokio::task::JoinHandle<()>> {
    let sets: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &set_resource());
    let (listed_tx, listed_rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut listed = Some(listed_tx);
        let mut relisting = HashSet::new();
        let mut events = std::pin::pin!(watcher(sets, watcher::Config::default()));
        while let Some(event) = events.next().await {
            let now = Instant::now();
            let mut book = lock(&book);
            let initial = matches!(event, Ok(watcher::Event::InitApply(_)));
            match event {
                Ok(watcher::Event::Apply(set) | watcher::Event::InitApply(set)) => {
                    let name = set.name_any();
                    if initial {
                        relisting.insert(name.clone());
                    }
                    if is_ready(&set) {
                        let generation = set.metadata.generation.unwrap_or_default();
                        let at = book.ready_at.entry(name.clone()).or_default();
                        *at = (*at).max(generation);
                    }
                    book.observe(&name, now);
                }
                Ok(watcher::Event::Delete(set)) => {
                    let name = set.name_any();
                    book.gone.insert(name.clone());
                    book.observe(&name, now);
                }
                Ok(watcher::Event::InitDone) => {
                    book.relisted(&relisting, now);
                    if let Some(listed) = listed.take() {
                        let _ = listed.send(());
                    }
                }
                Ok(watcher::Event::Init) => relisting.clear(),
                Err(error) => {
                    drop(book);
                    tracing::warn!(%error, "watching ConfigMapSets; the watcher retries");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(30), listed_rx)
        .await
        .context("the watch of ConfigMapSets did not list within 30 s")?
        .context("the watch of ConfigMapSets stopped")?;
    Ok(task)
}

/// The set a traced object belongs to: the set itself (`set-00042`) or one of its ConfigMaps (`set-00042-1`).
pub fn set_of(name: &str) -> &str {
    match name.rsplit_once('-') {
        Some((set, replica))
            if set.starts_with("set-") && replica.bytes().all(|b| b.is_ascii_digit()) && set.len() > 4 =>
        {
            set
        }
        _ => name,
    }
}

/// The times of a step's operations, read from the proxy's trace.
#[derive(Debug, Default, PartialEq)]
pub struct Evaluated {
    /// Queue times of the operations done.
    pub queue: Vec<Duration>,
    /// Reconcile times of the operations done.
    pub reconcile: Vec<Duration>,
    /// Write sent → done.
    pub end_to_end: Vec<Duration>,
    /// Operations not done, failed, or with no request of the contender seen.
    pub unfinished: usize,
}

/// Matches each operation with the contender's requests about its set between its write and its being done.
pub fn evaluate(ops: &[Op], trace: &[Traced]) -> Evaluated {
    let mut by_set: HashMap<&str, Vec<&Traced>> = HashMap::new();
    for traced in trace {
        by_set.entry(set_of(&traced.name)).or_default().push(traced);
    }
    let mut evaluated = Evaluated::default();
    for op in ops {
        let Some(done) = op.done.filter(|_| !op.failed) else {
            evaluated.unfinished += 1;
            continue;
        };
        let requests: Vec<&&Traced> = by_set
            .get(op.set.as_str())
            .map(|requests| {
                requests
                    .iter()
                    .filter(|traced| traced.start >= op.sent && traced.start <= done)
                    .filter(|traced| traced.manager.as_deref() != Some(SHARDER))
                    .collect()
            })
            .unwrap_or_default();
        let Some(first) = requests.iter().map(|traced| traced.start).min() else {
            evaluated.unfinished += 1;
            continue;
        };
        let last = requests
            .iter()
            .map(|traced| traced.end.unwrap_or(done))
            .max()
            .unwrap_or(first);
        evaluated.queue.push(first - op.sent);
        evaluated.reconcile.push(last.saturating_duration_since(first));
        evaluated.end_to_end.push(done - op.sent);
    }
    evaluated
}

/// p50 and p99 (nearest rank) of `values`.
pub fn percentiles(values: &[Duration]) -> Option<(Duration, Duration)> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = |p: f64| {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let index = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
        sorted[index]
    };
    Some((rank(0.50), rank(0.99)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traced(name: &str, start: Instant, end: Instant) -> Traced {
        Traced {
            name: name.to_owned(),
            start,
            end: Some(end),
            manager: None,
        }
    }

    fn op(set: &str, sent: Instant, done: Option<Instant>) -> Op {
        Op {
            set: set.to_owned(),
            kind: OpKind::Edit,
            due: sent,
            sent,
            generation: 2,
            done,
            failed: false,
            substituted: false,
        }
    }

    #[test]
    fn children_belong_to_their_set() {
        assert_eq!(set_of("set-00042"), "set-00042");
        assert_eq!(set_of("set-00042-2"), "set-00042");
        assert_eq!(set_of("set-00042-10"), "set-00042");
        assert_eq!(set_of("other-1"), "other-1");
    }

    #[test]
    fn an_operation_is_timed_by_the_requests_between_its_write_and_its_end() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let trace = vec![
            // A late request of the set's earlier operation: before the write, not counted.
            traced("set-00001-0", ms(0), ms(5)),
            traced("set-00001-1", ms(130), ms(150)),
            traced("set-00001", ms(160), ms(400)),
            // The sharder labelling the set is not its reconcile.
            Traced {
                manager: Some(SHARDER.to_owned()),
                ..traced("set-00001", ms(110), ms(120))
            },
            // Another set's requests are not this one's.
            traced("set-00002-0", ms(110), ms(900)),
            // After it was done: the next operation's.
            traced("set-00001-0", ms(600), ms(650)),
        ];
        let ops = [
            op("set-00001", ms(100), Some(ms(450))),
            op("set-00003", ms(100), None),
            op("set-00004", ms(100), Some(ms(300))),
        ];
        let evaluated = evaluate(&ops, &trace);
        assert_eq!(evaluated.queue, vec![Duration::from_millis(30)]);
        assert_eq!(evaluated.reconcile, vec![Duration::from_millis(270)]);
        assert_eq!(evaluated.end_to_end, vec![Duration::from_millis(350)]);
        assert_eq!(evaluated.unfinished, 2, "one never done, one with no request seen");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        assert_eq!(
            percentiles(&values),
            Some((Duration::from_millis(50), Duration::from_millis(99)))
        );
        assert_eq!(percentiles(&[]), None);
        let one = [Duration::from_secs(2)];
        assert_eq!(percentiles(&one), Some((one[0], one[0])));
    }

    fn step(rate: f64, queue_p99_ms: u64, held: bool) -> StepResult {
        let p99 = Duration::from_millis(queue_p99_ms);
        StepResult {
            rate,
            issued: 100,
            achieved: rate,
            substituted: 0,
            unfinished: 0,
            queue: Some((p99 / 2, p99)),
            reconcile: Some((p99, p99)),
            end_to_end: Some((p99, p99)),
            max_lag: Duration::ZERO,
            cpu: 0.5,
            server_cpu: None,
            driver_cpu: 0.0,
            rss_bytes: 0,
            held,
        }
    }

    #[test]
    fn a_step_holds_only_within_both_objectives_at_the_rate_asked() {
        let slo = Slo {
            queue_p99: Duration::from_secs(1),
            reconcile_p99: Duration::from_secs(5),
        };
        assert!(holds(&step(10.0, 900, false), &slo));
        assert!(!holds(&step(10.0, 1100, false), &slo), "queue p99 over 1 s");
        let mut slow = step(10.0, 100, false);
        slow.reconcile = Some((Duration::from_secs(1), Duration::from_secs(6)));
        assert!(!holds(&slow, &slo), "reconcile p99 over 5 s");
        let mut behind = step(10.0, 100, false);
        behind.achieved = 9.0;
        assert!(!holds(&behind, &slo), "the generator did not keep the rate");
        let mut lost = step(10.0, 100, false);
        lost.unfinished = 1;
        assert!(!holds(&lost, &slo), "an operation never finished");
    }

    #[test]
    fn capacity_is_the_last_step_held_before_the_first_failure() {
        let result = SetupResult {
            setup: Setup::One(Contender::Wasm),
            startup: Duration::ZERO,
            population: Duration::ZERO,
            steps: vec![step(10.0, 1, true), step(20.0, 1, true), step(40.0, 1, false)],
        };
        assert_eq!(result.capacity().map(|s| s.rate), Some(20.0));
        assert_eq!(result.first_failure().map(|s| s.rate), Some(40.0));
        let none = SetupResult {
            steps: vec![step(10.0, 1, false)],
            ..result
        };
        assert!(none.capacity().is_none());
    }

    #[test]
    fn setups_parse_from_their_slugs() {
        for setup in Setup::all() {
            assert_eq!(setup.slug().parse::<Setup>(), Ok(setup));
        }
        assert_eq!("sharded-2".parse::<Setup>(), Ok(Setup::Sharded(2)));
        assert!("sharded-0".parse::<Setup>().is_err());
        assert!("wasmtime".parse::<Setup>().is_err());
    }

    #[test]
    fn a_relist_without_the_set_finishes_its_deletion() {
        let mut book = Book::default();
        let t0 = Instant::now();
        for (index, set) in ["set-00001", "set-00002"].into_iter().enumerate() {
            book.ops.push(Op {
                kind: OpKind::Delete,
                ..op(set, t0, None)
            });
            book.pending.insert(set.to_owned(), index);
        }
        book.relisted(&HashSet::from(["set-00002".to_owned()]), t0);
        assert_eq!(book.ops[0].done, Some(t0), "listed no more: deleted");
        assert_eq!(book.ops[1].done, None, "still listed: still being deleted");
        assert!(book.settled.is_empty(), "a deleted set is never edited again");
    }

    #[test]
    fn a_set_is_free_again_only_after_it_settled() {
        let mut book = Book::default();
        let t0 = Instant::now();
        book.ops.push(op("set-00001", t0, None));
        book.pending.insert("set-00001".to_owned(), 0);
        book.observe("set-00001", t0);
        assert!(book.ops[0].done.is_none(), "not Ready at generation 2 yet");
        book.ready_at.insert("set-00001".to_owned(), 2);
        book.observe("set-00001", t0);
        assert_eq!(book.ops[0].done, Some(t0));
        assert_eq!(book.take_settled(t0 + Duration::from_secs(1)), None);
        assert_eq!(book.take_settled(t0 + SETTLE), Some("set-00001".to_owned()));
    }
}
