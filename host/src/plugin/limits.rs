//! Per-call sandbox limits and the store limiter that enforces the memory limit.

use std::time::Duration;

use wasmtime::ResourceLimiter;

/// Limits applied to every call into a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum linear memory of the plugin instance, in bytes.
    pub memory_bytes: usize,
    /// Wall-clock deadline for one call, not counting time a contract 0.2 plugin spends blocked on I/O (waiting
    /// for an HTTP response, reading its body, reading a variable), which `outbound_budget` bounds instead.
    pub deadline: Duration,
    /// Maximum total size of an outcome's JSON payloads, in bytes.
    pub max_outcome_bytes: usize,
    /// Bytes of guest stdout and of guest stderr kept per call; the rest is dropped.
    pub max_output_bytes: usize,
    /// Longest one outbound request may take, from sending it to its response headers (contract 0.2).
    pub outbound_timeout: Duration,
    /// Total time one call may spend blocked on I/O (contract 0.2); when it runs out the call is interrupted.
    pub outbound_budget: Duration,
    /// Largest response body an outbound request accepts, in bytes (contract 0.2).
    pub max_response_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 * 1024 * 1024,
            deadline: Duration::from_secs(1),
            max_outcome_bytes: 4 * 1024 * 1024,
            max_output_bytes: 64 * 1024,
            outbound_timeout: Duration::from_secs(10),
            outbound_budget: Duration::from_secs(30),
            max_response_bytes: 4 * 1024 * 1024,
        }
    }
}

/// Refuses memory growth past the limit and remembers that it did, so the failure that follows can be
/// reported as memory exhaustion rather than a generic trap.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    max_memory_bytes: usize,
    pub(crate) exhausted: bool,
}

/// Upper bound on table elements; plugins built by the SDK use a few hundred.
const MAX_TABLE_ELEMENTS: usize = 1_000_000;

impl MemoryLimiter {
    pub(crate) fn new(max_memory_bytes: usize) -> Self {
        Self {
            max_memory_bytes,
            exhausted: false,
        }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.max_memory_bytes {
            self.exhausted = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        // A component built from Rust instantiates a handful of core modules (the program, its adapter, shims).
        64
    }

    fn memories(&self) -> usize {
        16
    }

    fn tables(&self) -> usize {
        64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_within_the_limit_is_allowed() {
        let mut limiter = MemoryLimiter::new(1024);
        assert!(limiter.memory_growing(0, 1024, None).unwrap());
        assert!(!limiter.exhausted);
    }

    #[test]
    fn growth_past_the_limit_is_refused_and_remembered() {
        let mut limiter = MemoryLimiter::new(1024);
        assert!(!limiter.memory_growing(0, 1025, None).unwrap());
        assert!(limiter.exhausted);
    }
}
