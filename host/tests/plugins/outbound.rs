//! Contract 0.2 plugins and the network: requests reach what the settings allow and nothing else (no redirect or DNS
//! answer gets around that), are counted, and are bounded by a timeout, a size limit and a budget that keeps the
//! CPU deadline for computation; variables reach the plugin. Real sockets on loopback throughout.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_reconciler::plugin::{
    FixedVariables, Grants, HostPattern, Limits, LoadError, Network, OutboundCounters, OutboundPolicy, Plugin,
    ReconcileError, WorldView,
};
use wasm_reconciler_artifacts::{OUTBOUND, UNGRANTED};

/// One request a test server received.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(field, _)| field.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// What a test server answers.
#[derive(Debug, Clone)]
enum Reply {
    /// Status, extra header lines, body, after a delay.
    Respond {
        status: u16,
        headers: Vec<String>,
        body: Vec<u8>,
        delay: Duration,
    },
    /// Reads the request and never answers.
    Hang,
}

impl Reply {
    fn redirect(status: u16, location: &str) -> Self {
        Self::Respond {
            status,
            headers: vec![format!("Location: {location}")],
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    fn ok(body: &str) -> Self {
        Self::Respond {
            status: 200,
            headers: vec!["Content-Type: application/json".into()],
            body: body.as_bytes().to_vec(),
            delay: Duration::ZERO,
        }
    }
}

/// An HTTP/1.1 server on a loopback port, one thread per connection, recording what it receives.
struct TestServer {
    address: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
}

impl TestServer {
    fn start(reply: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        let address = listener.local_addr().expect("a bound address");
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let reply = Arc::new(reply);
        let record = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let reply = reply.clone();
                let record = record.clone();
                std::thread::spawn(move || serve(stream, &*reply, &record));
            }
        });
        Self { address, received }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

fn serve(stream: TcpStream, reply: &dyn Fn(&Received) -> Reply, record: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("a socket clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    // A body of unknown length comes chunked: read it all, or closing the socket over unread bytes resets the
    // connection and the client loses the response.
    let chunked = headers
        .iter()
        .any(|(name, value)| name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked"));
    if chunked {
        read_chunks(&mut reader);
    }
    let request = Received { method, path, headers };
    record
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(request.clone());
    let mut stream = stream;
    match reply(&request) {
        Reply::Respond {
            status,
            headers,
            body,
            delay,
        } => {
            std::thread::sleep(delay);
            let mut head = format!(
                "HTTP/1.1 {status} Test\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for header in headers {
                head.push_str(&header);
                head.push_str("\r\n");
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
        Reply::Hang => std::thread::sleep(Duration::from_secs(120)),
    }
}

/// Reads a chunked body to its last chunk.
fn read_chunks(reader: &mut impl BufRead) {
    loop {
        let mut size = String::new();
        if reader.read_line(&mut size).unwrap_or(0) == 0 {
            return;
        }
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or_default(), 16).unwrap_or(0);
        let mut chunk = vec![0; size + 2];
        if reader.read_exact(&mut chunk).is_err() || size == 0 {
            return;
        }
    }
}

/// A listener nobody should ever reach; counts the connections that arrived.
struct Untouched {
    listener: TcpListener,
}

impl Untouched {
    fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        listener.set_nonblocking(true).expect("a non-blocking listener");
        Self { listener }
    }

    fn port(&self) -> u16 {
        self.listener.local_addr().expect("a bound address").port()
    }

    fn connections(&self) -> usize {
        std::iter::from_fn(|| self.listener.accept().ok()).count()
    }
}

fn policy(allowed: &[String], blocked: &[&str]) -> OutboundPolicy {
    OutboundPolicy {
        allowed: allowed
            .iter()
            .map(|pattern| HostPattern::parse(pattern).unwrap())
            .collect(),
        blocked: blocked.iter().map(|network| Network::parse(network).unwrap()).collect(),
    }
}

/// The grants every test gives: `outbound`, counted in `counters`, and the variable `api_key`.
fn grants(outbound: OutboundPolicy, counters: &OutboundCounters) -> Grants {
    Grants {
        outbound: Arc::new(outbound),
        counters: counters.clone(),
        variables: Arc::new(FixedVariables::new([(
            "api_key".to_owned(),
            "k3y-for-tests".to_owned(),
        )])),
    }
}

fn plugin(limits: Limits, outbound: OutboundPolicy, counters: &OutboundCounters) -> Plugin {
    super::load(OUTBOUND, limits).with_grants(grants(outbound, counters))
}

fn reconcile(plugin: &Plugin, config: Value) -> Result<Value, ReconcileError> {
    let primary = json!({
        "apiVersion": "tests.wasm-reconciler.io/v1", "kind": "Outbound",
        "metadata": {"name": "o", "namespace": "default"}
    });
    let outcome = plugin.reconcile(WorldView::from_json(&primary, &[], &config), super::reader(vec![]))?;
    Ok(outcome.status.expect("the plugin reports a status"))
}

#[test]
fn an_allowed_request_is_sent_with_the_variable_and_counted() {
    let server = TestServer::start(|_| Reply::ok(r#"{"zone":"example.org."}"#));
    let counters = OutboundCounters::default();
    let plugin = plugin(
        Limits::default(),
        policy(&[format!("http://127.0.0.1:{}", server.address.port())], &[]),
        &counters,
    );
    let status = reconcile(
        &plugin,
        json!({
            "variables": ["api_key", "missing"],
            "requests": [{"url": server.url("/api/v1/zones"), "headers": {"X-API-Key": "${api_key}"}}],
        }),
    )
    .unwrap();
    assert_eq!(status["responses"][0]["status"], 200, "{status}");
    assert_eq!(status["responses"][0]["body"], r#"{"zone":"example.org."}"#);
    assert_eq!(status["variables"]["api_key"]["length"], "k3y-for-tests".len());
    assert!(
        status["variables"]["missing"]["error"]
            .as_str()
            .unwrap()
            .contains("define no variable \"missing\""),
        "{status}"
    );
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(
        (received[0].method.as_str(), received[0].path.as_str()),
        ("GET", "/api/v1/zones")
    );
    assert_eq!(received[0].header("x-api-key"), Some("k3y-for-tests"));
    assert_eq!(
        (counters.sent.get(), counters.denied.get(), counters.failed.get()),
        (1, 0, 0)
    );
}

#[test]
fn a_host_not_allowed_is_denied_inside_the_plugin_and_never_contacted() {
    let untouched = Untouched::bind();
    let allowed = TestServer::start(|_| Reply::ok("{}"));
    let counters = OutboundCounters::default();
    // Another port on an allowed host, and nothing allowed at all: both denied.
    for outbound in [
        policy(&[format!("http://127.0.0.1:{}", allowed.address.port())], &[]),
        OutboundPolicy::default(),
    ] {
        let plugin = plugin(Limits::default(), outbound, &counters);
        let status = reconcile(
            &plugin,
            json!({"requests": [{"url": format!("http://127.0.0.1:{}/steal", untouched.port())}]}),
        )
        .expect("a denial is an error inside the plugin, not a trap");
        assert_eq!(status["responses"][0]["error"], "Denied", "{status}");
        assert!(
            status["responses"][0]["message"]
                .as_str()
                .unwrap()
                .contains("denied by the host"),
            "{status}"
        );
    }
    assert_eq!(untouched.connections(), 0, "a denied request reached its host");
    assert_eq!((counters.sent.get(), counters.denied.get()), (0, 2));
}

#[test]
fn a_redirect_to_a_host_not_allowed_is_denied_too() {
    let untouched = Untouched::bind();
    let target = format!("http://127.0.0.1:{}/elsewhere", untouched.port());
    let server = TestServer::start(move |_| Reply::redirect(302, &target));
    let counters = OutboundCounters::default();
    let plugin = plugin(
        Limits::default(),
        policy(&[format!("http://127.0.0.1:{}", server.address.port())], &[]),
        &counters,
    );
    let status = reconcile(&plugin, json!({"requests": [{"url": server.url("/start")}]})).unwrap();
    assert_eq!(status["responses"][0]["error"], "Denied", "{status}");
    assert_eq!(server.received().len(), 1);
    assert_eq!(
        untouched.connections(),
        0,
        "the redirect reached a host the plugin may not contact"
    );
    assert_eq!((counters.sent.get(), counters.denied.get()), (1, 1));
}

#[test]
fn a_name_resolving_into_a_blocked_network_is_denied() {
    let server = TestServer::start(|_| Reply::ok("{}"));
    let counters = OutboundCounters::default();
    let port = server.address.port();
    let plugin = plugin(
        Limits::default(),
        policy(&[format!("http://localhost:{port}")], &["127.0.0.0/8", "::1"]),
        &counters,
    );
    let status = reconcile(
        &plugin,
        json!({"requests": [{"url": format!("http://localhost:{port}/")}]}),
    )
    .unwrap();
    assert_eq!(status["responses"][0]["error"], "Denied", "{status}");
    assert!(server.received().is_empty(), "a request reached a blocked address");
    assert_eq!(counters.denied.get(), 1);
}

#[test]
fn responses_over_the_size_limit_fail() {
    let server = TestServer::start(|_| Reply::ok(&"x".repeat(64 * 1024)));
    let counters = OutboundCounters::default();
    let plugin = plugin(
        Limits {
            max_response_bytes: 16 * 1024,
            ..Limits::default()
        },
        policy(&[format!("http://127.0.0.1:{}", server.address.port())], &[]),
        &counters,
    );
    let status = reconcile(&plugin, json!({"requests": [{"url": server.url("/big")}]})).unwrap();
    assert_eq!(status["responses"][0]["error"], "TooLarge", "{status}");
    assert_eq!(counters.failed.get(), 1);
}

#[test]
fn a_server_that_never_answers_times_out_per_request() {
    let server = TestServer::start(|_| Reply::Hang);
    let counters = OutboundCounters::default();
    let plugin = plugin(
        Limits {
            outbound_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
        policy(&[format!("http://127.0.0.1:{}", server.address.port())], &[]),
        &counters,
    );
    let started = Instant::now();
    let status = reconcile(&plugin, json!({"requests": [{"url": server.url("/slow")}]})).unwrap();
    assert_eq!(status["responses"][0]["error"], "Timeout", "{status}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(counters.failed.get(), 1);
}

#[test]
fn waiting_for_a_response_does_not_count_against_the_deadline() {
    let server = TestServer::start(|_| Reply::Respond {
        status: 200,
        headers: Vec::new(),
        body: b"late".to_vec(),
        delay: Duration::from_millis(700),
    });
    let counters = OutboundCounters::default();
    let plugin = plugin(
        Limits {
            deadline: Duration::from_millis(250),
            ..Limits::default()
        },
        policy(&[format!("http://127.0.0.1:{}", server.address.port())], &[]),
        &counters,
    );
    let status = reconcile(&plugin, json!({"requests": [{"url": server.url("/late")}]}))
        .expect("700 ms of waiting is not 700 ms of computing");
    assert_eq!(status["responses"][0]["body"], "late");
}

#[test]
fn the_deadline_still_stops_computation_after_a_request() {
    let server = TestServer::start(|_| Reply::ok("{}"));
    let counters = OutboundCounters::default();
    let deadline = Duration::from_millis(200);
    let plugin = plugin(
        Limits {
            deadline,
            ..Limits::default()
        },
        policy(&[format!("http://127.0.0.1:{}", server.address.port())], &[]),
        &counters,
    );
    let started = Instant::now();
    let error = reconcile(&plugin, json!({"requests": [{"url": server.url("/")}], "then": "spin"})).unwrap_err();
    assert!(
        matches!(error, ReconcileError::Timeout { deadline: d } if d == deadline),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn blocking_past_the_outbound_budget_interrupts_the_call() {
    let counters = OutboundCounters::default();
    let budget = Duration::from_millis(300);
    let plugin = plugin(
        Limits {
            outbound_budget: budget,
            ..Limits::default()
        },
        OutboundPolicy::default(),
        &counters,
    );
    let started = Instant::now();
    let error = reconcile(&plugin, json!({"then": "sleep"})).unwrap_err();
    assert!(
        matches!(error, ReconcileError::OutboundBudget { budget: b } if b == budget),
        "{error:?}"
    );
    assert_eq!(error.reason(), "Timeout");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn a_contract_0_1_plugin_importing_http_is_refused_by_name() {
    let wasm = wasm_reconciler_artifacts::read(UNGRANTED);
    let error = super::engine()
        .load("ungranted", &wasm, Limits::default())
        .expect_err("0.1 grants no outbound access");
    assert!(
        matches!(&error, LoadError::NotGranted { import, .. } if import.starts_with("wasi:http/")),
        "{error:?}"
    );
    assert!(error.to_string().contains("contract = \"0.2\""), "{error}");
}

#[test]
fn inspecting_shows_what_a_plugin_asks_for() {
    let outbound = super::load(OUTBOUND, Limits::default());
    assert_eq!(outbound.wit_version(), "0.2.0");
    assert!(outbound.capabilities().outbound_http && outbound.capabilities().variables);
    let echo = super::load(wasm_reconciler_artifacts::ECHO, Limits::default());
    assert_eq!(echo.wit_version(), "0.1.0");
    assert!(!echo.capabilities().outbound_http && !echo.capabilities().variables);
    // Contract 0.3 may import both, but a plugin that uses neither imports neither: its calls stay skippable.
    let configmapset = super::load(wasm_reconciler_artifacts::CONFIGMAPSET, Limits::default());
    assert_eq!(configmapset.wit_version(), "0.3.0");
    assert!(!configmapset.capabilities().outbound_http && !configmapset.capabilities().variables);
}

/// The outbound guest in each language: Rust (built by the artifacts crate), Python and TypeScript (built by
/// `make polyglot` from `test-guests/outbound-py` and `test-guests/outbound-ts`), with the same configuration and
/// the same status.
const LANGUAGES: [(&str, &str); 3] = [
    ("Rust", OUTBOUND),
    ("Python", wasm_reconciler_artifacts::OUTBOUND_PY),
    ("TypeScript", wasm_reconciler_artifacts::OUTBOUND_TS),
];

/// Each language's guest, compiled once for the whole test binary (a Python component takes seconds).
fn outbound_guests() -> &'static [(&'static str, Plugin)] {
    static LOADED: std::sync::OnceLock<Vec<(&'static str, Plugin)>> = std::sync::OnceLock::new();
    LOADED.get_or_init(|| {
        LANGUAGES
            .iter()
            .map(|&(language, path)| {
                let wasm = if language == "Rust" {
                    wasm_reconciler_artifacts::read(path)
                } else {
                    wasm_reconciler_artifacts::read_polyglot(path)
                };
                let plugin = super::engine()
                    .load(language, &wasm, Limits::default())
                    .unwrap_or_else(|e| panic!("loading {path}: {}", wasm_reconciler::error_chain(&e)));
                (language, plugin)
            })
            .collect()
    })
}

/// Runs `config` through every language's guest under `outbound`, checks that all report the same status and
/// returns it with the counters each run left.
fn in_every_language(outbound: &OutboundPolicy, config: &Value) -> (Value, Vec<OutboundCounters>) {
    let mut statuses = Vec::new();
    let mut all_counters = Vec::new();
    for (language, plugin) in outbound_guests() {
        let counters = OutboundCounters::default();
        let plugin = plugin.clone().with_grants(grants(outbound.clone(), &counters));
        let status = reconcile(&plugin, config.clone())
            .unwrap_or_else(|e| panic!("the {language} guest failed: {}", wasm_reconciler::error_chain(&e)));
        statuses.push((*language, status));
        all_counters.push(counters);
    }
    let (_, rust) = &statuses[0];
    for (language, status) in &statuses[1..] {
        pretty_assertions::assert_eq!(
            rust,
            status,
            "the {language} guest reports otherwise than the Rust guest"
        );
    }
    (statuses.swap_remove(0).1, all_counters)
}

#[test]
fn every_language_sends_an_allowed_request_with_a_variable_alike() {
    let server = TestServer::start(|request| match request.path.as_str() {
        "/start" => Reply::redirect(303, "/zone"),
        "/zone" => Reply::ok(r#"{"zone":"example.org."}"#),
        _ => Reply::Respond {
            status: 404,
            headers: Vec::new(),
            body: b"no such zone".to_vec(),
            delay: Duration::ZERO,
        },
    });
    let outbound = policy(&[format!("http://127.0.0.1:{}", server.address.port())], &[]);
    let config = json!({
        "variables": ["api_key", "missing"],
        "requests": [
            {"url": server.url("/start"), "method": "POST", "body": "{}", "headers": {"X-API-Key": "${api_key}"}},
            {"url": server.url("/other"), "method": "DELETE"},
        ],
    });
    let (status, counters) = in_every_language(&outbound, &config);
    assert_eq!(status["responses"][0]["status"], 200, "{status}");
    assert_eq!(status["responses"][0]["body"], r#"{"zone":"example.org."}"#);
    assert_eq!(status["responses"][1]["status"], 404, "{status}");
    assert_eq!(status["responses"][1]["body"], "no such zone");
    assert_eq!(status["variables"]["api_key"]["length"], "k3y-for-tests".len());
    assert!(
        status["variables"]["missing"]["error"]
            .as_str()
            .unwrap()
            .contains("define no variable \"missing\""),
        "{status}"
    );
    // Per language: the POST, the GET the 303 turned it into (no body, the header kept), the DELETE.
    let received = server.received();
    assert_eq!(received.len(), 3 * LANGUAGES.len(), "{received:?}");
    for exchange in received.chunks(3) {
        let seen: Vec<(&str, &str)> = exchange
            .iter()
            .map(|request| (request.method.as_str(), request.path.as_str()))
            .collect();
        assert_eq!(seen, [("POST", "/start"), ("GET", "/zone"), ("DELETE", "/other")]);
        assert!(
            exchange[..2]
                .iter()
                .all(|request| request.header("x-api-key") == Some("k3y-for-tests"))
        );
    }
    for counters in counters {
        assert_eq!((counters.sent.get(), counters.denied.get()), (3, 0));
    }
}

#[test]
fn every_language_is_denied_a_host_not_allowed_and_a_redirect_to_one() {
    let untouched = Untouched::bind();
    let target = format!("http://127.0.0.1:{}/elsewhere", untouched.port());
    let server = TestServer::start(move |_| Reply::redirect(302, &target));
    let outbound = policy(&[format!("http://127.0.0.1:{}", server.address.port())], &[]);
    let config = json!({"requests": [
        {"url": format!("http://127.0.0.1:{}/steal", untouched.port())},
        {"url": server.url("/start")},
        {"url": "not a url"},
    ]});
    let (status, counters) = in_every_language(&outbound, &config);
    assert_eq!(status["responses"][0]["error"], "Denied", "{status}");
    assert!(
        status["responses"][0]["message"]
            .as_str()
            .unwrap()
            .contains("denied by the host"),
        "{status}"
    );
    assert_eq!(status["responses"][1]["error"], "Denied", "{status}");
    assert_eq!(status["responses"][2]["error"], "InvalidUrl", "{status}");
    assert_eq!(server.received().len(), LANGUAGES.len());
    assert_eq!(untouched.connections(), 0, "a denied request reached its host");
    for counters in counters {
        assert_eq!((counters.sent.get(), counters.denied.get()), (1, 2));
    }
}
