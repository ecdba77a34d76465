//! Module `deid` (see the module map in lib.rs).
