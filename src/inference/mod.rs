//! Module `inference` (see the module map in lib.rs).
