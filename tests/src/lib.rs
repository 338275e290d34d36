//! End-to-end tests live in `all/`.
