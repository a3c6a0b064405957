//! JSON Schema: compiling a tool's input schema and checking inputs against it.
//!
//! Schemas come from tools that toolgate did not write, so compiling never reaches the network
//! or the file system: the `jsonschema` crate is built without its resolvers and the validator
//! is offline, so an external `$ref` is a compile error rather than a fetch. Errors are
//! readable: every failure names the JSON pointer of the offending place and the reason.

use serde_json::Value;

use crate::error::{Error, Result};

/// How much of one validation message is kept; the instance inside a message can be huge.
const MAX_MESSAGE_CHARS: usize = 300;
/// How many failures one error lists before it says how many more there are.
const MAX_LISTED_FAILURES: usize = 10;

/// A compiled input schema of a tool.
#[derive(Debug)]
pub struct InputSchema {
    validator: jsonschema::Validator,
}

/// One place where an input does not match its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// JSON pointer into the input (`""` is the whole input, `/items/0` the first item).
    pub pointer: String,
    /// What is wrong there.
    pub reason: String,
}

impl InputSchema {
    /// Compiles `schema` as the input schema of a tool. A tool's input must be a JSON object,
    /// so the schema must be an object with `"type": "object"` (what model providers accept).
    /// Returns a readable reason when it does not compile, including the JSON pointer into the
    /// schema for meta-schema violations.
    pub fn compile(schema: &Value) -> std::result::Result<Self, String> {
        let Some(object) = schema.as_object() else {
            return Err(format!(
                "input_schema must be a JSON object, got {}",
                kind_of(schema)
            ));
        };
        match object.get("type") {
            Some(Value::String(kind)) if kind == "object" => {}
            Some(other) => {
                return Err(format!(
                    "input_schema must have \"type\": \"object\" (a tool's input is an object), got \"type\": {}",
                    clip(&other.to_string())
                ))
            }
            None => {
                return Err(
                    "input_schema must have \"type\": \"object\" (a tool's input is an object)"
                        .into(),
                )
            }
        }
        jsonschema::options()
            .offline()
            .build(schema)
            .map(|validator| Self { validator })
            .map_err(|err| {
                let place = err.instance_path().as_str();
                let place = if place.is_empty() { "/" } else { place };
                format!(
                    "input_schema does not compile as JSON Schema at {place}: {}",
                    clip(&err.to_string())
                )
            })
    }

    /// Every place where `input` breaks the schema (empty when it is valid).
    pub fn violations(&self, input: &Value) -> Vec<SchemaViolation> {
        self.validator
            .iter_errors(input)
            .map(|err| SchemaViolation {
                pointer: err.instance_path().as_str().to_string(),
                reason: clip(&err.to_string()),
            })
            .collect()
    }

    /// `Ok` when `input` matches the schema, else `INVALID_INPUT` naming the tool, every JSON
    /// pointer and its reason.
    pub fn check(&self, tool: &str, input: &Value) -> Result<()> {
        let violations = self.violations(input);
        if violations.is_empty() {
            return Ok(());
        }
        Err(Error::InvalidInput(describe_violations(tool, &violations)))
    }
}

/// A compiled schema of a worker's final result (golem-forge's `output_schema_ref`): any JSON
/// Schema, compiled offline like input schemas.
#[derive(Debug)]
pub struct OutputSchema {
    validator: jsonschema::Validator,
}

impl OutputSchema {
    /// Compiles `schema`; the reason (with the JSON pointer into the schema) when it does not.
    pub fn compile(schema: &Value) -> std::result::Result<Self, String> {
        jsonschema::options()
            .offline()
            .build(schema)
            .map(|validator| Self { validator })
            .map_err(|err| {
                let place = err.instance_path().as_str();
                let place = if place.is_empty() { "/" } else { place };
                format!(
                    "the output schema does not compile as JSON Schema at {place}: {}",
                    clip(&err.to_string())
                )
            })
    }

    /// Checks a final result given as text: JSON text is checked as the value it denotes,
    /// other text as a string. `None` when it matches, else what is wrong, listed by pointer.
    pub fn problem(&self, result: &str) -> Option<String> {
        let value = serde_json::from_str::<Value>(result.trim())
            .unwrap_or_else(|_| Value::String(result.to_string()));
        let violations: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(MAX_LISTED_FAILURES)
            .map(|err| {
                let pointer = err.instance_path().as_str().to_string();
                let pointer = if pointer.is_empty() {
                    "/ (the result itself)".to_string()
                } else {
                    pointer
                };
                format!("at {pointer}: {}", clip(&err.to_string()))
            })
            .collect();
        (!violations.is_empty()).then(|| violations.join("; "))
    }
}

/// `input for tool 'x' does not match its schema: at /a: reason; at /b: reason`.
pub fn describe_violations(tool: &str, violations: &[SchemaViolation]) -> String {
    let mut listed: Vec<String> = violations
        .iter()
        .take(MAX_LISTED_FAILURES)
        .map(|v| {
            let pointer = if v.pointer.is_empty() {
                "/ (the input itself)"
            } else {
                &v.pointer
            };
            format!("at {pointer}: {}", v.reason)
        })
        .collect();
    if violations.len() > MAX_LISTED_FAILURES {
        listed.push(format!(
            "and {} more",
            violations.len() - MAX_LISTED_FAILURES
        ));
    }
    format!(
        "input for tool '{tool}' does not match its input schema: {}; fix the input to match `toolgate tools describe {tool}`",
        listed.join("; ")
    )
}

/// The JSON type name of a value, for messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Shortens a message for humans; the full instance may be megabytes.
pub(crate) fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_MESSAGE_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
    format!("{kept}… (cut)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> InputSchema {
        InputSchema::compile(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "count": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["name"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn a_matching_input_passes() {
        schema()
            .check("t", &json!({"name": "x", "count": 2, "tags": ["a"]}))
            .unwrap();
    }

    #[test]
    fn violations_name_the_json_pointer_and_the_reason() {
        let err = schema()
            .check("t", &json!({"count": 0, "tags": ["a", 5], "extra": true}))
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        let message = err.to_string();
        assert!(message.contains("tool 't'"), "{message}");
        assert!(message.contains("at /count:"), "{message}");
        assert!(message.contains("minimum of 1"), "{message}");
        assert!(message.contains("at /tags/1:"), "{message}");
        assert!(
            message.contains("\"name\" is a required property"),
            "{message}"
        );
        assert!(message.contains("extra"), "{message}");
    }

    #[test]
    fn a_wrong_root_type_is_reported_at_the_root() {
        let violations = schema().violations(&json!([1, 2]));
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].pointer, "");
        let message = describe_violations("t", &violations);
        assert!(message.contains("at / (the input itself)"), "{message}");
    }

    #[test]
    fn schemas_that_do_not_compile_are_refused_with_a_reason() {
        let cases = [
            (json!("string"), "must be a JSON object"),
            (json!({"properties": {}}), "\"type\": \"object\""),
            (json!({"type": "array"}), "\"type\": \"object\""),
            (
                json!({"type": "object", "properties": {"a": {"type": "strin"}}}),
                "does not compile",
            ),
            (
                json!({"type": "object", "properties": {"a": {"minimum": "five"}}}),
                "does not compile",
            ),
        ];
        for (schema, expected) in cases {
            let err = InputSchema::compile(&schema).unwrap_err();
            assert!(err.contains(expected), "{schema}: {err}");
        }
    }

    /// Attack: a schema that points elsewhere must not make toolgate fetch anything.
    #[test]
    fn external_references_are_never_fetched() {
        for reference in [
            "https://example.invalid/schema.json",
            "file:///etc/passwd",
            "/etc/passwd",
        ] {
            let schema = json!({"type": "object", "properties": {"a": {"$ref": reference}}});
            let err = InputSchema::compile(&schema).unwrap_err();
            assert!(err.contains("does not compile"), "{reference}: {err}");
            assert!(
                err.contains("is not present in a registry"),
                "{reference}: {err}"
            );
        }
    }

    #[test]
    fn local_references_work() {
        let schema = InputSchema::compile(&json!({
            "type": "object",
            "$defs": {"city": {"type": "string", "minLength": 2}},
            "properties": {"from": {"$ref": "#/$defs/city"}}
        }))
        .unwrap();
        schema.check("t", &json!({"from": "Paris"})).unwrap();
        let err = schema.check("t", &json!({"from": "P"})).unwrap_err();
        assert!(err.to_string().contains("at /from:"), "{err}");
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let huge = "x".repeat(100_000);
        let err = schema()
            .check("t", &json!({"name": 1, "count": huge}))
            .unwrap_err();
        assert!(err.to_string().len() < 2_000, "{}", err.to_string().len());
        assert!(err.to_string().contains("(cut)"));
    }

    #[test]
    fn many_failures_are_summarised() {
        let schema = InputSchema::compile(&json!({
            "type": "object",
            "additionalProperties": {"type": "integer"}
        }))
        .unwrap();
        let input: serde_json::Map<String, Value> =
            (0..15).map(|i| (format!("k{i}"), json!("s"))).collect();
        let err = schema.check("t", &Value::Object(input)).unwrap_err();
        assert!(err.to_string().contains("and 5 more"), "{err}");
    }
}
