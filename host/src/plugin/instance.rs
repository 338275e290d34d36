//! A pre-instantiated plugin of either contract version, and its two calls: the same records cross both, only the
//! linker (what the plugin may import) and the export's version differ.

use wasmtime::Store;

use super::bindings::v0_1::wasm_reconciler::plugin::types::{ControllerSpec, Outcome, WorldView};
use super::bindings::{v0_1, v0_2};
use super::call::CallState;
use super::contract::Contract;

/// A plugin ready to be instantiated, per contract version.
#[derive(Clone)]
pub(crate) enum PluginPre {
    /// Contract 0.1.
    V0_1(v0_1::ReconcilerPre<CallState>),
    /// Contract 0.2.
    V0_2(v0_2::ReconcilerPre<CallState>),
}

/// One instance of a plugin.
pub(crate) enum PluginInstance {
    /// Contract 0.1.
    V0_1(v0_1::Reconciler),
    /// Contract 0.2.
    V0_2(v0_2::Reconciler),
}

impl PluginPre {
    /// The contract version it was built against.
    pub(crate) fn contract(&self) -> Contract {
        match self {
            Self::V0_1(_) => Contract::V0_1,
            Self::V0_2(_) => Contract::V0_2,
        }
    }

    /// A fresh instance in `store`.
    pub(crate) fn instantiate(&self, store: &mut Store<CallState>) -> wasmtime::Result<PluginInstance> {
        Ok(match self {
            Self::V0_1(pre) => PluginInstance::V0_1(pre.instantiate(store)?),
            Self::V0_2(pre) => PluginInstance::V0_2(pre.instantiate(store)?),
        })
    }
}

impl PluginInstance {
    /// `describe()`.
    pub(crate) fn call_describe(&self, store: &mut Store<CallState>) -> wasmtime::Result<ControllerSpec> {
        match self {
            Self::V0_1(instance) => instance.wasm_reconciler_plugin_controller().call_describe(store),
            Self::V0_2(instance) => instance.wasm_reconciler_plugin0_2_0_controller().call_describe(store),
        }
    }

    /// `reconcile(view)`.
    pub(crate) fn call_reconcile(
        &self,
        store: &mut Store<CallState>,
        view: &WorldView,
    ) -> wasmtime::Result<Result<Outcome, String>> {
        match self {
            Self::V0_1(instance) => instance.wasm_reconciler_plugin_controller().call_reconcile(store, view),
            Self::V0_2(instance) => instance
                .wasm_reconciler_plugin0_2_0_controller()
                .call_reconcile(store, view),
        }
    }
}
