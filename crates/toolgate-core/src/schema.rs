//! JSON Schema: compiling a tool's input schema and checking inputs against it.
//!
//! Schemas come from tools that toolgate did not write, so compiling never reaches the network
//! or the file system: the `jsonschema` crate is built without its resolvers and the validator
//! is offline, so an external `$ref` is a compile error rather than a fetch. Errors are
//! readable: every failure names the JSON pointer of the offending place and the reason.
//!
//! A schema's `pattern` and `patternProperties` run against model input, so they are compiled
//! with the `regex` crate's linear-time engine instead of the backtracking default: no pattern
//! can take more than linear time in the input. Lookarounds, backreferences, atomic groups and
//! possessive quantifiers need backtracking, so a schema that uses them does not compile — the
//! tool is refused when it is loaded, with the pointer of the pattern and why.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::limits::{MAX_REGEX_COMPILED_BYTES, MAX_REGEX_DFA_BYTES};

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
        compile(schema)
            .map(|validator| Self { validator })
            .map_err(|reason| format!("input_schema does not compile as JSON Schema at {reason}"))
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
        compile(schema)
            .map(|validator| Self { validator })
            .map_err(|reason| {
                format!("the output schema does not compile as JSON Schema at {reason}")
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

/// Compiles `schema` offline, with linear-time patterns. The error is `<pointer>: <why>`.
fn compile(schema: &Value) -> std::result::Result<jsonschema::Validator, String> {
    jsonschema::options()
        .offline()
        .with_pattern_options(
            jsonschema::PatternOptions::regex()
                .size_limit(MAX_REGEX_COMPILED_BYTES)
                .dfa_size_limit(MAX_REGEX_DFA_BYTES),
        )
        .build(schema)
        .map_err(|err| {
            let place = err.instance_path().as_str();
            let place = if place.is_empty() { "/" } else { place };
            let mut why = clip(&err.to_string());
            if matches!(
                err.kind(),
                jsonschema::error::ValidationErrorKind::Format { .. }
            ) || why.contains("regex")
                || why.contains("pattern")
            {
                why.push_str(PATTERN_HINT);
            }
            format!("{place}: {why}")
        })
}

/// What a refused pattern needs to change.
const PATTERN_HINT: &str = " (patterns are checked with a linear-time engine: lookahead, lookbehind, backreferences, atomic groups and possessive quantifiers are not supported; rewrite the pattern without them)";

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

    /// Attack: a pattern that needs backtracking (a lookahead around a nested quantifier, the
    /// issue's example) is refused when the schema is compiled, wherever it sits, with the
    /// pointer of the pattern and what to change.
    #[test]
    fn backtracking_patterns_are_refused_at_compile_time() {
        let cases = [
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=(a+)+$)x"}}}),
                "/properties/a/pattern",
            ),
            (
                json!({"type": "object", "properties": {"a": {"pattern": "(a)\\1"}}}),
                "/properties/a/pattern",
            ),
            (
                json!({"type": "object", "properties": {"a": {"pattern": "(?<=a)b"}}}),
                "/properties/a/pattern",
            ),
            (
                json!({"type": "object", "properties": {"a": {"pattern": "(?<!a)b"}}}),
                "/properties/a/pattern",
            ),
            (
                json!({"type": "object", "properties": {"a": {"pattern": "(?!a)b"}}}),
                "/properties/a/pattern",
            ),
            (
                json!({"type": "object", "properties": {"a": {"pattern": "(?>a+)b"}}}),
                "/properties/a/pattern",
            ),
            (
                json!({"type": "object", "properties": {"a": {"pattern": "(?<n>a)\\k<n>"}}}),
                "/properties/a/pattern",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "array", "items": {"pattern": "(?=a)a"}}}}}}),
                "/properties/a/properties/b/items/pattern",
            ),
            (
                json!({"type": "object", "$defs": {"d": {"pattern": "(?=a)a"}}, "properties": {"a": {"$ref": "#/$defs/d"}}}),
                "pattern",
            ),
            (
                json!({"type": "object", "patternProperties": {"(?=(a+)+$)x": {"type": "string"}}}),
                "patternProperties",
            ),
            (
                json!({"type": "object", "additionalProperties": {"anyOf": [{"pattern": "(a)\\1"}]}}),
                "pattern",
            ),
        ];
        for (schema, place) in cases {
            let err = InputSchema::compile(&schema)
                .err()
                .unwrap_or_else(|| panic!("{schema} compiled"));
            assert!(err.contains("does not compile"), "{schema}: {err}");
            assert!(err.contains(place), "{schema}: {err}");
            assert!(err.contains("linear-time"), "{schema}: {err}");
        }
    }

    /// Patterns that a backtracking engine takes exponential or quadratic time on run in linear
    /// time here; ECMAScript classes still work.
    #[test]
    fn nested_quantifiers_validate_large_inputs() {
        let schema = InputSchema::compile(&json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "pattern": "(a+)+$"},
                "b": {"type": "string", "pattern": "^(\\w+\\s?)*$"},
                "c": {"type": "string", "pattern": "^\\d{3}$"},
                "d": {"type": "string", "pattern": "^a++$"}
            },
            "patternProperties": {"^(x+x+)+y$": {"type": "integer"}}
        }))
        .unwrap();
        let long = "a".repeat(60_000);
        let input = json!({"a": format!("{long}!"), "b": format!("{long}!"), "c": "123", "d": format!("{long}!")});
        let err = schema.check("t", &input).unwrap_err();
        assert!(err.to_string().contains("at /a:"), "{err}");
        assert!(err.to_string().contains("at /b:"), "{err}");
        assert!(err.to_string().contains("at /d:"), "{err}");
        schema
            .check("t", &json!({"a": long, "c": "123", "d": long, "xxxxy": 1}))
            .unwrap();
        let key = format!("{}y", "x".repeat(30_000));
        let err = schema.check("t", &json!({ key: "s" })).unwrap_err();
        assert!(err.to_string().contains("integer"), "{err}");
    }

    /// The same engine checks a worker's output schema.
    #[test]
    fn output_schemas_use_the_same_engine() {
        let err = OutputSchema::compile(&json!({"type": "string", "pattern": "(?=(a+)+$)x"}))
            .err()
            .unwrap();
        assert!(err.contains("/pattern"), "{err}");
        let schema =
            OutputSchema::compile(&json!({"type": "string", "pattern": "^(a+)+$"})).unwrap();
        assert!(schema
            .problem(&format!("{}!", "a".repeat(60_000)))
            .is_some());
        assert!(schema.problem(&"a".repeat(60_000)).is_none());
    }

    /// `format: regex` checks that a string is a valid pattern; a large one is parsed, not run.
    #[test]
    fn format_regex_inputs_are_only_parsed() {
        let schema = InputSchema::compile(&json!({
            "type": "object",
            "properties": {"r": {"type": "string", "format": "regex"}}
        }))
        .unwrap();
        schema
            .check(
                "t",
                &json!({"r": format!("(?=(a+)+$){}", "a".repeat(60_000))}),
            )
            .unwrap();
    }
}
