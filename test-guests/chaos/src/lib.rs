//! A test plugin that misbehaves on purpose, chosen by its configuration's `behaviour`:
//! `ok`, `loop`, `memory-bomb`, `panic`, `invalid-json`, `status-not-object`, `oversized`, `noisy`.
//!
//! Written against the raw bindings (not the SDK) so it can return bytes the SDK would never produce.

#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../wit",
    world: "reconciler",
});

use exports::wasm_reconciler::plugin::controller::Guest;
use wasm_reconciler::plugin::types::{ControllerSpec, Gvk, Outcome, WorldView};

struct Chaos;

fn outcome() -> Outcome {
    Outcome {
        children: None,
        status: Some(r#"{"behaved":true}"#.to_string()),
        conditions: vec![],
        events: vec![],
        requeue_after_ms: None,
        finalized: false,
    }
}

impl Guest for Chaos {
    fn describe() -> ControllerSpec {
        ControllerSpec {
            primary: Gvk {
                group: "test.wasm-reconciler.io".into(),
                version: "v1".into(),
                kind: "Chaos".into(),
            },
            owns: vec![Gvk {
                group: String::new(),
                version: "v1".into(),
                kind: "ConfigMap".into(),
            }],
            reads: vec![],
            finalizer: None,
            resync_seconds: None,
        }
    }

    fn reconcile(view: WorldView) -> Result<Outcome, String> {
        let config: serde_json::Value = serde_json::from_str(&view.config).map_err(|e| e.to_string())?;
        match config["behaviour"].as_str().unwrap_or("ok") {
            "ok" => Ok(outcome()),
            "loop" => loop {
                std::hint::black_box(());
            },
            "memory-bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1024 * 1024]);
                    std::hint::black_box(&hoard);
                }
            }
            "panic" => panic!("chaos guest panicked on purpose"),
            "invalid-json" => Ok(Outcome {
                children: Some(vec!["{\"apiVersion\": \"v1\", oops".into()]),
                ..outcome()
            }),
            "status-not-object" => Ok(Outcome {
                status: Some("[1, 2, 3]".into()),
                ..outcome()
            }),
            "oversized" => {
                let padding = "x".repeat(8 * 1024 * 1024);
                Ok(Outcome {
                    status: Some(format!(r#"{{"padding":"{padding}"}}"#)),
                    ..outcome()
                })
            }
            "noisy" => {
                for line in 0..5_000 {
                    println!("line {line} of a very chatty plugin");
                }
                Ok(outcome())
            }
            other => Err(format!("unknown behaviour {other:?}")),
        }
    }
}

// Exported only in the component: native cdylib linkers cannot take WIT export names.
#[cfg(target_arch = "wasm32")]
export!(Chaos);
