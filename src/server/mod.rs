//! Module `server` (see the module map in lib.rs).
