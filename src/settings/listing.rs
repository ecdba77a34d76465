//! What `phiguard settings list` shows: every setting's effective value with the automatic
//! ones worked out (`auto (256)`, never a blank), its source and its description, as a
//! table that fits the terminal, as JSON, and as the Markdown reference `docs/settings.md`.
//!
//! Why here and not in the CLI: the values shown must be the values the service uses, so
//! the automatic ones are resolved next to the accessors that resolve them at start-up
//! ([`Settings::high_watermark`], [`Settings::request_timeout`], …), and the reference page
//! is rendered from the same [`TABLE`] so that it cannot drift from the code.

use serde::Serialize;

use super::table::Empty;
use super::{Def, SettingSource, Settings, Value, TABLE};
use crate::settings::keys;

/// One setting as listed.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    /// Dotted key.
    pub key: &'static str,
    /// The `PHIGUARD_*` variable.
    pub env: &'static str,
    /// OpenMed's variable for the same setting, if any.
    pub alias: Option<&'static str>,
    /// The effective value as text: never empty (`auto (…)`, `none`, `(secret)`).
    pub value: String,
    /// Whether the value was worked out rather than set (an empty setting's automatic value).
    pub auto: bool,
    /// Where the value came from.
    pub source: SettingSource,
    /// The default as text: never empty (what an empty default means).
    pub default: String,
    /// The kind's name (`int`, `float`, `bool`, `enum`, `string`, `list`).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The rule in words.
    pub rule: String,
    /// One line saying what the setting does.
    pub description: &'static str,
    /// Takes effect only after a restart.
    pub restart: bool,
    /// Never shown, never written to `settings.toml`.
    pub secret: bool,
}

/// Every setting of `s`, in table order.
pub fn entries(s: &Settings) -> Vec<Entry> {
    TABLE.iter().map(|def| entry(s, def)).collect()
}

fn entry(s: &Settings, def: &'static Def) -> Entry {
    let (value, auto) = effective(s, def);
    Entry {
        key: def.key,
        env: def.env,
        alias: def.alias,
        value,
        auto,
        source: s.source(def.key),
        default: default_text(def),
        kind: def.kind.type_name(),
        rule: def.kind.rule(),
        description: def.description,
        restart: def.restart,
        secret: def.secret,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Unset => true,
        Value::Str(s) => s.is_empty(),
        Value::List(l) => l.is_empty(),
        _ => false,
    }
}

/// The default as listed: the text, or what an empty default means.
fn default_text(def: &Def) -> String {
    match (def.default, def.empty) {
        ("", Some(Empty::Auto(how))) => format!("auto ({how})"),
        ("", Some(Empty::Means(words))) => words.to_string(),
        ("", None) => "(empty)".into(),
        (d, _) => d.to_string(),
    }
}

/// The effective value as text, and whether it was worked out automatically.
fn effective(s: &Settings, def: &Def) -> (String, bool) {
    let v = s.value(def.key);
    if !is_empty(v) {
        if def.secret {
            return ("(secret)".into(), false);
        }
        return match resolved_word(def.key, &v.to_string()) {
            Some(shown) => (shown, true),
            None => (v.to_string(), false),
        };
    }
    match (resolved_empty(s, def.key), def.empty) {
        (Some(n), _) => (format!("auto ({n})"), true),
        (None, Some(Empty::Auto(how))) => (format!("auto ({how})"), true),
        (None, Some(Empty::Means(words))) => (words.to_string(), false),
        (None, None) => ("(empty)".into(), false),
    }
}

/// The number an empty setting resolves to, where the service works one out at start-up.
fn resolved_empty(s: &Settings, key: &str) -> Option<String> {
    match key {
        "admission.high_watermark" => Some(s.high_watermark().to_string()),
        "admission.low_watermark" => Some(s.low_watermark().to_string()),
        "timeouts.request_timeout_seconds" => Some(match s.request_timeout() {
            Some(t) => format!(
                "{} s, profile {}",
                t.as_secs_f64(),
                s.get(keys::TIMEOUTS_PROFILE)
            ),
            None => "off".into(),
        }),
        // As `runtime::build_engine` sizes the worker pool.
        "models.inference_threads" => Some(
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .to_string(),
        ),
        _ => None,
    }
}

/// A word value that stands for a choice made at start-up (`auto` device, `int8` on a CPU
/// without the instructions), shown with what it comes to on this machine and build.
fn resolved_word(key: &str, value: &str) -> Option<String> {
    match (key, value) {
        ("models.device", "auto") => Some(
            match (cfg!(feature = "metal"), cfg!(feature = "cuda")) {
                (false, false) => "auto (cpu)",
                (true, false) => "auto (metal if it opens, else cpu)",
                (false, true) => "auto (cuda if it opens, else cpu)",
                (true, true) => "auto (metal or cuda if one opens, else cpu)",
            }
            .to_string(),
        ),
        ("models.precision", "int8") => Some(match phiguard_kernels::Int8Weights::kernel() {
            Some("AVX2") => "int8 (AVX2 here: 7-bit weights)".into(),
            Some(kernel) => format!("int8 ({kernel} here)"),
            None => "int8 (f32 here: this CPU has neither AVX-512 VNNI nor AVX2)".into(),
        }),
        _ => None,
    }
}

/// The plain table for a terminal `width` columns wide: per setting, one line with key,
/// value and source, then the description and the variables, indented, wrapped to the width.
/// Values too long for their column end in `…`; a note under the table says where to read
/// them whole.
pub fn render_table(entries: &[Entry], width: usize) -> String {
    const SOURCE: usize = 7; // "default"
    const INDENT: &str = "    ";
    let width = width.max(60);
    let key_w = entries
        .iter()
        .map(|e| e.key.chars().count())
        .max()
        .unwrap_or(3)
        .max(3);
    let value_w = width.saturating_sub(key_w + SOURCE + 4).max(12);
    let mut out = format!("{:<key_w$}  {:<value_w$}  SOURCE\n", "KEY", "VALUE");
    let mut cut = false;
    for e in entries {
        let (value, was_cut) = ellipsize(&e.value, value_w);
        cut |= was_cut;
        let source = format!("{:?}", e.source).to_lowercase();
        out.push_str(&format!("{:<key_w$}  {value:<value_w$}  {source}\n", e.key));
        let body = width - INDENT.len();
        for line in wrap(e.description, body) {
            out.push_str(&format!("{INDENT}{line}\n"));
        }
        let mut vars = match e.alias {
            Some(a) => format!("env {} or {a}", e.env),
            None => format!("env {}", e.env),
        };
        if e.restart {
            vars.push_str("; applies after a restart");
        }
        for line in wrap(&vars, body) {
            out.push_str(&format!("{INDENT}{line}\n"));
        }
    }
    if cut {
        out.push('\n');
        let note = "Values ending in … are cut to fit: `phiguard settings get KEY` or \
                    `phiguard settings list --json` shows them whole.";
        for line in wrap(note, width) {
            out.push_str(&format!("{line}\n"));
        }
    }
    out
}

/// `text` cut to `max` characters with a final `…`, and whether it was cut.
fn ellipsize(text: &str, max: usize) -> (String, bool) {
    if text.chars().count() <= max {
        return (text.to_string(), false);
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    (format!("{kept}…"), true)
}

/// Greedy word wrap at `width` characters; a word longer than the width gets its own line.
/// (Written here rather than pulling in `textwrap`: these are single-line ASCII descriptions.)
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let needed = if line.is_empty() {
            word.chars().count()
        } else {
            line.chars().count() + 1 + word.chars().count()
        };
        if needed > width && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The command that writes `docs/settings.md`.
pub const DOCS_COMMAND: &str = "cargo run -q -- settings docs > docs/settings.md";

/// The settings reference, `docs/settings.md`, rendered from [`TABLE`] (defaults only,
/// nothing from this machine).
pub fn render_markdown() -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "<!-- Generated from src/settings/table.rs by `{DOCS_COMMAND}`; do not edit. -->\n"
    ));
    out.push_str(
        "# Settings

Every setting phiguard reads, from the one table in `src/settings/table.rs`. Each has a dotted
key, a `PHIGUARD_*` environment variable and, where OpenMed 3.1 has the same setting, its
`OPENMED_SERVICE_*` / `OPENMED_PROFILE` name, accepted with the same default and rule.

- **Precedence:** flags of `phiguard serve` (`--host`, `--port`, `--ui`) > environment >
  `settings.toml` > default. A value set by the environment or a flag is locked: the
  dashboard, `PUT /admin/settings` and `phiguard settings set` refuse to change it, naming
  the variable (its OpenMed name where that is the one set) or the flag. A variable overrides
  the file's value without removing it: saving any setting keeps every value the file holds.
  A variable set to the empty string counts as unset, whatever its rule (`PHIGUARD_PORT=`
  is the default port, as a blank value in a container's environment file means not set).
- **`settings.toml`** lives in the config directory (`<PHIGUARD_HOME>/config/`, or
  `~/.config/phiguard/` on Linux), written by the dashboard, the admin API and
  `phiguard settings set`; keys are grouped by their first segment (`[retry]`
  `max_attempts = 5`). Saving edits the file in place: only the keys that change are
  written (a changed value keeps its comment), a new key goes at the end of its `[group]`
  table (a new table after the last one), and comments, blank lines, the order of keys and
  the spelling of untouched values stay as the admin wrote them, as do a byte-order mark
  and CRLF line endings. A running server writes only the keys a change names into the file
  as it is at that moment, so an edit made since it started stays. A file that does not
  parse is never written over: the change is refused (`409` from the admin API, exit 2
  from the command line) until the file is fixed. The file is replaced
  atomically (a temporary file renamed over it, mode 0600).
- **A bad value** stops start-up with a message naming the variable and its rule; through the
  admin API it is refused (422, one entry per bad field) and nothing is applied. So is a
  change the next start would refuse, by the same rule (`security.auth` off on a
  non-loopback `server.host`, a non-loopback host without `PHIGUARD_AUTH_TOKEN`, a
  `models.default` that names no installed model or alias of one, a `models.aliases` entry
  that is not `requested=installed` or maps to a model that is not installed, a
  `models.served` name that is neither installed nor an alias), and a
  `security.trusted_hosts` that would not trust the `Host` of the request making the change.
  `phiguard settings set` refuses the same (exit 2, the setting named, nothing written),
  asking the model store of `PHIGUARD_HOME` what is installed; `phiguard models rm` refuses a
  model that `models.default`, an alias or `models.served` names (exit 2), as
  `DELETE /admin/models/{id}` does (409).
- **Live:** a change through the dashboard or `PUT /admin/settings` applies to the running
  server at once, except for settings marked *restart*; `phiguard settings set` writes the
  file, which a server reads when it starts.
- **Secrets** (tokens, keys, the Redis URL) are read from the environment only, never written to
  `settings.toml` and never shown; one found in `settings.toml` stops start-up, naming its
  line and its variable. The service does not start with the same client and admin token, or
  with a token that is a placeholder of the deploy files (`replace-me-…`).
- `phiguard settings list` shows the effective values on this machine (`--json` for scripts),
  `phiguard settings get KEY` one value, `phiguard settings set KEY VALUE` writes
  `settings.toml`.
",
    );
    let mut group = "";
    for def in TABLE {
        if def.group() != group {
            group = def.group();
            out.push_str(&format!(
                "\n## {group}\n\n| key | variable | OpenMed name | default | rule | description |\n|---|---|---|---|---|---|\n"
            ));
        }
        let alias = def.alias.map(|a| format!("`{a}`")).unwrap_or_default();
        let default = if def.default.is_empty() {
            format!("*{}*", cell(&default_text(def)))
        } else {
            format!("`{}`", def.default)
        };
        let mut description = cell(def.description);
        if def.restart && !def.secret {
            description.push_str(" (*restart*)");
        }
        if def.secret {
            description.push_str(" (*secret, environment only*)");
        }
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} | {} |\n",
            def.key,
            def.env,
            alias,
            default,
            cell(&def.kind.rule()),
            description,
        ));
    }
    out
}

/// Text for a Markdown table cell: `|` and `*` escaped.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('*', "\\*")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Home;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Settings {
        let dir = tempfile::tempdir().expect("tempdir");
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::load_from(&Home::at(dir.path()), |k| map.get(k).cloned()).expect("load")
    }

    fn value_of(entries: &[Entry], key: &str) -> String {
        entries
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.value.clone())
            .unwrap_or_else(|| panic!("no {key}"))
    }

    #[test]
    fn no_value_or_default_is_blank() {
        for e in entries(&Settings::defaults()) {
            assert!(!e.value.trim().is_empty(), "{} shows a blank value", e.key);
            assert!(
                !e.default.trim().is_empty(),
                "{} shows a blank default",
                e.key
            );
        }
    }

    #[test]
    fn automatic_values_are_worked_out() {
        let list = entries(&Settings::defaults());
        assert_eq!(value_of(&list, "admission.high_watermark"), "auto (256)");
        assert_eq!(value_of(&list, "admission.low_watermark"), "auto (128)");
        assert_eq!(
            value_of(&list, "timeouts.request_timeout_seconds"),
            "auto (300 s, profile prod)"
        );
        assert!(value_of(&list, "models.inference_threads").starts_with("auto ("));
        assert_eq!(value_of(&list, "models.max_resident"), "unlimited");
        let set = entries(&load(&[
            ("PHIGUARD_BATCH_MAX_QUEUE_SIZE", "100"),
            ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
        ]));
        assert_eq!(value_of(&set, "admission.high_watermark"), "auto (100)");
        assert_eq!(value_of(&set, "admission.low_watermark"), "auto (50)");
        assert_eq!(value_of(&set, "timeouts.request_timeout_seconds"), "0");
        let profile = entries(&load(&[("OPENMED_PROFILE", "test")]));
        assert_eq!(
            value_of(&profile, "timeouts.request_timeout_seconds"),
            "auto (60 s, profile test)"
        );
    }

    #[test]
    fn secrets_are_never_shown() {
        let list = entries(&load(&[("PHIGUARD_AUTH_TOKEN", "pg_do_not_show_me")]));
        let e = list
            .iter()
            .find(|e| e.key == "security.auth_token")
            .expect("row");
        assert_eq!(e.value, "(secret)");
        assert_eq!(e.source, SettingSource::Env);
        let json = serde_json::to_string(&list).expect("json");
        assert!(!json.contains("pg_do_not_show_me"));
        assert!(!render_table(&list, 100).contains("pg_do_not_show_me"));
    }

    #[test]
    fn the_table_fits_the_width_and_cuts_long_values() {
        let long =
            "a.example.org,b.example.org,c.example.org,d.example.org,e.example.org,f.example.org";
        let list = entries(&load(&[("PHIGUARD_TRUSTED_HOSTS", long)]));
        for width in [80, 100, 140] {
            let text = render_table(&list, width);
            for line in text.lines() {
                let n = line.chars().count();
                assert!(n <= width, "{n} > {width}: {line}");
            }
            let row = text
                .lines()
                .find(|l| l.starts_with("security.trusted_hosts "))
                .expect("row");
            assert!(row.contains("a.example.org,b.example.org,"), "{row}");
            assert_eq!(row.contains('…'), width < 140, "{row}");
            assert_eq!(text.contains("settings get KEY"), width < 140);
        }
        let text = render_table(&list, 100);
        assert!(text.contains("total attempts per model call, the first included"));
        assert!(
            text.contains("env PHIGUARD_RETRY_MAX_ATTEMPTS or OPENMED_SERVICE_RETRY_MAX_ATTEMPTS")
        );
    }

    #[test]
    fn wrap_and_ellipsize() {
        assert_eq!(wrap("a bb ccc dddd", 6), ["a bb", "ccc", "dddd"]);
        assert_eq!(
            wrap("averyveryverylongword x", 5),
            ["averyveryverylongword", "x"]
        );
        assert_eq!(ellipsize("abcdef", 4), ("abc…".to_string(), true));
        assert_eq!(ellipsize("abcd", 4), ("abcd".to_string(), false));
    }

    #[test]
    fn docs_settings_md_is_up_to_date() {
        let doc = include_str!("../../docs/settings.md");
        assert!(
            doc == render_markdown(),
            "docs/settings.md is out of date with src/settings/table.rs; regenerate it with `{DOCS_COMMAND}`"
        );
        for def in TABLE {
            assert!(doc.contains(&format!("| `{}` |", def.key)), "{}", def.key);
        }
    }
}
