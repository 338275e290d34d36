//! A real OCI registry for the tests: CNCF Distribution (`docker-registry serve`, Debian's `docker-registry`
//! package) on a free loopback port with its storage in a temporary directory — plain HTTP, or TLS with a CA the
//! test generates, optionally behind htpasswd authentication. It can be stopped and started again on the same
//! port and storage, as a registry that went down and came back.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;

/// The Debian package that provides the registry binary.
const PACKAGE: &str = "docker-registry";
/// How long the registry may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// What kind of registry to start.
#[derive(Debug, Clone, Default)]
pub struct RegistryConfig {
    /// Serve TLS with a certificate for `localhost` and `127.0.0.1` from a CA generated for the test.
    pub tls: bool,
    /// Require this user name and password (htpasswd, bcrypt).
    pub user: Option<(String, String)>,
}

/// A running registry; stopped when dropped.
pub struct Registry {
    dir: tempfile::TempDir,
    config: PathBuf,
    addr: SocketAddr,
    tls: bool,
    process: Option<tokio::process::Child>,
}

impl Registry {
    /// A plain-HTTP registry without authentication.
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_with(RegistryConfig::default()).await
    }

    /// A registry as `config` says.
    pub async fn start_with(config: RegistryConfig) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let addr = free_port()?;
        let storage = dir.path().join("storage");
        std::fs::create_dir_all(&storage)?;
        let mut yaml = format!(
            "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    \
             rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            storage.display()
        );
        if config.tls {
            let (certificate, key) = write_certificates(dir.path())?;
            yaml.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                certificate.display(),
                key.display()
            ));
        }
        if let Some((user, password)) = &config.user {
            let hash = bcrypt::hash(password, 4)?;
            let htpasswd = dir.path().join("htpasswd");
            std::fs::write(&htpasswd, format!("{user}:{hash}\n"))?;
            yaml.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: wasm-reconciler-tests\n    path: {}\n",
                htpasswd.display()
            ));
        }
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, yaml)?;
        let mut registry = Self {
            dir,
            config: config_path,
            addr,
            tls: config.tls,
            process: None,
        };
        registry.start_again().await?;
        Ok(registry)
    }

    /// `host:port` as references name it: `127.0.0.1:PORT`, or `localhost:PORT` for TLS (the certificate's name).
    pub fn authority(&self) -> String {
        if self.tls {
            format!("localhost:{}", self.addr.port())
        } else {
            self.addr.to_string()
        }
    }

    /// `oci://AUTHORITY/REPOSITORY:TAG`.
    pub fn reference(&self, repository: &str, tag: &str) -> String {
        format!("oci://{}/{repository}:{tag}", self.authority())
    }

    /// The PEM of the CA that signed a TLS registry's certificate.
    pub fn ca_bundle(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A temporary directory that lives as long as the registry.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops the registry (its port closes); its storage stays.
    pub async fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = process.start_kill();
            let _ = process.wait().await;
        }
    }

    /// Starts the registry (again) on the same port and storage, and waits until it listens.
    pub async fn start_again(&mut self) -> anyhow::Result<()> {
        let binary = binary()?;
        let process = tokio::process::Command::new(&binary)
            .arg("serve")
            .arg(&self.config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        self.process = Some(process);
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            if tokio::net::TcpStream::connect(self.addr).await.is_ok() {
                return Ok(());
            }
            if let Some(status) = self.process.as_mut().and_then(|p| p.try_wait().ok().flatten()) {
                anyhow::bail!("docker-registry exited with {status} before listening on {}", self.addr);
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "docker-registry did not listen on {} within {START_TIMEOUT:?}",
                self.addr
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The registry binary: `docker-registry` on `PATH` or where Debian installs it; its absence fails the test
/// naming the package (`make test-tools` installs it).
fn binary() -> anyhow::Result<PathBuf> {
    let candidates = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("docker-registry"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    candidates
        .into_iter()
        .chain([PathBuf::from("/usr/bin/docker-registry")])
        .find(|candidate| candidate.is_file())
        .with_context(|| {
            format!(
                "docker-registry is not installed: the registry tests run CNCF Distribution from the Debian package \
                 `{PACKAGE}` (`make test-tools` installs it, or `apt-get install {PACKAGE}`)"
            )
        })
}

fn free_port() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?)
}

/// A CA and a server certificate for `localhost` and `127.0.0.1` signed by it; returns the certificate and key
/// paths (the CA is `ca.pem`).
fn write_certificates(dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose};
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "wasm-reconciler test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])?;
    params.distinguished_name.push(DnType::CommonName, "localhost");
    let certificate = params.signed_by(&key, &ca)?;
    std::fs::write(dir.join("ca.pem"), ca.pem())?;
    let certificate_path = dir.join("registry.pem");
    let key_path = dir.join("registry-key.pem");
    std::fs::write(&certificate_path, certificate.pem())?;
    std::fs::write(&key_path, key.serialize_pem())?;
    Ok((certificate_path, key_path))
}
