//! Variables for plugins built against contract 0.2 (`export_reconciler!(T, contract = "0.2")`): values the
//! plugin's settings name under `variables:`, each one key of a Kubernetes Secret the host reads for it.
//!
//! ```no_run
//! # fn main() -> Result<(), wasm_reconciler_sdk::Error> {
//! let api_key = wasm_reconciler_sdk::variables::get("api_key")?;
//! # let _ = api_key;
//! # Ok(())
//! # }
//! ```
//!
//! A value is a secret: send it where it is needed (a request header), never into a log line, an event, a
//! condition or status — the host keeps it out of everything it writes, but cannot see what a plugin does with
//! it. In a native build the installed [`NativeHost`](crate::native::NativeHost) answers.

use crate::Error;

/// The value of variable `name`; errors name the variable and its Secret, never a value.
pub fn get(name: &str) -> Result<String, Error> {
    backend::get(name).map_err(Error::msg)
}

#[cfg(target_arch = "wasm32")]
mod backend {
    //! The host's `variables` import.

    pub(super) fn get(name: &str) -> Result<String, String> {
        crate::bindings_v0_2::wasm_reconciler::plugin0_2_0::variables::get(name)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod backend {
    //! The installed native host.

    pub(super) fn get(name: &str) -> Result<String, String> {
        crate::native::backend::variable(name)
    }
}
