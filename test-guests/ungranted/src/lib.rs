//! A test plugin that sends an HTTP request but is exported for contract 0.1, which grants no outbound access:
//! the host must refuse to load it, naming the import.

use wasm_reconciler_sdk::http::Request;
use wasm_reconciler_sdk::{ControllerSpec, Error, Gvk, Outcome, Reconciler, WorldView};

/// The ungranted reconciler.
#[derive(Debug)]
pub struct Ungranted;

impl Reconciler for Ungranted {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(Gvk::new("tests.wasm-reconciler.io", "v1", "Ungranted"))
    }

    fn reconcile(_view: WorldView) -> Result<Outcome, Error> {
        Request::get("http://127.0.0.1:9/").send()?;
        Ok(Outcome::new().leave_children_alone())
    }
}

wasm_reconciler_sdk::export_reconciler!(Ungranted);
