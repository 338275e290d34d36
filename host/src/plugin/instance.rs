//! A pre-instantiated plugin of either contract version, and its two calls: the same records cross both, only the
//! linker (what the plugin may import) and the export's version differ.

use wasmtime::Store;

use super::WorldView;
use super::bindings::v0_1::wasm_reconciler::plugin::types::{ControllerSpec, Outcome};
use super::bindings::{v0_1, v0_2, v0_3};
use super::call::CallState;
use super::contract::Contract;
use super::view::LentView;

/// A plugin ready to be instantiated, per contract version.
#[derive(Clone)]
pub(crate) enum PluginPre {
    /// Contract 0.1.
    V0_1(v0_1::ReconcilerPre<CallState>),
    /// Contract 0.2.
    V0_2(v0_2::ReconcilerPre<CallState>),
    /// Contract 0.3.
    V0_3(v0_3::ReconcilerPre<CallState>),
}

/// One instance of a plugin.
pub(crate) enum PluginInstance {
    /// Contract 0.1.
    V0_1(v0_1::Reconciler),
    /// Contract 0.2.
    V0_2(v0_2::Reconciler),
    /// Contract 0.3.
    V0_3(v0_3::Reconciler),
}

/// A plugin's answer in the form of its contract version, before it is decoded.
pub(crate) enum Answer {
    /// Contract 0.1 or 0.2: every child as whole JSON text.
    Whole(Outcome),
    /// Contract 0.3: children that may share bases.
    Patched(v0_3::exports::wasm_reconciler::plugin0_3_0::controller::Outcome),
}

impl PluginPre {
    /// The contract version it was built against.
    pub(crate) fn contract(&self) -> Contract {
        match self {
            Self::V0_1(_) => Contract::V0_1,
            Self::V0_2(_) => Contract::V0_2,
            Self::V0_3(_) => Contract::V0_3,
        }
    }

    /// A fresh instance in `store`.
    pub(crate) fn instantiate(&self, store: &mut Store<CallState>) -> wasmtime::Result<PluginInstance> {
        Ok(match self {
            Self::V0_1(pre) => PluginInstance::V0_1(pre.instantiate(store)?),
            Self::V0_2(pre) => PluginInstance::V0_2(pre.instantiate(store)?),
            Self::V0_3(pre) => PluginInstance::V0_3(pre.instantiate(store)?),
        })
    }
}

impl PluginInstance {
    /// `describe()`.
    pub(crate) fn call_describe(&self, store: &mut Store<CallState>) -> wasmtime::Result<ControllerSpec> {
        match self {
            Self::V0_1(instance) => instance.wasm_reconciler_plugin_controller().call_describe(store),
            Self::V0_2(instance) => instance.wasm_reconciler_plugin0_2_0_controller().call_describe(store),
            Self::V0_3(instance) => instance.wasm_reconciler_plugin0_3_0_controller().call_describe(store),
        }
    }

    /// `reconcile(view)`: the view as a record (0.1, 0.2) or lent as a resource for the length of the call (0.3).
    pub(crate) fn call_reconcile(
        &self,
        store: &mut Store<CallState>,
        view: WorldView,
    ) -> wasmtime::Result<Result<Answer, String>> {
        let whole = |answer: Result<Outcome, String>| answer.map(Answer::Whole);
        match self {
            Self::V0_1(instance) => Ok(whole(
                instance
                    .wasm_reconciler_plugin_controller()
                    .call_reconcile(store, &super::types::world_view(view))?,
            )),
            Self::V0_2(instance) => Ok(whole(
                instance
                    .wasm_reconciler_plugin0_2_0_controller()
                    .call_reconcile(store, &super::types::world_view(view))?,
            )),
            Self::V0_3(instance) => {
                let lent = store.data_mut().table_mut().push(LentView::new(view))?;
                let borrowed = wasmtime::component::Resource::<LentView>::new_borrow(lent.rep());
                let answer = instance
                    .wasm_reconciler_plugin0_3_0_controller()
                    .call_reconcile(&mut *store, borrowed);
                store.data_mut().table_mut().delete(lent)?;
                Ok(answer?.map(Answer::Patched))
            }
        }
    }
}
