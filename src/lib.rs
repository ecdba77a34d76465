//! phiguard: a local-first clinical de-identification service.
//!
//! Module map (dependencies point down this list, never up):
//!
//! | module | owns |
//! |---|---|
//! | [`settings`] | the one settings table, env → file → defaults, validation, persistence |
//! | [`guard`] | retry, budgets, circuit breakers, rate limits, admission, bulkheads, deadlines |
//! | [`detect`] | span and label types, rule recognizers, merging |
//! | [`eval`] | gold readers and accuracy scoring (span, character, leak rate) |
//! | [`deid`] | de-identification transforms, policies, the cutting of a result into stream lines |
//! | [`tables`] | CSV, TSV and JSON Lines by column: text through the engine, ids pseudonymised, dates shifted |
//! | [`fhir`] | FHIR resources, Bundles and NDJSON: profiles for structured elements, free text to the engine |
//! | [`inference`] | candle token classifiers, tokenization with offsets, windowing |
//! | [`models`] | the model catalog, local store, imports and downloads |
//! | [`engine`] | model backends keyed by id, worker threads, the guarded call path |
//! | [`cluster`] | the Redis-backed cluster-wide admission limit and its local fallback |
//! | [`server`] | the axum router, handlers, error envelope, auth, metrics, admin API |
//! | [`cli`] | the `phiguard` sub-commands |
//! | [`logging`] | the log subscriber (third-party crates capped) and the payload-free panic hook |

pub mod cli;
pub mod cluster;
pub mod deid;
pub mod detect;
pub mod engine;
pub mod eval;
pub mod fhir;
pub mod guard;
pub mod inference;
pub mod logging;
pub mod memory;
pub mod models;
pub mod runtime;
pub mod secrets;
pub mod server;
pub mod settings;
pub mod tables;
