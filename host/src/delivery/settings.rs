//! Host settings of one plugin (`settings.yaml` in a plugin directory or ConfigMap): limits, concurrency,
//! resync, namespaces and, for plugins by reference, the pull secret and refresh interval — parsed with
//! Kubernetes-style quantities and Go-style durations.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::plugin::{HostPattern, Limits, Network, OutboundPolicy, SecretKeyRef, is_variable_name};

/// Settings the host applies to a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginSettings {
    /// Sandbox limits.
    pub limits: Limits,
    /// Concurrent reconciles.
    pub concurrency: usize,
    /// Resync period overriding the plugin's.
    pub resync: Option<Duration>,
    /// Call the plugin on every reconcile, even when nothing it is given changed since its last successful call
    /// (`alwaysCall`; for a plugin that is not a pure function of its view, reads and configuration).
    pub always_call: bool,
    /// Namespaces whose primaries are reconciled (all when `None`).
    pub namespaces: Option<Vec<String>>,
    /// Where a contract 0.2 plugin may send HTTP requests (`allowedOutboundHosts`, `blockedNetworks`): nowhere by
    /// default.
    pub outbound: OutboundPolicy,
    /// Variables a contract 0.2 plugin may read, each one key of a Secret (`variables`).
    pub variables: BTreeMap<String, SecretKeyRef>,
    /// A `kubernetes.io/dockerconfigjson` Secret in the host's namespace with the credentials for pulling the
    /// plugin's reference.
    pub pull_secret: Option<String>,
    /// How often a tag reference is resolved again (a moved tag hot-reloads the plugin).
    pub refresh_interval: Duration,
    /// The ServiceAccount the host acts as for this plugin (`serviceAccount: namespace/name`): every read, watch and
    /// write for it is made by impersonation, so that account's RBAC bounds the plugin. `None`: the host's own.
    pub service_account: Option<ServiceAccountRef>,
    /// How many of the plugin's revisions are kept in the cluster (`revisionHistoryLimit`), the serving one among
    /// them.
    pub revision_history_limit: usize,
    /// The preview gate a new version passes before it serves (`preview`).
    pub preview: PreviewSettings,
    /// How a new version of this plugin rolls out (`rollout`): `None`, all at once.
    pub rollout: Option<RolloutSettings>,
}

/// A progressive rollout (`rollout` in the settings of the version rolled out): the new version serves a growing
/// share of the primaries, chosen by a stable hash of their uid, step after step, and is rolled back when its
/// reconciles fail more than `max_failures` times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutSettings {
    /// The steps before the version serves every primary: each a share (1–99%) held for a pause.
    pub steps: Vec<RolloutStep>,
    /// Failed reconciles of the new version tolerated during the rollout (`maxFailures`, 0 by default).
    pub max_failures: usize,
}

/// One step of a rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RolloutStep {
    /// Percentage of the primaries the new version serves (1–99).
    pub share: u8,
    /// How long the step is held before the next.
    pub pause: Duration,
}

/// The preview gate (`preview` in the settings): before a new version of a serving plugin replaces it, both run on
/// the world view of each primary the host caches (up to `objects` of them), and the new version is held, not
/// served, when it fails on more primaries than `max_new_failures` allows where the serving version succeeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreviewSettings {
    /// How many primaries may fail with the new version and not with the serving one (`maxNewFailures`: a count or
    /// a percentage of those previewed; `0` by default).
    pub max_new_failures: Tolerance,
    /// How many primaries are previewed at most (`objects`; 1,000 by default, `0` turns the gate off): a sample
    /// spread evenly over the plugin's primaries when it has more.
    pub objects: usize,
}

impl Default for PreviewSettings {
    fn default() -> Self {
        Self {
            max_new_failures: Tolerance::Count(0),
            objects: 1000,
        }
    }
}

/// How many of a set may fail: a count, or a percentage of the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tolerance {
    /// At most this many.
    Count(usize),
    /// At most this percentage (0–100), rounded down.
    Percent(u8),
}

impl Tolerance {
    /// Parses `3` or `10%`.
    ///
    /// ```
    /// # use wasm_reconciler::delivery::Tolerance;
    /// assert!(Tolerance::parse("10%").unwrap().allows(10, 100));
    /// assert!(!Tolerance::parse("10%").unwrap().allows(11, 100));
    /// assert!(Tolerance::parse("2").unwrap().allows(2, 1000));
    /// assert!(Tolerance::parse("150%").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        match text.strip_suffix('%') {
            Some(percent) => match percent.parse::<u8>() {
                Ok(percent @ 0..=100) => Ok(Self::Percent(percent)),
                _ => Err(format!("{text:?} is not a percentage from 0% to 100%")),
            },
            None => text
                .parse::<usize>()
                .map(Self::Count)
                .map_err(|_| format!("{text:?} is neither a count nor a percentage (such as 10%)")),
        }
    }

    /// Whether `failed` of `total` is within the tolerance.
    pub fn allows(self, failed: usize, total: usize) -> bool {
        match self {
            Self::Count(count) => failed <= count,
            Self::Percent(percent) => failed.saturating_mul(100) <= usize::from(percent).saturating_mul(total),
        }
    }
}

impl std::fmt::Display for Tolerance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Count(count) => write!(f, "{count}"),
            Self::Percent(percent) => write!(f, "{percent}%"),
        }
    }
}

/// A ServiceAccount, `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceAccountRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl ServiceAccountRef {
    /// Parses `namespace/name`; both parts must be DNS names.
    ///
    /// ```
    /// # use wasm_reconciler::delivery::ServiceAccountRef;
    /// let account = ServiceAccountRef::parse("team-a/reconciler").unwrap();
    /// assert_eq!(account.username(), "system:serviceaccount:team-a:reconciler");
    /// assert!(ServiceAccountRef::parse("reconciler").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        let (namespace, name) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not namespace/name"))?;
        let label = |part: &str, max: usize| {
            !part.is_empty()
                && part.len() <= max
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
                && !part.starts_with(['-', '.'])
                && !part.ends_with(['-', '.'])
        };
        if !label(namespace, 63) || namespace.contains('.') {
            return Err(format!("{namespace:?} is not a namespace name"));
        }
        if !label(name, 253) {
            return Err(format!("{name:?} is not a ServiceAccount name"));
        }
        Ok(Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })
    }

    /// The user name the API server knows the account by: `system:serviceaccount:<namespace>:<name>`.
    pub fn username(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }
}

impl std::fmt::Display for ServiceAccountRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// How often a tag reference is resolved again unless `refreshInterval` says otherwise.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(300);

impl Default for PluginSettings {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            concurrency: 4,
            resync: None,
            always_call: false,
            namespaces: None,
            outbound: OutboundPolicy::default(),
            variables: BTreeMap::new(),
            pull_secret: None,
            refresh_interval: DEFAULT_REFRESH_INTERVAL,
            service_account: None,
            revision_history_limit: DEFAULT_REVISION_HISTORY_LIMIT,
            preview: PreviewSettings::default(),
            rollout: None,
        }
    }
}

/// Revisions kept per plugin unless `revisionHistoryLimit` says otherwise (as a Deployment keeps 10 ReplicaSets).
pub const DEFAULT_REVISION_HISTORY_LIMIT: usize = 10;

/// Why settings are refused.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Not YAML, or unknown keys.
    #[error("settings do not parse")]
    Parse(#[source] Box<serde_saphyr::Error>),
    /// A value is out of range or malformed.
    #[error("setting `{key}`: {message}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// The YAML shape.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSettings {
    memory_limit: Option<String>,
    deadline: Option<String>,
    max_outcome_size: Option<String>,
    concurrency: Option<u32>,
    resync: Option<String>,
    always_call: Option<bool>,
    namespaces: Option<Vec<String>>,
    allowed_outbound_hosts: Option<Vec<String>>,
    blocked_networks: Option<Vec<String>>,
    outbound_timeout: Option<String>,
    outbound_budget: Option<String>,
    max_response_size: Option<String>,
    variables: Option<BTreeMap<String, String>>,
    pull_secret: Option<String>,
    refresh_interval: Option<String>,
    service_account: Option<String>,
    revision_history_limit: Option<u32>,
    preview: Option<RawPreview>,
    rollout: Option<RawRollout>,
}

/// The YAML shape of `rollout`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRollout {
    steps: Vec<RawStep>,
    max_failures: Option<u32>,
}

/// The YAML shape of one rollout step.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawStep {
    share: String,
    pause: String,
}

/// The YAML shape of `preview`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawPreview {
    max_new_failures: Option<serde_json::Value>,
    objects: Option<u32>,
}

impl PluginSettings {
    /// Parses `settings.yaml`. Empty text gives the defaults.
    ///
    /// ```
    /// # use wasm_reconciler::delivery::PluginSettings;
    /// let settings = PluginSettings::parse("memoryLimit: 32Mi\ndeadline: 500ms\nconcurrency: 2\nresync: 10m\n").unwrap();
    /// assert_eq!(settings.limits.memory_bytes, 32 * 1024 * 1024);
    /// assert_eq!(settings.concurrency, 2);
    /// ```
    pub fn parse(text: &str) -> Result<Self, SettingsError> {
        let raw: RawSettings = if text.trim().is_empty() {
            RawSettings::default()
        } else {
            serde_saphyr::from_str(text).map_err(|e| SettingsError::Parse(Box::new(e)))?
        };
        let defaults = Self::default();
        let mut limits = defaults.limits;
        if let Some(memory) = &raw.memory_limit {
            let bytes = parse_quantity(memory).map_err(|message| SettingsError::Invalid {
                key: "memoryLimit",
                message,
            })?;
            if !(1024 * 1024..=4 * 1024 * 1024 * 1024).contains(&bytes) {
                return Err(SettingsError::Invalid {
                    key: "memoryLimit",
                    message: format!("{memory} is outside 1Mi..4Gi"),
                });
            }
            limits.memory_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        if let Some(deadline) = &raw.deadline {
            let deadline = parse_duration(deadline).map_err(|message| SettingsError::Invalid {
                key: "deadline",
                message,
            })?;
            if deadline < Duration::from_millis(1) || deadline > Duration::from_secs(60) {
                return Err(SettingsError::Invalid {
                    key: "deadline",
                    message: "must be between 1ms and 60s".into(),
                });
            }
            limits.deadline = deadline;
        }
        if let Some(size) = &raw.max_outcome_size {
            let bytes = parse_quantity(size).map_err(|message| SettingsError::Invalid {
                key: "maxOutcomeSize",
                message,
            })?;
            limits.max_outcome_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        let concurrency = match raw.concurrency {
            None => defaults.concurrency,
            Some(n @ 1..=256) => n as usize,
            Some(n) => {
                return Err(SettingsError::Invalid {
                    key: "concurrency",
                    message: format!("{n} is outside 1..256"),
                });
            }
        };
        let resync = match &raw.resync {
            None => None,
            Some(text) => {
                let every =
                    parse_duration(text).map_err(|message| SettingsError::Invalid { key: "resync", message })?;
                if every < Duration::from_secs(1) {
                    return Err(SettingsError::Invalid {
                        key: "resync",
                        message: "must be at least 1s".into(),
                    });
                }
                Some(every)
            }
        };
        if let Some(namespaces) = &raw.namespaces
            && (namespaces.is_empty() || namespaces.iter().any(|n| n.is_empty()))
        {
            return Err(SettingsError::Invalid {
                key: "namespaces",
                message: "must list namespace names".into(),
            });
        }
        if let Some(secret) = &raw.pull_secret
            && (secret.is_empty()
                || secret.len() > 253
                || !secret
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'))
        {
            return Err(SettingsError::Invalid {
                key: "pullSecret",
                message: format!("{secret:?} is not a Secret name"),
            });
        }
        let refresh_interval = match &raw.refresh_interval {
            None => defaults.refresh_interval,
            Some(text) => {
                let every = parse_duration(text).map_err(|message| SettingsError::Invalid {
                    key: "refreshInterval",
                    message,
                })?;
                if every < Duration::from_secs(1) {
                    return Err(SettingsError::Invalid {
                        key: "refreshInterval",
                        message: "must be at least 1s".into(),
                    });
                }
                every
            }
        };
        let service_account = raw
            .service_account
            .as_deref()
            .map(ServiceAccountRef::parse)
            .transpose()
            .map_err(|message| SettingsError::Invalid {
                key: "serviceAccount",
                message,
            })?;
        let revision_history_limit = match raw.revision_history_limit {
            None => defaults.revision_history_limit,
            Some(n @ 1..=100) => n as usize,
            Some(n) => {
                return Err(SettingsError::Invalid {
                    key: "revisionHistoryLimit",
                    message: format!("{n} is outside 1..100"),
                });
            }
        };
        let preview = parse_preview(raw.preview.as_ref())?;
        let rollout = raw.rollout.as_ref().map(parse_rollout).transpose()?;
        let (outbound, variables) = parse_grants(&raw, &mut limits)?;
        Ok(Self {
            limits,
            concurrency,
            resync,
            always_call: raw.always_call.unwrap_or(false),
            namespaces: raw.namespaces,
            outbound,
            variables,
            pull_secret: raw.pull_secret,
            refresh_interval,
            service_account,
            revision_history_limit,
            preview,
            rollout,
        })
    }
}

/// A rollout's steps: shares that grow, each from 1% to 99%, with a pause from 1s to 1h.
fn parse_rollout(raw: &RawRollout) -> Result<RolloutSettings, SettingsError> {
    let invalid = |message: String| SettingsError::Invalid {
        key: "rollout.steps",
        message,
    };
    if raw.steps.is_empty() || raw.steps.len() > 10 {
        return Err(invalid("must list 1 to 10 steps".into()));
    }
    let mut steps = Vec::new();
    for step in &raw.steps {
        let share = match step.share.trim().strip_suffix('%').map(str::parse::<u8>) {
            Some(Ok(share @ 1..=99)) => share,
            _ => {
                return Err(invalid(format!(
                    "share {:?} is not a percentage from 1% to 99%",
                    step.share
                )));
            }
        };
        if steps
            .last()
            .is_some_and(|previous: &RolloutStep| previous.share >= share)
        {
            return Err(invalid(format!("share {share}% does not grow from the step before")));
        }
        let pause = parse_duration(&step.pause).map_err(|message| invalid(format!("pause: {message}")))?;
        if pause < Duration::from_secs(1) || pause > Duration::from_secs(3600) {
            return Err(invalid(format!("pause {:?} is outside 1s..1h", step.pause)));
        }
        steps.push(RolloutStep { share, pause });
    }
    Ok(RolloutSettings {
        steps,
        max_failures: raw.max_failures.unwrap_or(0) as usize,
    })
}

/// The preview gate's settings; the defaults where `preview` says nothing.
fn parse_preview(raw: Option<&RawPreview>) -> Result<PreviewSettings, SettingsError> {
    let mut preview = PreviewSettings::default();
    let Some(raw) = raw else {
        return Ok(preview);
    };
    if let Some(value) = &raw.max_new_failures {
        let text = match value {
            serde_json::Value::String(text) => text.clone(),
            serde_json::Value::Number(number) => number.to_string(),
            other => other.to_string(),
        };
        preview.max_new_failures = Tolerance::parse(&text).map_err(|message| SettingsError::Invalid {
            key: "preview.maxNewFailures",
            message,
        })?;
    }
    if let Some(objects) = raw.objects {
        preview.objects = objects as usize;
    }
    Ok(preview)
}

/// What the settings grant a contract 0.2 plugin: outbound HTTP (with its limits, set into `limits`) and
/// variables.
fn parse_grants(
    raw: &RawSettings,
    limits: &mut Limits,
) -> Result<(OutboundPolicy, BTreeMap<String, SecretKeyRef>), SettingsError> {
    let allowed = raw
        .allowed_outbound_hosts
        .iter()
        .flatten()
        .map(|pattern| HostPattern::parse(pattern))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| SettingsError::Invalid {
            key: "allowedOutboundHosts",
            message: error.to_string(),
        })?;
    let blocked = raw
        .blocked_networks
        .iter()
        .flatten()
        .map(|network| Network::parse(network))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| SettingsError::Invalid {
            key: "blockedNetworks",
            message: error.to_string(),
        })?;
    for (key, text, field) in [
        ("outboundTimeout", &raw.outbound_timeout, &mut limits.outbound_timeout),
        ("outboundBudget", &raw.outbound_budget, &mut limits.outbound_budget),
    ] {
        if let Some(text) = text {
            let duration = parse_duration(text).map_err(|message| SettingsError::Invalid { key, message })?;
            if duration < Duration::from_millis(1) || duration > Duration::from_secs(600) {
                return Err(SettingsError::Invalid {
                    key,
                    message: "must be between 1ms and 10m".into(),
                });
            }
            *field = duration;
        }
    }
    if let Some(size) = &raw.max_response_size {
        let bytes = parse_quantity(size).map_err(|message| SettingsError::Invalid {
            key: "maxResponseSize",
            message,
        })?;
        limits.max_response_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    }
    let mut variables = BTreeMap::new();
    for (name, reference) in raw.variables.iter().flatten() {
        if !is_variable_name(name) {
            return Err(SettingsError::Invalid {
                key: "variables",
                message: format!(
                    "{name:?} is not a variable name (a lower-case letter, then lower-case letters, digits, `_`)"
                ),
            });
        }
        let reference = SecretKeyRef::parse(reference).map_err(|message| SettingsError::Invalid {
            key: "variables",
            message: format!("{name}: {message}"),
        })?;
        variables.insert(name.clone(), reference);
    }
    Ok((OutboundPolicy { allowed, blocked }, variables))
}

/// `64Mi`, `1Gi`, `500k`, `1048576`.
pub fn parse_quantity(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a quantity such as 64Mi"))?;
    let multiplier: u64 = match suffix {
        "" => 1,
        "k" => 1000,
        "M" => 1000_u64.pow(2),
        "G" => 1000_u64.pow(3),
        "Ki" => 1024,
        "Mi" => 1024_u64.pow(2),
        "Gi" => 1024_u64.pow(3),
        _ => {
            return Err(format!(
                "{text:?} has an unknown suffix {suffix:?} (use Ki, Mi, Gi, k, M or G)"
            ));
        }
    };
    number
        .checked_mul(multiplier)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// `500ms`, `1s`, `10m`, `1h30m`, `2.5s`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let invalid = || format!("{text:?} is not a duration such as 500ms, 1s or 10m");
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let (number, tail) = rest.split_at(split);
        let number: f64 = number.parse().map_err(|_| invalid())?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let seconds = match unit {
            "ms" => number / 1000.0,
            "s" => number,
            "m" => number * 60.0,
            "h" => number * 3600.0,
            _ => return Err(invalid()),
        };
        total += Duration::from_secs_f64(seconds);
        rest = tail;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_settings_are_the_defaults() {
        assert_eq!(PluginSettings::parse("").unwrap(), PluginSettings::default());
        assert_eq!(PluginSettings::parse("{}").unwrap(), PluginSettings::default());
    }

    #[test]
    fn every_setting_parses() {
        let settings = PluginSettings::parse(
            "memoryLimit: 16Mi\ndeadline: 250ms\nmaxOutcomeSize: 1Mi\nconcurrency: 8\nresync: 1h30m\nnamespaces: [a, b]\n",
        )
        .unwrap();
        assert_eq!(settings.limits.memory_bytes, 16 * 1024 * 1024);
        assert_eq!(settings.limits.deadline, Duration::from_millis(250));
        assert_eq!(settings.limits.max_outcome_bytes, 1024 * 1024);
        assert_eq!(settings.concurrency, 8);
        assert_eq!(settings.resync, Some(Duration::from_secs(5400)));
        assert_eq!(settings.namespaces, Some(vec!["a".to_string(), "b".to_string()]));
        let registry = PluginSettings::parse("pullSecret: regcred\nrefreshInterval: 30s\n").unwrap();
        assert_eq!(registry.pull_secret.as_deref(), Some("regcred"));
        assert_eq!(registry.refresh_interval, Duration::from_secs(30));
        assert_eq!(PluginSettings::default().refresh_interval, DEFAULT_REFRESH_INTERVAL);
        let confined = PluginSettings::parse("serviceAccount: team-a/echo\n").unwrap();
        assert_eq!(
            confined.service_account,
            Some(ServiceAccountRef {
                namespace: "team-a".into(),
                name: "echo".into()
            })
        );
        assert_eq!(PluginSettings::default().service_account, None);
        let history = PluginSettings::parse("revisionHistoryLimit: 3\n").unwrap();
        assert_eq!(history.revision_history_limit, 3);
        assert_eq!(
            PluginSettings::default().revision_history_limit,
            DEFAULT_REVISION_HISTORY_LIMIT
        );
        let preview = PluginSettings::parse("preview:\n  maxNewFailures: 10%\n  objects: 50\n").unwrap();
        assert_eq!(preview.preview.max_new_failures, Tolerance::Percent(10));
        assert_eq!(preview.preview.objects, 50);
        let counted = PluginSettings::parse("preview: {maxNewFailures: 3}\n").unwrap();
        assert_eq!(counted.preview.max_new_failures, Tolerance::Count(3));
        assert_eq!(counted.preview.objects, 1000, "the default sample");
        assert_eq!(PluginSettings::default().preview.max_new_failures, Tolerance::Count(0));
        let rollout = PluginSettings::parse(
            "rollout:\n  steps:\n    - {share: 10%, pause: 30s}\n    - {share: 50%, pause: 1m}\n  maxFailures: 2\n",
        )
        .unwrap();
        assert_eq!(
            rollout.rollout,
            Some(RolloutSettings {
                steps: vec![
                    RolloutStep {
                        share: 10,
                        pause: Duration::from_secs(30)
                    },
                    RolloutStep {
                        share: 50,
                        pause: Duration::from_secs(60)
                    },
                ],
                max_failures: 2,
            })
        );
        assert_eq!(PluginSettings::default().rollout, None);
    }

    #[test]
    fn broken_settings_say_what_is_wrong() {
        let message = |text: &str| crate::error_chain(&PluginSettings::parse(text).unwrap_err());
        assert!(message("memoryLimit: lots").contains("setting `memoryLimit`: \"lots\" is not a quantity"));
        assert!(message("memoryLimit: 64Xi").contains("unknown suffix"));
        assert!(message("memoryLimit: 8Gi").contains("outside 1Mi..4Gi"));
        assert!(message("deadline: soon").contains("setting `deadline`"));
        assert!(message("deadline: 2m").contains("between 1ms and 60s"));
        assert!(message("concurrency: 0").contains("outside 1..256"));
        assert!(message("revisionHistoryLimit: 0").contains("setting `revisionHistoryLimit`: 0 is outside 1..100"));
        assert!(message("memory: 1Mi").contains("unknown field `memory`"));
        assert!(message("namespaces: []").contains("must list namespace names"));
        assert!(message("pullSecret: Reg_Cred").contains("setting `pullSecret`"));
        assert!(message("refreshInterval: 100ms").contains("must be at least 1s"));
        assert!(message("serviceAccount: echo").contains("setting `serviceAccount`: \"echo\" is not namespace/name"));
        assert!(message("serviceAccount: Team/echo").contains("\"Team\" is not a namespace name"));
        assert!(message("serviceAccount: team/").contains("\"\" is not a ServiceAccount name"));
        assert!(message("preview: {maxNewFailures: 150%}").contains("setting `preview.maxNewFailures`: \"150%\""));
        assert!(message("preview: {maxNewFailures: some}").contains("is neither a count nor a percentage"));
        assert!(message("preview: {maxFailures: 1}").contains("unknown field `maxFailures`"));
        assert!(message("rollout: {steps: []}").contains("setting `rollout.steps`: must list 1 to 10 steps"));
        assert!(message("rollout: {steps: [{share: 100%, pause: 1s}]}").contains("not a percentage from 1% to 99%"));
        assert!(
            message("rollout: {steps: [{share: 50%, pause: 1s}, {share: 20%, pause: 1s}]}")
                .contains("share 20% does not grow")
        );
        assert!(message("rollout: {steps: [{share: 5%, pause: 100ms}]}").contains("outside 1s..1h"));
    }

    #[test]
    fn outbound_grants_and_variables_parse() {
        let settings = PluginSettings::parse(
            "allowedOutboundHosts: [\"http://127.0.0.1:8081\", \"https://*.example.com\"]\n\
             blockedNetworks: [169.254.0.0/16]\n\
             outboundTimeout: 2s\noutboundBudget: 20s\nmaxResponseSize: 1Mi\n\
             variables:\n  api_key: pdns-api/api-key\n  token: dns/other/token\n",
        )
        .unwrap();
        assert_eq!(settings.outbound.allowed.len(), 2);
        assert_eq!(settings.outbound.allowed[1].as_str(), "https://*.example.com");
        assert!(settings.outbound.blocking("169.254.169.254".parse().unwrap()).is_some());
        assert_eq!(settings.limits.outbound_timeout, Duration::from_secs(2));
        assert_eq!(settings.limits.outbound_budget, Duration::from_secs(20));
        assert_eq!(settings.limits.max_response_bytes, 1024 * 1024);
        assert_eq!(settings.variables["api_key"].to_string(), "pdns-api/api-key");
        assert_eq!(settings.variables["token"].namespace.as_deref(), Some("dns"));
        let defaults = PluginSettings::default();
        assert!(defaults.outbound.denies_everything());
        assert!(defaults.variables.is_empty());
    }

    #[test]
    fn the_dnsrecord_example_settings_parse() {
        let text = include_str!("../../../plugins/dnsrecord/examples/settings.yaml");
        let settings = PluginSettings::parse(text).unwrap();
        assert_eq!(settings.outbound.allowed.len(), 1);
        assert_eq!(settings.outbound.allowed[0].as_str(), "http://127.0.0.1:8081");
        assert!(settings.outbound.blocking("169.254.169.254".parse().unwrap()).is_some());
        assert_eq!(settings.limits.outbound_timeout, Duration::from_secs(5));
        assert_eq!(settings.variables["pdns_api_key"].to_string(), "pdns-api/api-key");
    }

    #[test]
    fn broken_grants_say_what_is_wrong() {
        let message = |text: &str| crate::error_chain(&PluginSettings::parse(text).unwrap_err());
        assert!(message("allowedOutboundHosts: [example.com]").contains("setting `allowedOutboundHosts`"));
        assert!(message("blockedNetworks: [10.0.0.0/99]").contains("setting `blockedNetworks`"));
        assert!(message("outboundBudget: 1h").contains("between 1ms and 10m"));
        assert!(message("variables: {ApiKey: s/k}").contains("not a variable name"));
        assert!(message("variables: {api_key: just-a-name}").contains("api_key: \"just-a-name\" is not"));
    }

    #[test]
    fn durations_and_quantities() {
        assert_eq!(parse_duration("1h2m3s").unwrap(), Duration::from_secs(3723));
        assert_eq!(parse_duration("2.5s").unwrap(), Duration::from_millis(2500));
        assert!(parse_duration("5").is_err());
        assert_eq!(parse_quantity("500k").unwrap(), 500_000);
        assert_eq!(parse_quantity("1Gi").unwrap(), 1 << 30);
    }
}
