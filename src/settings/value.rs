//! Setting kinds, their rules, and parsing from the textual form shared by environment
//! variables, the CLI and the settings file.

use serde::Serialize;
use std::fmt;

/// The type and validation rule of a setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// `true/false`, with OpenMed's spellings (`1 yes on enabled`, `0 no off disabled`).
    Bool,
    /// An integer in `[min, max]`.
    Int { min: i64, max: i64 },
    /// An integer in `[min, max]`, or empty for "unset".
    OptInt { min: i64, max: i64 },
    /// A finite float in `[min, max]`.
    Float { min: f64, max: f64 },
    /// A finite float in `[min, max]`, or empty for "unset".
    OptFloat { min: f64, max: f64 },
    /// One of a fixed set of words (case-insensitive).
    Enum(&'static [&'static str]),
    /// Any string.
    Str,
    /// A secret key: 64 hex digits (32 bytes), or empty for "generate one". A key of one
    /// repeated digit (all zeros) is refused: anyone could compute its hashes.
    Key,
    /// Comma-separated list.
    List,
    /// Comma-separated Host patterns; `*` alone is refused.
    Hosts,
    /// Comma-separated exact origins (`scheme://host[:port]`); `*` is refused.
    Origins,
    /// OpenMed keep-alive syntax: `30s`, `5m`, `1h30m`, `500ms`, a number of seconds,
    /// `never`/`forever`/`off`, or empty for "never".
    KeepAlive,
}

/// A text that is not a value of its kind ([`Kind::parse`]). It carries the kind, whose rule
/// is the message, and never the text: that may be a secret, or anything a caller typed.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[error("must be {}", .kind.rule())]
pub struct Invalid {
    /// The kind whose rule the text breaks.
    pub kind: Kind,
}

/// A parsed setting value.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    /// Unset optional value (JSON `null`).
    Unset,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string or enum word.
    Str(String),
    /// A list of strings.
    List(Vec<String>),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Unset => Ok(()),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
            Value::List(l) => f.write_str(&l.join(",")),
        }
    }
}

impl Kind {
    /// The rule in words, as shown next to an invalid value.
    pub fn rule(&self) -> String {
        match *self {
            Kind::Bool => "a boolean (true/false, 1/0, yes/no, on/off)".into(),
            Kind::Int { min, max } => format!("an integer from {min} to {max}"),
            Kind::OptInt { min, max } => format!("empty, or an integer from {min} to {max}"),
            Kind::Float { min, max } => format!("a number from {min} to {max}"),
            Kind::OptFloat { min, max } => format!("empty, or a number from {min} to {max}"),
            Kind::Enum(words) => format!("one of: {}", words.join(", ")),
            Kind::Str => "any text".into(),
            Kind::Key => "64 hex digits (32 random bytes, e.g. from `openssl rand -hex 32`), not one digit repeated".into(),
            Kind::List => "a comma-separated list".into(),
            Kind::Hosts => "comma-separated host names or *.domain patterns under a domain of two labels or more (not *, not *.tld)".into(),
            Kind::Origins => "comma-separated origins like http://localhost:3000 (not *)".into(),
            Kind::KeepAlive => "a duration like 30s, 5m, 1h30m, 500ms, seconds, or never".into(),
        }
    }

    /// The kind's name for the dashboard (`int`, `float`, `bool`, `enum`, `string`, `list`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Int { .. } | Kind::OptInt { .. } => "int",
            Kind::Float { .. } | Kind::OptFloat { .. } => "float",
            Kind::Enum(_) => "enum",
            Kind::Str | Kind::Key | Kind::KeepAlive => "string",
            Kind::List | Kind::Hosts | Kind::Origins => "list",
        }
    }

    /// The fixed choices of an enum.
    pub fn choices(&self) -> Option<&'static [&'static str]> {
        match self {
            Kind::Enum(w) => Some(w),
            _ => None,
        }
    }

    /// Parses the textual form.
    ///
    /// # Errors
    /// [`Invalid`], whose message is the rule in words, when the text does not satisfy it.
    pub fn parse(&self, raw: &str) -> Result<Value, Invalid> {
        let s = raw.trim();
        let bad = || Err(Invalid { kind: *self });
        match *self {
            Kind::Bool => match s.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" | "enabled" => Ok(Value::Bool(true)),
                "0" | "false" | "no" | "off" | "disabled" => Ok(Value::Bool(false)),
                _ => bad(),
            },
            Kind::Int { min, max } => match s.parse::<i64>() {
                Ok(v) if (min..=max).contains(&v) => Ok(Value::Int(v)),
                _ => bad(),
            },
            Kind::OptInt { .. } if s.is_empty() => Ok(Value::Unset),
            Kind::OptInt { min, max } => Kind::Int { min, max }.parse(s).or_else(|_| bad()),
            Kind::Float { min, max } => match s.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= min && v <= max => Ok(Value::Float(v)),
                _ => bad(),
            },
            Kind::OptFloat { .. } if s.is_empty() => Ok(Value::Unset),
            Kind::OptFloat { min, max } => Kind::Float { min, max }.parse(s).or_else(|_| bad()),
            Kind::Enum(words) => {
                let lower = s.to_ascii_lowercase();
                match words.iter().find(|w| **w == lower) {
                    Some(w) => Ok(Value::Str((*w).to_string())),
                    None => bad(),
                }
            }
            Kind::Str => Ok(Value::Str(s.to_string())),
            Kind::Key if s.is_empty() => Ok(Value::Str(String::new())),
            Kind::Key => {
                let hex = s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
                let lower = s.to_ascii_lowercase();
                let repeated = lower.bytes().all(|b| Some(b) == lower.bytes().next());
                if hex && !repeated {
                    Ok(Value::Str(lower))
                } else {
                    bad()
                }
            }
            Kind::List => Ok(Value::List(split_list(s))),
            Kind::Hosts => {
                let list = split_list(s);
                if !list.iter().all(|h| host_pattern_ok(h)) {
                    return bad();
                }
                Ok(Value::List(list))
            }
            Kind::Origins => {
                let list = split_list(s);
                let ok = list.iter().all(|o| {
                    (o.starts_with("http://") || o.starts_with("https://"))
                        && !o.contains('*')
                        && !o.trim_end_matches('/').contains(['?', '#'])
                });
                if ok {
                    Ok(Value::List(list))
                } else {
                    bad()
                }
            }
            Kind::KeepAlive => match parse_keep_alive(s) {
                Some(Some(secs)) => Ok(Value::Float(secs)),
                Some(None) => Ok(Value::Unset),
                None => bad(),
            },
        }
    }
}

/// A trusted-host entry: a host name or address, or `*.` and a domain of at least two labels.
/// A wildcard over a top-level domain (`*.com`) or everything (`*`) would make the Host check
/// (DNS-rebinding protection) a no-op; a public suffix of two labels (`*.co.uk`) cannot be
/// told from a domain without the public-suffix list, and stays the admin's responsibility.
fn host_pattern_ok(h: &str) -> bool {
    let plain = |n: &str| {
        !n.is_empty()
            && !n.contains(['*', '/', ' ', '?', '#', '@'])
            && !n.starts_with('.')
            && !n.ends_with('.')
            && !n.contains("..")
    };
    match h.strip_prefix("*.") {
        Some(domain) => plain(domain) && domain.contains('.') && !domain.starts_with('['),
        None => plain(h),
    }
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses OpenMed's keep-alive syntax. `Some(None)` means "no expiry"; `None` is invalid.
pub fn parse_keep_alive(s: &str) -> Option<Option<f64>> {
    let s = s.trim().to_ascii_lowercase();
    if s.is_empty()
        || matches!(
            s.as_str(),
            "off" | "none" | "never" | "forever" | "infinite" | "infinity"
        )
    {
        return Some(None);
    }
    if let Ok(v) = s.parse::<f64>() {
        return keep_alive_seconds(v);
    }
    let mut total = 0.0;
    let mut rest = s.as_str();
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (mult, len) = if rest.starts_with("ms") {
            (0.001, 2)
        } else {
            match rest.chars().next()? {
                's' => (1.0, 1),
                'm' => (60.0, 1),
                'h' => (3600.0, 1),
                'd' => (86400.0, 1),
                _ => return None,
            }
        };
        total += n * mult;
        rest = &rest[len..];
    }
    keep_alive_seconds(total)
}

/// A keep-alive of `v` seconds: `None` (invalid) when negative or not a number, "no expiry"
/// beyond ten years (a `Duration` cannot hold every `f64`, and an idle model kept for a decade
/// is a model kept for good), else `v`.
pub fn keep_alive_seconds(v: f64) -> Option<Option<f64>> {
    const MAX_SECONDS: f64 = 315_360_000.0;
    if v.is_nan() || v < 0.0 {
        None
    } else if v > MAX_SECONDS {
        Some(None)
    } else {
        Some(Some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn kinds_parse_and_refuse() {
        let int = Kind::Int { min: 1, max: 10 };
        assert_eq!(int.parse(" 3 "), Ok(Value::Int(3)));
        assert_eq!(int.parse("0"), Err(Invalid { kind: int }));
        assert_eq!(
            int.parse("secret").map_err(|e| e.to_string()),
            Err("must be an integer from 1 to 10".to_string())
        );
        assert!(int.parse("x").is_err());
        assert_eq!(Kind::Bool.parse("Enabled"), Ok(Value::Bool(true)));
        assert!(Kind::Bool.parse("maybe").is_err());
        let f = Kind::Float { min: 0.0, max: 1.0 };
        assert!(f.parse("NaN").is_err());
        assert!(f.parse("inf").is_err());
        assert_eq!(Kind::OptInt { min: 1, max: 2 }.parse(""), Ok(Value::Unset));
        // A key: 64 hex digits, not a placeholder, not one digit repeated (anyone could
        // compute the hashes of an all-zero key); empty means "generate one".
        let key = "ab".repeat(31) + "cD";
        assert_eq!(
            Kind::Key.parse(&key),
            Ok(Value::Str(key.to_ascii_lowercase()))
        );
        assert_eq!(Kind::Key.parse(""), Ok(Value::Str(String::new())));
        for bad in [
            "secret",
            "replace-me-64-hex-digits",
            &"0".repeat(64),
            &"f".repeat(63),
        ] {
            assert!(Kind::Key.parse(bad).is_err(), "{bad}");
        }
        assert!(Kind::Hosts.parse("*").is_err());
        for bad in [
            "*.com",
            "*.",
            "a.*.org",
            "*.*.org",
            "*example.org",
            "..",
            "a b",
        ] {
            assert!(Kind::Hosts.parse(bad).is_err(), "{bad}");
        }
        for good in [
            "*.example.org",
            "*.corp.example.org",
            "localhost",
            "[::1]",
            "10.0.0.7",
        ] {
            assert!(Kind::Hosts.parse(good).is_ok(), "{good}");
        }
        assert!(Kind::Origins.parse("*").is_err());
        assert!(Kind::Origins.parse("http://localhost:3000").is_ok());
        assert_eq!(
            Kind::Enum(&["a", "b"]).parse("B"),
            Ok(Value::Str("b".into()))
        );
    }

    #[test]
    fn keep_alive_syntax_matches_openmed() {
        assert_eq!(parse_keep_alive("30s"), Some(Some(30.0)));
        assert_eq!(parse_keep_alive("1h30m"), Some(Some(5400.0)));
        assert_eq!(parse_keep_alive("500ms"), Some(Some(0.5)));
        assert_eq!(parse_keep_alive("1d"), Some(Some(86400.0)));
        assert_eq!(parse_keep_alive("never"), Some(None));
        assert_eq!(parse_keep_alive("12"), Some(Some(12.0)));
        assert_eq!(parse_keep_alive("-1"), None);
        assert_eq!(parse_keep_alive("5x"), None);
        // Finite but beyond ten years: no expiry, as OpenMed accepts any finite duration.
        assert_eq!(parse_keep_alive("1e300"), Some(None));
        assert_eq!(parse_keep_alive("99999999999h"), Some(None));
        assert_eq!(parse_keep_alive("310718.028556d7h78358m"), Some(None));
        assert_eq!(parse_keep_alive("nan"), None);
        assert_eq!(parse_keep_alive("-inf"), None);
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in ".{0,40}") {
            for k in [Kind::Bool, Kind::Int{min:0,max:5}, Kind::Float{min:0.0,max:1.0}, Kind::KeepAlive,
                      Kind::Hosts, Kind::Origins, Kind::List, Kind::Enum(&["a"])] {
                let _ = k.parse(&s);
            }
        }
    }
}
