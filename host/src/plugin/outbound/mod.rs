//! Outbound HTTP granted to a plugin (contract 0.2): the allowlist and blocked networks its settings name, the
//! `wasi:http` hooks that enforce them on every request, the connection the host makes for an allowed request,
//! and the clock that keeps time blocked on I/O out of the plugin's deadline.
//!
//! Nothing is allowed by default. A request is checked when the plugin sends it: its scheme, host and port
//! against `allowedOutboundHosts` ([`HostPattern`]), then every address its host resolves to against
//! `blockedNetworks`; the host connects only to an address it checked, so neither a redirect (a new request,
//! checked again) nor a DNS answer can lead anywhere the settings do not allow. A refused request fails inside
//! the plugin with `http-request-denied`, sends nothing, is logged in the reconcile's span and counted.

mod connect;
mod hooks;
mod io_clock;
mod pattern;
mod timed_io;

use std::net::IpAddr;

use prometheus_client::metrics::counter::Counter;

pub(crate) use hooks::OutboundHooks;
pub(crate) use io_clock::{IoBudgetExhausted, IoClock};
pub use pattern::{Destination, Host, HostPattern, Network, PatternError, Scheme};
pub(crate) use timed_io::add_timed_io_to_linker;

/// Where a plugin may send HTTP requests: nowhere unless its settings say so.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboundPolicy {
    /// `allowedOutboundHosts`: a request must match one of these.
    pub allowed: Vec<HostPattern>,
    /// `blockedNetworks`: no request may reach an address in one of these, whatever name it was sent to.
    pub blocked: Vec<Network>,
}

impl OutboundPolicy {
    /// The first allowlist entry `destination` matches, if any.
    pub fn allowing(&self, destination: &Destination) -> Option<&HostPattern> {
        self.allowed.iter().find(|pattern| pattern.matches(destination))
    }

    /// The first blocked network holding `address`, if any.
    pub fn blocking(&self, address: IpAddr) -> Option<&Network> {
        self.blocked.iter().find(|network| network.contains(address))
    }

    /// True when the plugin may send no request at all.
    pub fn denies_everything(&self) -> bool {
        self.allowed.is_empty()
    }
}

/// Counters of a plugin's outbound requests by result, as `wasm_reconciler_outbound_requests_total` exposes
/// them. Cheap to clone; clones count into the same series. The default counts into series no registry shows.
#[derive(Debug, Clone, Default)]
pub struct OutboundCounters {
    /// Requests that got a response (of any status).
    pub sent: Counter,
    /// Requests refused before anything was sent: not allowed, or resolving to a blocked network.
    pub denied: Counter,
    /// Allowed requests that failed: connection refused, timeout, response over the size limit, budget spent.
    pub failed: Counter,
    /// Of the requests that got a successful (2xx) response, those whose method may change something (neither GET,
    /// HEAD nor OPTIONS). No metric shows it: `plugin check` reads it to tell a reconcile that changed the outside
    /// world.
    pub writes: Counter,
}
