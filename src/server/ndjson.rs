//! JSON lines exactly as OpenMed's streams write them: Python's `json.dumps` with sorted
//! keys, either default separators (`", "`, `": "`) or compact ones, and `ensure_ascii`
//! escaping (`\uXXXX`, surrogate pairs above the BMP).

use serde_json::Value;

/// Serialises `v` like `json.dumps(v, sort_keys=True[, separators=(",", ":")])`.
pub(crate) fn dumps(v: &Value, compact: bool) -> String {
    let mut out = String::new();
    write(&mut out, v, compact);
    out
}

fn write(out: &mut String, v: &Value, compact: bool) {
    let (item, kv) = if compact { (",", ":") } else { (", ", ": ") };
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_str(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(item);
                }
                write(out, x, compact);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(item);
                }
                write_str(out, k);
                out.push_str(kv);
                write(out, &m[k], compact);
            }
            out.push('}');
        }
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_python_json_dumps() {
        let v = json!({"b": 1, "a": ["é", "😀"], "c": {"y": null, "x": true}});
        assert_eq!(
            dumps(&v, false),
            r#"{"a": ["\u00e9", "\ud83d\ude00"], "b": 1, "c": {"x": true, "y": null}}"#
        );
        assert_eq!(
            dumps(&v, true),
            r#"{"a":["\u00e9","\ud83d\ude00"],"b":1,"c":{"x":true,"y":null}}"#
        );
    }
}
