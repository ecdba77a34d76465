//! Module `guard` (see the module map in lib.rs).
