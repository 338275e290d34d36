//! What a plugin's settings grant it beyond the sandbox (contract 0.2): where it may send HTTP requests, where its
//! variables come from, and the counters its requests are recorded in. A 0.1 plugin is granted nothing, whatever
//! its settings say: its linker has neither `wasi:http` nor `variables`.

use std::sync::Arc;

use super::outbound::{OutboundCounters, OutboundPolicy};
use super::variables::{NoVariables, VariableSource};

/// The grants of one plugin version. Cheap to clone. The default grants nothing.
#[derive(Clone)]
pub struct Grants {
    /// Where the plugin may send HTTP requests.
    pub outbound: Arc<OutboundPolicy>,
    /// Where its requests are counted.
    pub counters: OutboundCounters,
    /// Where its variables come from.
    pub variables: Arc<dyn VariableSource>,
}

impl Default for Grants {
    fn default() -> Self {
        Self {
            outbound: Arc::default(),
            counters: OutboundCounters::default(),
            variables: Arc::new(NoVariables),
        }
    }
}

impl std::fmt::Debug for Grants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grants")
            .field("outbound", &self.outbound)
            .finish_non_exhaustive()
    }
}
