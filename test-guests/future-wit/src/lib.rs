//! A test plugin built against a future version of the contract (0.4.0): the host must refuse it.

#![allow(unsafe_code)]

wit_bindgen::generate!({
    inline: "
        package wasm-reconciler:plugin@0.4.0;

        interface controller {
            describe: func() -> string;
        }

        world reconciler {
            export controller;
        }
    ",
});

use exports::wasm_reconciler::plugin::controller::Guest;

struct FutureWit;

impl Guest for FutureWit {
    fn describe() -> String {
        "a contract from the future".into()
    }
}

// Exported only in the component: native cdylib linkers cannot take WIT export names.
#[cfg(target_arch = "wasm32")]
export!(FutureWit);
