//! Black-box tests of the HTTP service: a real server on an ephemeral loopback port, time
//! from an injected manual clock.

#[path = "../common/mod.rs"]
mod common;
mod support;

mod admin;
mod errors;
mod fhir;
mod front;
mod guard;
mod hostile_clients;
mod lifecycle;
mod pii;
mod security;
