//! The scenario files: steps played in order against each server, and `${name}` variables captured from answers.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};
use serde::Deserialize;
use serde_json::Value;

/// One scenario file (`scenarios/*.yaml`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name; step ids are `name/step`.
    pub name: String,
    /// What the scenario covers.
    pub description: String,
    /// Namespaces created on both servers before the first step.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// One step: exactly one of `request`, `kubectl`, `watch` or `wait`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Unique within the scenario.
    pub id: String,
    /// An HTTP request through the kube client.
    pub request: Option<Request>,
    /// kubectl arguments.
    pub kubectl: Option<Vec<String>>,
    /// Standard input of kubectl.
    pub stdin: Option<String>,
    /// How kubectl's standard output is read (guessed from `-o` when absent).
    pub output: Option<Output>,
    /// A watch, read until the server ends it (`timeoutSeconds` in its path).
    pub watch: Option<Request>,
    /// A request repeated until its answer satisfies `until`.
    pub wait: Option<Wait>,
    /// Variables to capture from this step's raw answer: name → JSON pointer (e.g. `/body/metadata/uid`).
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
}

/// An HTTP request.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// `GET`, `POST`, …; `GET` when absent.
    #[serde(default = "get")]
    pub method: String,
    /// Path and query.
    pub path: String,
    /// A JSON body.
    pub body: Option<Value>,
    /// A body sent as is (for malformed documents and YAML).
    pub raw: Option<String>,
    /// `Content-Type` (JSON when a body is given and this is absent).
    #[serde(rename = "contentType")]
    pub content_type: Option<String>,
    /// `Accept`.
    pub accept: Option<String>,
}

fn get() -> String {
    "GET".into()
}

/// The condition a `wait` step polls for (serde cannot deny unknown fields next to a flattened one).
#[derive(Debug, Clone, Deserialize)]
pub struct Wait {
    /// The request polled.
    #[serde(flatten)]
    pub request: Request,
    /// HTTP status code to wait for.
    pub code: Option<u16>,
    /// A JSON pointer into the answer (`/code`, `/warnings/0`, `/body/metadata/name`, …) ...
    pub pointer: Option<String>,
    /// ... that must equal this value ...
    pub equals: Option<Value>,
    /// ... or be absent (`true`) or present (`false`).
    pub absent: Option<bool>,
    /// Fail the step after this many seconds (60 when absent).
    pub timeout: Option<u64>,
}

/// How kubectl's standard output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Output {
    /// A JSON document.
    Json,
    /// A YAML document.
    Yaml,
    /// A table: one array of cells per line.
    Table,
    /// Plain lines.
    Text,
}

/// What a step does.
pub enum Action<'a> {
    /// See [`Step::request`].
    Request(&'a Request),
    /// See [`Step::kubectl`].
    Kubectl(&'a [String]),
    /// See [`Step::watch`].
    Watch(&'a Request),
    /// See [`Step::wait`].
    Wait(&'a Wait),
}

impl Step {
    /// The one action of the step.
    pub fn action(&self) -> anyhow::Result<Action<'_>> {
        let mut actions = Vec::new();
        if let Some(request) = &self.request {
            actions.push(Action::Request(request));
        }
        if let Some(args) = &self.kubectl {
            actions.push(Action::Kubectl(args));
        }
        if let Some(request) = &self.watch {
            actions.push(Action::Watch(request));
        }
        if let Some(wait) = &self.wait {
            actions.push(Action::Wait(wait));
        }
        match actions.len() {
            1 => Ok(actions.remove(0)),
            n => bail!(
                "step {} has {n} actions; it needs exactly one of request, kubectl, watch, wait",
                self.id
            ),
        }
    }

    /// How kubectl's output is read: as declared, else from `-o json|yaml`, else a table for `get`, else text.
    pub fn output(&self) -> Output {
        if let Some(output) = self.output {
            return output;
        }
        let args = self.kubectl.as_deref().unwrap_or_default();
        let format = args
            .iter()
            .zip(args.iter().skip(1))
            .find(|(flag, _)| *flag == "-o" || *flag == "--output")
            .map(|(_, value)| value.as_str())
            .or_else(|| {
                args.iter()
                    .find_map(|arg| arg.strip_prefix("-o=").or(arg.strip_prefix("--output=")))
            });
        match format {
            Some("json") => Output::Json,
            Some("yaml") => Output::Yaml,
            Some("wide") | None if args.first().is_some_and(|verb| verb == "get") => Output::Table,
            _ => Output::Text,
        }
    }
}

/// Every scenario in `dir`, in file-name order; step ids checked for uniqueness.
pub fn load_all(dir: &Path) -> anyhow::Result<Vec<Scenario>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|path| path.extension().is_some_and(|extension| extension == "yaml"));
    files.sort();
    let mut scenarios = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        let scenario: Scenario =
            serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
        anyhow::ensure!(
            names.insert(scenario.name.clone()),
            "two scenarios are named {}",
            scenario.name
        );
        let mut ids = std::collections::BTreeSet::new();
        for step in &scenario.steps {
            step.action().with_context(|| format!("in {}", file.display()))?;
            anyhow::ensure!(
                ids.insert(step.id.as_str()),
                "{}: two steps are named {}",
                file.display(),
                step.id
            );
        }
        scenarios.push(scenario);
    }
    Ok(scenarios)
}

/// Captured values of one server, substituted as `${name}`.
#[derive(Debug, Default, Clone)]
pub struct Variables {
    values: BTreeMap<String, String>,
}

impl Variables {
    /// Record `name`.
    pub fn set(&mut self, name: &str, value: String) {
        self.values.insert(name.to_owned(), value);
    }

    /// The captured values with their names.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(name, value)| (name.as_str(), value.as_str()))
    }

    /// `text` with every `${name}` replaced; an unknown name is an error.
    pub fn substitute(&self, text: &str) -> anyhow::Result<String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let end = rest[start..]
                .find('}')
                .with_context(|| format!("unterminated variable in {text:?}"))?;
            let name = &rest[start + 2..start + end];
            let value = self
                .values
                .get(name)
                .with_context(|| format!("variable {name} is not captured before it is used"))?;
            out.push_str(value);
            rest = &rest[start + end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// `value` with every string substituted.
    pub fn substitute_value(&self, value: &Value) -> anyhow::Result<Value> {
        Ok(match value {
            Value::String(text) => Value::String(self.substitute(text)?),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.substitute_value(item))
                    .collect::<anyhow::Result<_>>()?,
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, item)| Ok((key.clone(), self.substitute_value(item)?)))
                    .collect::<anyhow::Result<_>>()?,
            ),
            other => other.clone(),
        })
    }
}
