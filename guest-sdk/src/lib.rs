//! Write wasm-reconciler plugins: Kubernetes reconcile logic compiled to WebAssembly components.
//!
//! A plugin is a pure function from what the host observed (a [`WorldView`]) to what should be (an
//! [`Outcome`]). The host does every API call: informers, the work queue, server-side apply of
//! children, pruning, status, conditions, events and finalizers. Implement [`Reconciler`] and export it
//! with [`export_reconciler!`]:
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//! use serde::Deserialize;
//! use wasm_reconciler_sdk::{Condition, ControllerSpec, Error, Gvk, Outcome, Reconciler, WorldView};
//!
//! #[derive(Deserialize)]
//! struct Greeting {
//!     spec: GreetingSpec,
//! }
//!
//! #[derive(Deserialize)]
//! struct GreetingSpec {
//!     message: String,
//! }
//!
//! pub struct GreetingReconciler;
//!
//! impl Reconciler for GreetingReconciler {
//!     fn describe() -> ControllerSpec {
//!         ControllerSpec::new(Gvk::new("example.com", "v1", "Greeting")).owns_kind::<ConfigMap>()
//!     }
//!
//!     fn reconcile(view: WorldView) -> Result<Outcome, Error> {
//!         let greeting: Greeting = view.primary()?;
//!         let config_map = ConfigMap {
//!             metadata: ObjectMeta { name: Some(view.name().to_owned()), ..ObjectMeta::default() },
//!             data: Some([("message".to_owned(), greeting.spec.message)].into()),
//!             ..ConfigMap::default()
//!         };
//!         Ok(Outcome::new()
//!             .child(&config_map)
//!             .condition(Condition::status_true("Ready", "Written", "the ConfigMap is desired")))
//!     }
//! }
//!
//! wasm_reconciler_sdk::export_reconciler!(GreetingReconciler);
//! ```
//!
//! Build the component with `cargo build --target wasm32-wasip2 --profile wasm-release` (see the crate
//! README for the profile). Natively the same code compiles and runs, so reconcile logic is unit-tested
//! with plain `cargo test`; host calls are then served by a [`native::NativeHost`].

#![warn(missing_docs)]

#[doc(hidden)]
#[allow(
    unsafe_code,
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    clippy::all
)]
pub mod bindings;
#[doc(hidden)]
#[allow(
    unsafe_code,
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    clippy::all
)]
pub mod bindings_v0_2;
#[doc(hidden)]
#[allow(
    unsafe_code,
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    clippy::all
)]
pub mod bindings_v0_3;
#[doc(hidden)]
pub mod component;
mod error;
mod head;
pub mod host;
pub mod http;
mod meta;
#[cfg(not(target_arch = "wasm32"))]
pub mod native;
mod outcome;
pub mod variables;
pub mod wire;
mod world_view;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
#[cfg(doctest)]
#[doc = include_str!("../../docs/plugin-guide.md")]
struct PluginGuideExamples;

pub use error::Error;
pub use meta::ObjectMeta;
pub use outcome::{Decided, Outcome, Undecided};
pub use wasm_reconciler_contract::{Condition, ConditionStatus, ControllerSpec, Event, EventType, Gvk};
pub use world_view::{ObservedChild, WorldView};

/// A plugin's reconcile logic. Implement it on a unit struct and export it with [`export_reconciler!`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not implement `wasm_reconciler_sdk::Reconciler`",
    label = "the type exported as a plugin must implement `Reconciler`",
    note = "add `impl wasm_reconciler_sdk::Reconciler for {Self} {{ fn describe() ... fn reconcile(..) ... }}`"
)]
pub trait Reconciler {
    /// What this plugin reconciles. Called once when the host loads the plugin; it must depend on nothing
    /// but the plugin itself.
    fn describe() -> ControllerSpec;

    /// The desired outcome for one primary object. Must be a pure function of `view` and what
    /// [`host`] reads return: the host calls it again whenever anything it read changes, and retries
    /// with backoff when it returns an error.
    fn reconcile(view: WorldView) -> Result<Outcome, Error>;
}

/// Exports a [`Reconciler`] as the plugin's implementation of the contract.
///
/// Call it once per plugin crate, at the crate root or in any module. In a `wasm32` build it generates
/// the component exports; in a native build it only checks that the type implements [`Reconciler`], so
/// the same crate builds for unit tests.
///
/// `export_reconciler!(T)` builds against contract 0.1 (`wasm-reconciler:plugin@0.1.0`), which every host
/// serves. A plugin that sends HTTP requests ([`http`]) or reads [`variables`] builds against contract 0.2
/// with `export_reconciler!(T, contract = "0.2")`; its host must serve 0.2 and grant it hosts and variables in
/// its settings. `export_reconciler!(T, contract = "0.3")` builds against contract 0.3: 0.2 with the view lent
/// rather than handed over, so [`WorldView::children_containing`] compares children in the host and hands over only
/// their names, and children made from a base ([`Outcome::base`], [`Outcome::children_named_from`]) cross once per
/// base. The plugin code is the same for every version.
///
/// ```
/// use wasm_reconciler_sdk::{ControllerSpec, Error, Gvk, Outcome, Reconciler, WorldView};
///
/// pub struct Noop;
///
/// impl Reconciler for Noop {
///     fn describe() -> ControllerSpec {
///         ControllerSpec::new(Gvk::new("example.com", "v1", "Widget"))
///     }
///     fn reconcile(_view: WorldView) -> Result<Outcome, Error> {
///         Ok(Outcome::new().leave_children_alone())
///     }
/// }
///
/// wasm_reconciler_sdk::export_reconciler!(Noop);
/// ```
///
/// A type that does not implement the trait is a compile error pointing at it:
///
/// ```compile_fail
/// pub struct NotAPlugin;
/// wasm_reconciler_sdk::export_reconciler!(NotAPlugin);
/// ```
#[macro_export]
macro_rules! export_reconciler {
    ($reconciler:ty) => {
        $crate::export_reconciler!($reconciler, contract = "0.1");
    };
    ($reconciler:ty, contract = "0.1") => {
        const _: fn() = $crate::component::assert_reconciler::<$reconciler>;

        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code)]
        const _: () = {
            struct WasmReconcilerComponent;

            impl $crate::bindings::exports::wasm_reconciler::plugin::controller::Guest for WasmReconcilerComponent {
                fn describe() -> $crate::bindings::wasm_reconciler::plugin::types::ControllerSpec {
                    $crate::component::describe::<$reconciler>()
                }

                fn reconcile(
                    view: $crate::bindings::wasm_reconciler::plugin::types::WorldView,
                ) -> ::core::result::Result<
                    $crate::bindings::wasm_reconciler::plugin::types::Outcome,
                    ::std::string::String,
                > {
                    $crate::component::reconcile::<$reconciler>(view)
                }
            }

    $crate::bindings::export_component!(WasmReconcilerComponent with_types_in $crate::bindings);
        };
    };
    ($reconciler:ty, contract = "0.2") => {
        const _: fn() = $crate::component::assert_reconciler::<$reconciler>;

        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code)]
        const _: () = {
            struct WasmReconcilerComponent;

            impl $crate::bindings_v0_2::exports::wasm_reconciler::plugin0_2_0::controller::Guest
                for WasmReconcilerComponent
            {
                fn describe() -> $crate::bindings::wasm_reconciler::plugin::types::ControllerSpec {
                    $crate::component::describe::<$reconciler>()
                }

                fn reconcile(
                    view: $crate::bindings::wasm_reconciler::plugin::types::WorldView,
                ) -> ::core::result::Result<
                    $crate::bindings::wasm_reconciler::plugin::types::Outcome,
                    ::std::string::String,
                > {
                    $crate::component::reconcile::<$reconciler>(view)
                }
            }

    $crate::bindings_v0_2::export_component_v0_2!(WasmReconcilerComponent with_types_in $crate::bindings_v0_2);
        };
    };
    ($reconciler:ty, contract = "0.3") => {
        const _: fn() = $crate::component::assert_reconciler::<$reconciler>;

        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code)]
        const _: () = {
            struct WasmReconcilerComponent;

            impl $crate::bindings_v0_3::exports::wasm_reconciler::plugin0_3_0::controller::Guest
                for WasmReconcilerComponent
            {
                fn describe() -> $crate::bindings::wasm_reconciler::plugin::types::ControllerSpec {
                    $crate::component::describe::<$reconciler>()
                }

                fn reconcile(
                    view: &$crate::bindings_v0_3::wasm_reconciler::plugin0_3_0::view::WorldView,
                ) -> ::core::result::Result<
                    $crate::bindings_v0_3::exports::wasm_reconciler::plugin0_3_0::controller::Outcome,
                    ::std::string::String,
                > {
                    $crate::component::reconcile_v0_3::<$reconciler>(view)
                }
            }

    $crate::bindings_v0_3::export_component_v0_3!(WasmReconcilerComponent with_types_in $crate::bindings_v0_3);
        };
    };
    ($reconciler:ty, contract = $other:literal) => {
        ::core::compile_error!(::core::concat!(
            "wasm-reconciler-sdk builds plugins against contract \"0.1\", \"0.2\" or \"0.3\", not ",
            $other
        ));
    };
}
