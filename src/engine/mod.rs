//! Module `engine` (see the module map in lib.rs).
