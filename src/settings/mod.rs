//! Module `settings` (see the module map in lib.rs).
