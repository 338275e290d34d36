//! A real PowerDNS authoritative server (Debian's `pdns-server` with `pdns-backend-sqlite3`) on loopback for the
//! tests of plugins that manage DNS: its database in a temporary directory, its HTTP API and DNS on free ports,
//! stopped and started again at will (the records survive), and a DNS query to see what it serves.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::harness::wait_for;
use crate::telemetry_probe::http_request;

/// The Debian packages the server comes from, named when a binary is missing.
const PACKAGES: &str = "pdns-server, pdns-backend-sqlite3 and sqlite3";
const PDNS_SERVER: &str = "/usr/sbin/pdns_server";
const SQLITE_SCHEMA: &str = "/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql";

/// A running (or stopped) PowerDNS server.
pub struct PowerDns {
    dir: PathBuf,
    child: Option<Child>,
    /// Port of the HTTP API.
    pub api_port: u16,
    /// Port DNS is served on (UDP and TCP).
    pub dns_port: u16,
    /// The API key it accepts.
    pub api_key: String,
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .expect("binding a loopback port")
        .port()
}

fn require(path: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        Path::new(path).exists(),
        "{path} is missing: install the Debian packages {PACKAGES} (`make test-tools` does)"
    );
    Ok(())
}

impl PowerDns {
    /// Creates an empty database in `dir` and starts the server with `api_key`.
    pub async fn start(dir: &Path, api_key: &str) -> anyhow::Result<Self> {
        require(PDNS_SERVER)?;
        require(SQLITE_SCHEMA)?;
        std::fs::create_dir_all(dir)?;
        let database = dir.join("pdns.sqlite3");
        let schema = std::fs::File::open(SQLITE_SCHEMA)?;
        let created = Command::new("sqlite3")
            .arg(&database)
            .stdin(schema)
            .status()
            .map_err(|error| match error.kind() {
                std::io::ErrorKind::NotFound => {
                    anyhow::anyhow!("sqlite3 is not installed: install the Debian packages {PACKAGES}")
                }
                _ => anyhow::Error::from(error).context("running sqlite3"),
            })?;
        anyhow::ensure!(created.success(), "sqlite3 could not create {}", database.display());
        std::fs::write(dir.join("pdns.conf"), "")?;
        let mut server = Self {
            dir: dir.to_path_buf(),
            child: None,
            api_port: free_port(),
            dns_port: free_port(),
            api_key: api_key.to_owned(),
        };
        server.resume().await?;
        Ok(server)
    }

    /// The API's base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.api_port)
    }

    /// Starts the server (again) on the same ports and database, and waits until its API answers.
    pub async fn resume(&mut self) -> anyhow::Result<()> {
        anyhow::ensure!(self.child.is_none(), "PowerDNS is already running");
        let dir = self.dir.display().to_string();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("pdns.log"))?;
        let child = Command::new(PDNS_SERVER)
            .args([
                format!("--config-dir={dir}"),
                format!("--socket-dir={dir}"),
                "--guardian=no".into(),
                "--daemon=no".into(),
                "--disable-syslog=yes".into(),
                "--write-pid=no".into(),
                "--security-poll-suffix=".into(),
                "--local-address=127.0.0.1".into(),
                format!("--local-port={}", self.dns_port),
                "--launch=gsqlite3".into(),
                format!("--gsqlite3-database={dir}/pdns.sqlite3"),
                "--api=yes".into(),
                format!("--api-key={}", self.api_key),
                "--webserver=yes".into(),
                "--webserver-address=127.0.0.1".into(),
                format!("--webserver-port={}", self.api_port),
                "--webserver-allow-from=127.0.0.0/8".into(),
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {PDNS_SERVER}"))?;
        self.child = Some(child);
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.api_port));
        let key = self.api_key.clone();
        wait_for(Duration::from_secs(30), "the PowerDNS API to answer", || {
            let key = key.clone();
            async move {
                let (status, _) = request(address, "GET", "/api/v1/servers/localhost", &key, None).await?;
                (status == 200).then_some(())
            }
        })
        .await;
        Ok(())
    }

    /// Stops the server; its API and DNS ports close.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends one API request; the status and the JSON body (`null` when empty).
    pub async fn api(&self, method: &str, path: &str, body: Option<&Value>) -> anyhow::Result<(u16, Value)> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.api_port));
        let (status, body) = request(address, method, path, &self.api_key, body)
            .await
            .with_context(|| format!("{method} {path}: PowerDNS did not answer"))?;
        let body = if body.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&body).with_context(|| format!("{method} {path} answered {body:?}"))?
        };
        Ok((status, body))
    }

    /// Creates a native zone `name` (with a trailing dot).
    pub async fn create_zone(&self, name: &str) -> anyhow::Result<()> {
        let zone = json!({"name": name, "kind": "Native", "nameservers": [format!("ns1.{name}")]});
        let (status, body) = self.api("POST", "/api/v1/servers/localhost/zones", Some(&zone)).await?;
        anyhow::ensure!(status == 201, "creating zone {name}: {status} {body}");
        Ok(())
    }

    /// The record set `name`/`record_type` in `zone`, as the API shows it.
    pub async fn rrset(&self, zone: &str, name: &str, record_type: &str) -> anyhow::Result<Option<Value>> {
        let (status, body) = self
            .api("GET", &format!("/api/v1/servers/localhost/zones/{zone}"), None)
            .await?;
        anyhow::ensure!(status == 200, "reading zone {zone}: {status} {body}");
        Ok(body["rrsets"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|set| set["name"] == name && set["type"] == record_type)
            .cloned())
    }

    /// The sorted contents of that record set, empty when it does not exist.
    pub async fn contents(&self, zone: &str, name: &str, record_type: &str) -> anyhow::Result<Vec<String>> {
        let mut contents: Vec<String> = self
            .rrset(zone, name, record_type)
            .await?
            .map(|set| {
                set["records"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|record| record["content"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        contents.sort();
        Ok(contents)
    }

    /// The IPv4 addresses it serves for `name` over DNS (an `A` query over UDP).
    pub fn resolve_a(&self, name: &str) -> anyhow::Result<Vec<Ipv4Addr>> {
        query_a(SocketAddr::from((Ipv4Addr::LOCALHOST, self.dns_port)), name)
    }
}

impl Drop for PowerDns {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One HTTP/1.0 request with the API key: status and body text, `None` when nothing answers.
async fn request(
    address: SocketAddr,
    method: &str,
    path: &str,
    api_key: &str,
    body: Option<&Value>,
) -> Option<(u16, String)> {
    let body = body.map(Value::to_string).unwrap_or_default();
    let headers = [("X-API-Key", api_key), ("Content-Type", "application/json")];
    http_request(address, method, path, &headers, &body).await
}

/// Asks `server` for the `A` records of `name` and returns the addresses in the answer section.
fn query_a(server: SocketAddr, name: &str) -> anyhow::Result<Vec<Ipv4Addr>> {
    let mut query = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in name.trim_end_matches('.').split('.') {
        query.push(u8::try_from(label.len())?);
        query.extend_from_slice(label.as_bytes());
    }
    query.extend_from_slice(&[0, 0, 1, 0, 1]);
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
    socket.set_read_timeout(Some(Duration::from_secs(5)))?;
    socket.send_to(&query, server)?;
    let mut answer = [0u8; 1500];
    let (length, _) = socket.recv_from(&mut answer).context("no DNS answer")?;
    let answer = &answer[..length];
    anyhow::ensure!(
        answer.len() >= 12 && answer[..2] == [0x12, 0x34],
        "not an answer to the query"
    );
    let rcode = answer[3] & 0x0f;
    if rcode == 3 {
        return Ok(Vec::new());
    }
    anyhow::ensure!(rcode == 0, "DNS error code {rcode}");
    let answers = u16::from_be_bytes([answer[6], answer[7]]);
    // Skip the question: the name as sent, then type and class.
    let mut at = 12 + (query.len() - 12);
    let mut addresses = Vec::new();
    for _ in 0..answers {
        at = skip_name(answer, at)?;
        let field = |offset: usize| -> anyhow::Result<u16> {
            Ok(u16::from_be_bytes([
                *answer.get(at + offset).context("a short answer")?,
                *answer.get(at + offset + 1).context("a short answer")?,
            ]))
        };
        let (record_type, data_length) = (field(0)?, usize::from(field(8)?));
        at += 10;
        let data = answer.get(at..at + data_length).context("a short answer")?;
        if record_type == 1 && data.len() == 4 {
            addresses.push(Ipv4Addr::new(data[0], data[1], data[2], data[3]));
        }
        at += data_length;
    }
    addresses.sort();
    Ok(addresses)
}

fn skip_name(message: &[u8], mut at: usize) -> anyhow::Result<usize> {
    loop {
        let length = *message.get(at).context("a short answer")?;
        match length {
            0 => return Ok(at + 1),
            pointer if pointer & 0xc0 == 0xc0 => return Ok(at + 2),
            label => at += 1 + usize::from(label),
        }
    }
}
