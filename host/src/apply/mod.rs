//! From outcome to API writes: children by server-side apply with ownership and pruning, status with merged
//! conditions, events, finalizers. The planning parts are pure and tested with plain values; `writer` does I/O.

pub mod children;
pub mod events;
pub mod status;
pub mod writer;
