//! The allowlist language of `allowedOutboundHosts` (Spin's `allowed_outbound_hosts`, without templates and with
//! only the `http` and `https` schemes) and the networks of `blockedNetworks`: parsing and matching, no I/O.
//!
//! A pattern is `scheme://host[:port]`:
//!
//! - `scheme`: `http`, `https` or `*` (either);
//! - `host`: a name (`api.example.com`), `*.example.com` (any name below `example.com`, not `example.com`
//!   itself), `*` (any host), an address (`10.0.0.1`, `[::1]`) or a CIDR range (`10.0.0.0/8`, `[fd00::]/8`);
//!   addresses and ranges match requests that name an address, never a name;
//! - `port`: a number, a range `8000..8080` (end excluded, as in Spin), or `*`; omitted, it is the scheme's
//!   default (80, 443), so a pattern with the `*` scheme needs one.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// Why a pattern or network does not parse; the message names the offending part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?}: {message}")]
pub struct PatternError {
    input: String,
    message: String,
}

impl PatternError {
    fn new(input: &str, message: impl Into<String>) -> Self {
        Self {
            input: input.to_owned(),
            message: message.into(),
        }
    }
}

/// Result alias for this module.
pub type Result<T, E = PatternError> = std::result::Result<T, E>;

/// A request's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The port a URL of this scheme means when it names none.
    pub fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }

    /// `http` or `https`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

/// The host of a request: a name, or an address written in the URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A DNS name, lower-case, without a trailing dot.
    Name(String),
    /// An IP address literal (IPv4-mapped IPv6 addresses are taken as IPv4).
    Address(IpAddr),
}

impl Host {
    /// Reads the host part of a URI (`api.example.com`, `10.0.0.1`, `[::1]`).
    pub fn parse(text: &str) -> Option<Self> {
        let trimmed = text.trim_end_matches('.');
        if trimmed.is_empty() {
            return None;
        }
        let unbracketed = trimmed
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(trimmed);
        match IpAddr::from_str(unbracketed) {
            Ok(address) => Some(Self::Address(address.to_canonical())),
            Err(_) if is_dns_name(trimmed) => Some(Self::Name(trimmed.to_ascii_lowercase())),
            Err(_) => None,
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Address(IpAddr::V6(address)) => write!(f, "[{address}]"),
            Self::Address(address) => write!(f, "{address}"),
        }
    }
}

/// One request as the allowlist sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// The host named in the URL.
    pub host: Host,
    /// The port, the scheme's default when the URL names none.
    pub port: u16,
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme.as_str(), self.host, self.port)
    }
}

/// A range of addresses, `10.0.0.0/8` or `fd00::/8`; a lone address is a range of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Network {
    address: IpAddr,
    prefix: u8,
}

impl Network {
    /// Parses `10.0.0.0/8`, `[fd00::]/8`, `fd00::/8` or a lone address.
    pub fn parse(text: &str) -> Result<Self> {
        let (address, prefix) = match text.rsplit_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address = address
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(address);
        let address = IpAddr::from_str(address)
            .map_err(|_| PatternError::new(text, "not an IP address or CIDR range"))?
            .to_canonical();
        let bits = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => bits,
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|prefix| *prefix <= bits)
                .ok_or_else(|| PatternError::new(text, format!("the prefix length must be 0..={bits}")))?,
        };
        Ok(Self { address, prefix })
    }

    /// Whether `address` lies in this range (an IPv4-mapped IPv6 address counts as its IPv4 address).
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.address, address.to_canonical()) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix)
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix)
            }
            _ => false,
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

fn prefix_matches(network: &[u8], address: &[u8], prefix: u8) -> bool {
    let whole = usize::from(prefix / 8);
    let rest = prefix % 8;
    if network[..whole] != address[..whole] {
        return false;
    }
    if rest == 0 {
        return true;
    }
    let mask = 0xff_u8 << (8 - rest);
    network[whole] & mask == address[whole] & mask
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum SchemePattern {
    Any,
    One(Scheme),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum HostPatternKind {
    Any,
    Name(String),
    /// `*.suffix`: names that end with `.suffix`.
    Subdomains(String),
    Network(Network),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum PortPattern {
    Any,
    /// `start..end`, end excluded; a single port is `port..port + 1`.
    Range(u16, u32),
}

/// One entry of `allowedOutboundHosts`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPattern {
    text: String,
    scheme: SchemePattern,
    host: HostPatternKind,
    port: PortPattern,
}

impl HostPattern {
    /// Parses one allowlist entry.
    ///
    /// ```
    /// # use wasm_reconciler::plugin::HostPattern;
    /// assert!(HostPattern::parse("https://*.example.com:8443").is_ok());
    /// assert!(HostPattern::parse("http://127.0.0.1:*").is_ok());
    /// assert!(HostPattern::parse("example.com").is_err()); // no scheme
    /// ```
    pub fn parse(text: &str) -> Result<Self> {
        let error = |message: &str| PatternError::new(text, message);
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| error("needs a scheme: `http://`, `https://` or `*://`"))?;
        let scheme = match scheme {
            "*" => SchemePattern::Any,
            "http" => SchemePattern::One(Scheme::Http),
            "https" => SchemePattern::One(Scheme::Https),
            other => {
                return Err(error(&format!(
                    "scheme {other:?} is not supported (only http, https and *)"
                )));
            }
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (host, port) = split_host_port(rest).ok_or_else(|| error("malformed host or port"))?;
        let names_a_path = rest.contains(['?', '#', '@'])
            || port.is_some_and(|port| port.contains('/'))
            || host
                .split_once('/')
                .is_some_and(|(address, _)| address.trim_matches(['[', ']']).parse::<IpAddr>().is_err());
        if names_a_path {
            return Err(error("must be scheme://host[:port], without a path, query or user"));
        }
        let host = parse_host_pattern(host).ok_or_else(|| error("malformed host"))?;
        let port = match (port, &scheme) {
            (None, SchemePattern::One(scheme)) => {
                PortPattern::Range(scheme.default_port(), u32::from(scheme.default_port()) + 1)
            }
            (None, SchemePattern::Any) => {
                return Err(error(
                    "a pattern with the `*` scheme needs a port (`*://host:443` or `*://host:*`)",
                ));
            }
            (Some("*"), _) => PortPattern::Any,
            (Some(port), _) => {
                parse_port_pattern(port).ok_or_else(|| error("the port must be a number, a range a..b or *"))?
            }
        };
        Ok(Self {
            text: text.to_owned(),
            scheme,
            host,
            port,
        })
    }

    /// Whether a request to `destination` matches this entry.
    pub fn matches(&self, destination: &Destination) -> bool {
        let scheme = match &self.scheme {
            SchemePattern::Any => true,
            SchemePattern::One(scheme) => *scheme == destination.scheme,
        };
        let port = match self.port {
            PortPattern::Any => true,
            PortPattern::Range(start, end) => start <= destination.port && u32::from(destination.port) < end,
        };
        let host = match (&self.host, &destination.host) {
            (HostPatternKind::Any, _) => true,
            (HostPatternKind::Name(pattern), Host::Name(name)) => pattern == name,
            // The suffix keeps its leading dot (`.example.com`): what is left is one or more labels.
            (HostPatternKind::Subdomains(suffix), Host::Name(name)) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|labels| !labels.is_empty()),
            (HostPatternKind::Network(network), Host::Address(address)) => network.contains(*address),
            _ => false,
        };
        scheme && host && port
    }

    /// The entry as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `host[:port]`, where host may be `[v6]`, `[v6]/len` or `a.b.c.d/len`.
fn split_host_port(text: &str) -> Option<(&str, Option<&str>)> {
    if text.starts_with('[') {
        let close = text.find(']')?;
        let after = &text[close + 1..];
        // `[fd00::]/8` or `[fd00::]/8:443`
        let (prefix_end, rest) = match after.strip_prefix('/') {
            Some(tail) => {
                let digits = tail.find(|c: char| !c.is_ascii_digit()).unwrap_or(tail.len());
                (close + 2 + digits, &tail[digits..])
            }
            None => (close + 1, after),
        };
        return match rest {
            "" => Some((&text[..prefix_end], None)),
            _ => Some((&text[..prefix_end], Some(rest.strip_prefix(':')?))),
        };
    }
    match text.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Some((host, Some(port))),
        Some(_) => None,
        None => Some((text, None)),
    }
}

fn parse_host_pattern(host: &str) -> Option<HostPatternKind> {
    if host == "*" {
        return Some(HostPatternKind::Any);
    }
    if let Some(suffix) = host.strip_prefix("*.") {
        let suffix = suffix.trim_end_matches('.').to_ascii_lowercase();
        return is_dns_name(&suffix).then(|| HostPatternKind::Subdomains(format!(".{suffix}")));
    }
    if host.contains('/') || host.starts_with('[') || host.parse::<IpAddr>().is_ok() {
        return Network::parse(host).ok().map(HostPatternKind::Network);
    }
    let name = host.trim_end_matches('.');
    is_dns_name(name).then(|| HostPatternKind::Name(name.to_ascii_lowercase()))
}

fn parse_port_pattern(port: &str) -> Option<PortPattern> {
    match port.split_once("..") {
        Some((start, end)) => {
            let start: u16 = start.parse().ok()?;
            let end: u32 = end.parse().ok()?;
            (u32::from(start) < end && end <= 65536).then_some(PortPattern::Range(start, end))
        }
        None => {
            let port: u16 = port.parse().ok()?;
            Some(PortPattern::Range(port, u32::from(port) + 1))
        }
    }
}

/// Letters, digits, hyphens and dots, in labels of 1..=63 characters.
fn is_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(url_host: &str, scheme: Scheme, port: u16) -> Destination {
        Destination {
            scheme,
            host: Host::parse(url_host).expect("a host"),
            port,
        }
    }

    fn allows(pattern: &str, destination: &Destination) -> bool {
        HostPattern::parse(pattern).expect(pattern).matches(destination)
    }

    #[test]
    fn names_match_exactly_and_default_ports_follow_the_scheme() {
        let api = to("api.example.com", Scheme::Https, 443);
        assert!(allows("https://api.example.com", &api));
        assert!(allows("https://API.example.com.", &api));
        assert!(!allows("http://api.example.com", &api));
        assert!(!allows("https://api.example.com:8443", &api));
        assert!(!allows("https://example.com", &api));
        assert!(!allows(
            "https://api.example.com",
            &to("api.example.com.evil.net", Scheme::Https, 443)
        ));
        assert!(allows("*://api.example.com:443", &api));
        assert!(allows(
            "https://api.example.com:*",
            &to("api.example.com", Scheme::Https, 9)
        ));
    }

    #[test]
    fn subdomain_wildcards_do_not_cover_the_domain_or_lookalikes() {
        let pattern = "https://*.example.com:8443";
        assert!(allows(pattern, &to("a.example.com", Scheme::Https, 8443)));
        assert!(allows(pattern, &to("a.b.example.com", Scheme::Https, 8443)));
        assert!(!allows(pattern, &to("example.com", Scheme::Https, 8443)));
        assert!(!allows(pattern, &to("badexample.com", Scheme::Https, 8443)));
        assert!(!allows(pattern, &to("a.example.com", Scheme::Https, 443)));
    }

    #[test]
    fn addresses_and_ranges_match_addresses_only() {
        assert!(allows("http://127.0.0.1:*", &to("127.0.0.1", Scheme::Http, 8081)));
        assert!(!allows("http://127.0.0.1:*", &to("localhost", Scheme::Http, 8081)));
        assert!(allows("http://10.0.0.0/8:80", &to("10.1.2.3", Scheme::Http, 80)));
        assert!(!allows("http://10.0.0.0/8:80", &to("11.1.2.3", Scheme::Http, 80)));
        assert!(allows("http://[::1]:8080", &to("[::1]", Scheme::Http, 8080)));
        assert!(allows("https://[fd00::]/8", &to("[fd12::1]", Scheme::Https, 443)));
        // An IPv4-mapped IPv6 address is its IPv4 address: it cannot slip past a v4 rule either way.
        assert!(allows(
            "http://127.0.0.1:80",
            &to("[::ffff:127.0.0.1]", Scheme::Http, 80)
        ));
    }

    #[test]
    fn port_ranges_exclude_their_end() {
        let pattern = "http://svc.local:8000..8002";
        assert!(allows(pattern, &to("svc.local", Scheme::Http, 8000)));
        assert!(allows(pattern, &to("svc.local", Scheme::Http, 8001)));
        assert!(!allows(pattern, &to("svc.local", Scheme::Http, 8002)));
    }

    #[test]
    fn any_host_and_any_scheme() {
        assert!(allows("*://*:*", &to("anything.example", Scheme::Http, 1)));
        assert!(allows("https://*", &to("10.0.0.1", Scheme::Https, 443)));
        assert!(!allows("https://*", &to("10.0.0.1", Scheme::Http, 443)));
    }

    #[test]
    fn malformed_patterns_say_why() {
        let message = |text: &str| HostPattern::parse(text).unwrap_err().to_string();
        assert!(message("example.com").contains("needs a scheme"));
        assert!(message("ftp://example.com").contains("not supported"));
        assert!(message("https://example.com/path").contains("without a path"));
        assert!(message("*://example.com").contains("needs a port"));
        assert!(message("https://example.com:http").contains("the port must be"));
        assert!(message("https://exa mple.com").contains("malformed host"));
        assert!(message("http://10.0.0.0/40:80").contains("malformed host"));
        assert!(message("http://host:9..3").contains("the port must be"));
    }

    #[test]
    fn networks_contain_their_addresses() {
        let private = Network::parse("10.0.0.0/8").unwrap();
        assert!(private.contains("10.255.0.1".parse().unwrap()));
        assert!(!private.contains("11.0.0.1".parse().unwrap()));
        assert!(private.contains("::ffff:10.0.0.1".parse().unwrap()));
        let odd = Network::parse("192.168.0.0/23").unwrap();
        assert!(odd.contains("192.168.1.200".parse().unwrap()));
        assert!(!odd.contains("192.168.2.1".parse().unwrap()));
        assert!(
            Network::parse("127.0.0.1")
                .unwrap()
                .contains("127.0.0.1".parse().unwrap())
        );
        assert!(
            Network::parse("[fe80::]/10")
                .unwrap()
                .contains("fe80::1".parse().unwrap())
        );
        assert!(
            Network::parse("0.0.0.0/0")
                .unwrap()
                .contains("8.8.8.8".parse().unwrap())
        );
        assert!(Network::parse("10.0.0.0/33").is_err());
        assert!(Network::parse("localhost").is_err());
    }

    #[test]
    fn hosts_parse_from_uris() {
        assert_eq!(Host::parse("Example.COM."), Some(Host::Name("example.com".into())));
        assert_eq!(Host::parse("[::1]"), Some(Host::Address("::1".parse().unwrap())));
        assert_eq!(
            Host::parse("[::ffff:10.0.0.1]"),
            Some(Host::Address("10.0.0.1".parse().unwrap()))
        );
        assert_eq!(Host::parse(""), None);
        assert_eq!(Host::parse("a b"), None);
    }
}
