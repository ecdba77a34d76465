//! `ui/types.js`: JSDoc `@typedef`s of the admin API's answers, rendered from the OpenAPI
//! document, and the test that fails when the committed file is stale.
//!
//! Why generated, and why JSDoc: the dashboard is plain JavaScript with no build step, so it
//! cannot import Rust types or run a code generator when it loads. With `// @ts-check` and
//! JSDoc an editor that runs TypeScript checks `app.js` against these typedefs anyway, and the
//! page itself never loads `types.js` (it is an ES module holding comments only). The schemas
//! are the ones `/openapi.json` serves, derived from the structs the server serialises
//! (`admin.rs`), so the three readers of `/admin/status` (server, desktop shell, dashboard)
//! cannot drift apart unnoticed: a changed struct changes the schema, and then this file.
//!
//! Only what the dashboard reads is rendered: the schemas in [`ROOTS`] and every schema they
//! refer to.

use serde_json::Value;

/// The admin answers the dashboard reads; their referenced schemas come along.
const ROOTS: &[&str] = &[
    "Status",
    "BreakerStatus",
    "BreakerEvent",
    "SettingsList",
    "TokenList",
    "ModelsList",
    "PullStarted",
    "ModelVerification",
    "DefaultModel",
    "AuditList",
    "HistoryResponse",
    "LogTail",
    "ModelsLoadedResponse",
    "DeidentifyResponse",
];

/// The command that rewrites `ui/types.js`.
const COMMAND: &str = "PHIGUARD_UPDATE_UI_TYPES=1 cargo test --lib ui_types";

const REF_PREFIX: &str = "#/components/schemas/";

/// `ui/types.js` for the components of `doc` (an OpenAPI document as JSON).
fn render(doc: &Value) -> String {
    let schemas = &doc["components"]["schemas"];
    let mut order: Vec<String> = Vec::new();
    for root in ROOTS {
        collect(schemas, root, &mut order);
    }
    let mut out = String::from(
        "// Generated from the OpenAPI document by src/server/ui_types.rs: do not edit.\n",
    );
    out.push_str(&format!("// Regenerate with `{COMMAND}`.\n"));
    out.push_str(
        "//\n// JSDoc types of the admin API's answers, for editors checking app.js (`// @ts-check`);\n\
         // the page never loads this file.\n",
    );
    for name in &order {
        out.push('\n');
        out.push_str(&typedef(name, &schemas[name.as_str()]));
    }
    out.push_str("\nexport {};\n");
    out
}

/// Adds `name` and then, depth first, every schema it refers to, each once.
fn collect(schemas: &Value, name: &str, order: &mut Vec<String>) {
    if order.iter().any(|n| n == name) {
        return;
    }
    order.push(name.to_owned());
    let mut refs = Vec::new();
    refs_in(&schemas[name], &mut refs);
    for r in refs {
        collect(schemas, &r, order);
    }
}

/// The schema names `schema` refers to, properties in [`properties`] order.
fn refs_in(schema: &Value, refs: &mut Vec<String>) {
    if let Some(name) = schema["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix(REF_PREFIX))
    {
        refs.push(name.to_owned());
    }
    for (_, prop) in properties(schema) {
        refs_in(prop, refs);
    }
    refs_in_list(&schema["oneOf"], refs);
    refs_in_list(&schema["anyOf"], refs);
    if schema["items"].is_object() {
        refs_in(&schema["items"], refs);
    }
    if schema["additionalProperties"].is_object() {
        refs_in(&schema["additionalProperties"], refs);
    }
}

fn refs_in_list(list: &Value, refs: &mut Vec<String>) {
    for item in list.as_array().into_iter().flatten() {
        refs_in(item, refs);
    }
}

/// An object schema's properties: the required ones in field order (utoipa keeps that order
/// in `required` only), then the optional ones by name.
fn properties(schema: &Value) -> Vec<(&str, &Value)> {
    let Some(props) = schema["properties"].as_object() else {
        return Vec::new();
    };
    let required = required(schema);
    let mut out: Vec<(&str, &Value)> = required
        .iter()
        .filter_map(|k| props.get_key_value(*k).map(|(k, v)| (k.as_str(), v)))
        .collect();
    let mut optional: Vec<(&str, &Value)> = props
        .iter()
        .filter(|(k, _)| !required.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    optional.sort_by_key(|(k, _)| *k);
    out.extend(optional);
    out
}

fn required(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// One `/** @typedef … */` block.
fn typedef(name: &str, schema: &Value) -> String {
    let mut out = String::from("/**\n");
    if let Some(d) = description(schema) {
        out.push_str(&format!(" * {d}\n"));
    }
    let props = properties(schema);
    if props.is_empty() {
        out.push_str(&format!(" * @typedef {{{}}} {name}\n", type_of(schema)));
    } else {
        out.push_str(&format!(" * @typedef {{object}} {name}\n"));
        let required = required(schema);
        for (key, prop) in props {
            let field = if required.contains(&key) {
                key.to_owned()
            } else {
                format!("[{key}]")
            };
            let doc = description(prop)
                .map(|d| format!(" {d}"))
                .unwrap_or_default();
            out.push_str(&format!(
                " * @property {{{}}} {field}{doc}\n",
                type_of(prop)
            ));
        }
    }
    out.push_str(" */\n");
    out
}

/// A schema's description on one line, safe inside a block comment; for a nullable reference
/// (`oneOf: [null, $ref]`) the description sits on the reference.
fn description(schema: &Value) -> Option<String> {
    let text = schema["description"].as_str().or_else(|| {
        schema["oneOf"]
            .as_array()?
            .iter()
            .find_map(|s| s["description"].as_str())
    })?;
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(line.replace("*/", "*\\/"))
}

/// The TypeScript type (as JSDoc reads it) of a schema.
fn type_of(schema: &Value) -> String {
    if let Some(name) = schema["$ref"].as_str() {
        return name.strip_prefix(REF_PREFIX).unwrap_or(name).to_owned();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(items) = schema[key].as_array() {
            return union(items.iter().map(type_of));
        }
    }
    if let Some(values) = schema["enum"].as_array() {
        return union(values.iter().map(Value::to_string));
    }
    match &schema["type"] {
        Value::String(t) => primitive(t, schema),
        Value::Array(types) => union(
            types
                .iter()
                .filter_map(Value::as_str)
                .map(|t| primitive(t, schema)),
        ),
        _ => "any".to_owned(),
    }
}

fn primitive(t: &str, schema: &Value) -> String {
    match t {
        "string" => "string".to_owned(),
        "integer" | "number" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "null" => "null".to_owned(),
        "array" => format!("Array<{}>", type_of(&schema["items"])),
        "object" => {
            let props = properties(schema);
            if props.is_empty() {
                let values = match &schema["additionalProperties"] {
                    v @ Value::Object(_) => type_of(v),
                    _ => "any".to_owned(),
                };
                return format!("Object<string, {values}>");
            }
            let required = required(schema);
            let fields: Vec<String> = props
                .into_iter()
                .map(|(k, v)| {
                    let mark = if required.contains(&k) { "" } else { "?" };
                    format!("{k}{mark}: {}", type_of(v))
                })
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        _ => "any".to_owned(),
    }
}

/// `a | b`, each distinct member once, in order.
fn union(members: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for m in members {
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    seen.join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn committed_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/types.js")
    }

    #[test]
    fn ui_types_js_is_up_to_date() -> Result<(), Box<dyn std::error::Error>> {
        let doc = serde_json::to_value(super::super::router::api_doc())?;
        let want = render(&doc);
        if std::env::var_os("PHIGUARD_UPDATE_UI_TYPES").is_some() {
            std::fs::write(committed_path(), &want)?;
        }
        let have = std::fs::read_to_string(committed_path()).unwrap_or_default();
        assert!(
            have == want,
            "ui/types.js is out of date with the admin schemas (src/server/admin.rs); regenerate it with `{COMMAND}`"
        );
        Ok(())
    }

    #[test]
    fn schemas_become_jsdoc_types() {
        let cases = [
            (json!({"$ref": "#/components/schemas/Totals"}), "Totals"),
            (json!({"type": ["number", "null"]}), "number | null"),
            (
                json!({"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/X"}]}),
                "null | X",
            ),
            (
                json!({"type": "string", "enum": ["a", "b"]}),
                "\"a\" | \"b\"",
            ),
            (
                json!({"type": "array", "items": {"type": "integer"}}),
                "Array<number>",
            ),
            (
                json!({"type": "object", "required": ["b"],
                       "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}}),
                "{ b: boolean, a?: string }",
            ),
            (json!({"type": "object"}), "Object<string, any>"),
            (json!({"description": "any JSON"}), "any"),
        ];
        for (schema, want) in cases {
            assert_eq!(type_of(&schema), want, "{schema}");
        }
    }

    #[test]
    fn a_typedef_keeps_field_order_and_marks_optional_fields() {
        let schema = json!({"type": "object", "description": "A thing.\nTwo lines */ here.",
            "required": ["z", "a"],
            "properties": {"a": {"type": "string"}, "m": {"type": "integer", "description": "maybe"},
                           "z": {"$ref": "#/components/schemas/Z"}}});
        assert_eq!(
            typedef("Thing", &schema),
            "/**\n * A thing. Two lines *\\/ here.\n * @typedef {object} Thing\n * @property {Z} z\n \
             * @property {string} a\n * @property {number} [m] maybe\n */\n"
        );
    }

    #[test]
    fn referenced_schemas_are_rendered_once_after_their_first_user() {
        let schemas = json!({
            "A": {"type": "object", "required": ["b", "c"], "properties": {
                "b": {"$ref": "#/components/schemas/B"},
                "c": {"type": "array", "items": {"$ref": "#/components/schemas/C"}}}},
            "B": {"type": "object", "required": ["c"], "properties": {"c": {"$ref": "#/components/schemas/C"}}},
            "C": {"type": "string", "enum": ["x"]},
        });
        let mut order = Vec::new();
        collect(&schemas, "A", &mut order);
        assert_eq!(order, ["A", "B", "C"]);
    }
}
