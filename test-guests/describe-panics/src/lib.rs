//! A test plugin whose `describe()` panics: loading it must fail with the panic message.

#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../wit",
    world: "reconciler",
});

use exports::wasm_reconciler::plugin::controller::Guest;
use wasm_reconciler::plugin::types::{ControllerSpec, Outcome, WorldView};

struct DescribePanics;

impl Guest for DescribePanics {
    fn describe() -> ControllerSpec {
        panic!("describe is broken on purpose")
    }

    fn reconcile(_view: WorldView) -> Result<Outcome, String> {
        Err("unreachable: describe never succeeds".into())
    }
}

// Exported only in the component: native cdylib linkers cannot take WIT export names.
#[cfg(target_arch = "wasm32")]
export!(DescribePanics);
