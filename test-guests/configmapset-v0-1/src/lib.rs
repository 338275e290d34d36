//! The `configmapset` example plugin exported against contract 0.1 instead of 0.3: the same logic, with the view
//! handed over whole and every desired child written out whole. The plugin-runtime benchmark times it beside the
//! example plugin to show what contract 0.3 changes.

pub use configmapset::ConfigMapSetReconciler;
