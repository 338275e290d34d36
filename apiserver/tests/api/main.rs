//! Integration tests of the API server through the `kube` client (in-process) and the real `kubectl`
//! (over HTTP), in one binary.

mod support;

mod crd;
mod crud;
mod durable;
mod faults;
mod gc;
mod kubectl;
mod real_server_parity;
mod server_side_apply;
mod watch;
