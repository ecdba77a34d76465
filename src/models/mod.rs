//! Module `models` (see the module map in lib.rs).
