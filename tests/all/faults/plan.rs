//! Fault plans: which story runs, on which server, with which fault. A plan names its fault by what it is in any
//! run — a write's identity, a choreography of the front and a test actor — never by a global index or a time, so
//! a plan file replays the same faults: a failing plan is its own reproducer.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::front::CrashWhen;
use super::request::WriteId;
use super::story::Story;

/// The environment variable naming a plan file to replay instead of running every plan.
pub const REPLAY: &str = "FAULT_PLANS";

/// One fault plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Unique within a run; readable: `configmapset crash after apply configmaps web-1 #1`.
    pub name: String,
    /// The plugin and the user's steps.
    pub story: Story,
    pub fault: Fault,
}

/// What goes wrong during a plan's story.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Fault {
    /// The host process is killed (SIGKILL) right before or right after one of its writes, and started again.
    Crash {
        /// The write, as the reference run named it.
        at: WriteId,
        when: CrashWhen,
    },
    /// The watch of the children lags: while it holds their events back, a test actor deletes a child and
    /// creates it again (a new uid) and edits the primary, so the host reconciles with a view older than the
    /// recreate.
    LaggingChildWatch {
        /// The child deleted and created again.
        child: String,
    },
    /// The watch of the primaries lags while the user deletes the primary (one without a finalizer): the garbage
    /// collector deletes its children, and the host sees that before it sees the primary go.
    LaggingPrimaryWatch,
    /// Every watch ends with 410 Gone, and the relist of `resource` is answered late, after the host has written
    /// meanwhile: a view older than the host's own last write (KEP-5647's case).
    LateRelist {
        /// The plural resource whose list arrives late: the primaries or the children.
        resource: String,
    },
    /// Every event of the primary is held while a test actor changes it several times; only the last state is
    /// ever delivered.
    HiddenStates,
    /// Every event of a read (not owned) object is held while a test actor changes it several times; only the last
    /// state is ever delivered.
    HiddenReadStates,
    /// Every write's answer reaches the host only after the write's watch events did (a slow response path), for the
    /// whole story.
    SlowAnswers,
    /// Every watch ends with 410 Gone and no list is answered while a test actor edits the primary and deletes a
    /// child: the host relists and must act on what it never saw happen.
    DroppedWatches,
    /// Sharded hosts: a third replica joins, and a member the sharder asked to drain a primary is killed right
    /// before or right after its acknowledgement; it stays dead.
    ShardHandoff {
        /// Whether the killed member is the one running the sharder.
        sharder: bool,
        when: CrashWhen,
    },
}

impl Plan {
    /// What a plan of `story` with `fault` is called.
    pub fn new(story: Story, fault: Fault) -> Self {
        let name = format!("{} {}", story.name(), fault.describe());
        Self { name, story, fault }
    }
}

impl Fault {
    /// A short description, for plan names.
    pub fn describe(&self) -> String {
        match self {
            Self::Crash { at, when } => format!("crash {} {at}", when_word(*when)),
            Self::LaggingChildWatch { child } => format!("lagging child watch, {child} recreated"),
            Self::LaggingPrimaryWatch => "lagging primary watch while it is deleted".into(),
            Self::LateRelist { resource } => format!("late relist of {resource}"),
            Self::HiddenStates => "hidden states of the primary".into(),
            Self::HiddenReadStates => "hidden states of a read object".into(),
            Self::DroppedWatches => "dropped watches".into(),
            Self::SlowAnswers => "answers slower than watch events".into(),
            Self::ShardHandoff { sharder, when } => format!(
                "{} member killed {} its drain acknowledgement",
                if *sharder { "sharder" } else { "plain" },
                when_word(*when)
            ),
        }
    }
}

fn when_word(when: CrashWhen) -> &'static str {
    match when {
        CrashWhen::Before => "before",
        CrashWhen::After => "after",
    }
}

/// Where plan files go: `<target>/fault-plans/<server>/`.
pub fn plans_dir(server: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/all-… → target/
    let target = exe
        .ancestors()
        .nth(3)
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf);
    target.join("fault-plans").join(server)
}

/// Writes `plans` as JSON to `path`.
pub fn save(path: &Path, plans: &[Plan]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(plans)?)?;
    Ok(())
}

/// Reads a plan file: a list of plans, or one plan.
pub fn load(path: &Path) -> anyhow::Result<Vec<Plan>> {
    let text = std::fs::read_to_string(path)?;
    let value: serde_json::Value = serde_json::from_str(&text)?;
    Ok(if value.is_array() {
        serde_json::from_value(value)?
    } else {
        vec![serde_json::from_value(value)?]
    })
}
