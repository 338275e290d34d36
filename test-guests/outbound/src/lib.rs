//! A test plugin built against contract 0.2 that sends the HTTP requests and reads the variables its configuration
//! names, and reports what happened in its status (variable values only by length, never verbatim).
//!
//! Configuration: `requests` (each `{url, method, headers, body, maxRedirects}`; a header value `${name}` is the
//! value of variable `name`), `variables` (names to read), and `then`: `spin` (compute forever) or `sleep` (block
//! on a one-minute timer) after the requests.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use wasm_reconciler_sdk::http::{Method, Request};
use wasm_reconciler_sdk::{ControllerSpec, Error, Gvk, Outcome, Reconciler, WorldView, variables};

/// Configuration of the outbound plugin.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Config {
    #[serde(default)]
    requests: Vec<RequestSpec>,
    #[serde(default)]
    variables: Vec<String>,
    then: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestSpec {
    url: String,
    method: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
    max_redirects: Option<u32>,
}

/// The outbound reconciler.
#[derive(Debug)]
pub struct Outbound;

/// The kind it reconciles.
pub fn kind() -> Gvk {
    Gvk::new("tests.wasm-reconciler.io", "v1", "Outbound")
}

impl Reconciler for Outbound {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(kind())
    }

    fn reconcile(view: WorldView) -> Result<Outcome, Error> {
        let config: Config = view.config()?;
        let mut read = serde_json::Map::new();
        for name in &config.variables {
            let entry = match variables::get(name) {
                Ok(value) => json!({"length": value.len()}),
                Err(error) => json!({"error": error.message()}),
            };
            read.insert(name.clone(), entry);
        }
        let responses: Vec<Value> = config.requests.iter().map(send).collect();
        match config.then.as_deref() {
            Some("spin") => spin(),
            Some("sleep") => std::thread::sleep(Duration::from_secs(60)),
            _ => {}
        }
        Ok(Outcome::new()
            .leave_children_alone()
            .status(&json!({"responses": responses, "variables": read})))
    }
}

fn send(spec: &RequestSpec) -> Value {
    let method = match spec.method.as_deref().unwrap_or("GET") {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "PATCH" => Method::Patch,
        "DELETE" => Method::Delete,
        other => Method::Other(other.to_owned()),
    };
    let mut request = Request::new(method, spec.url.clone());
    for (name, value) in &spec.headers {
        let value = match value.strip_prefix("${").and_then(|rest| rest.strip_suffix('}')) {
            Some(variable) => variables::get(variable).unwrap_or_default(),
            None => value.clone(),
        };
        request = request.header(name.clone(), value);
    }
    if let Some(body) = &spec.body {
        request = request.body(body.clone().into_bytes());
    }
    if let Some(redirects) = spec.max_redirects {
        request = request.max_redirects(redirects);
    }
    match request.send() {
        Ok(response) => json!({
            "status": response.status,
            "body": String::from_utf8_lossy(&response.body),
        }),
        Err(error) => json!({
            "error": format!("{:?}", error.kind()),
            "message": error.to_string(),
        }),
    }
}

/// Computes until the host interrupts it.
fn spin() -> ! {
    let mut counter: u64 = 0;
    loop {
        counter = std::hint::black_box(counter.wrapping_add(1));
    }
}

wasm_reconciler_sdk::export_reconciler!(Outbound, contract = "0.2");
