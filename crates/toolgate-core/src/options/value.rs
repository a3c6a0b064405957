//! A JavaScript value as the binding hands it over, and a serde deserializer over it whose
//! errors keep their structure (which key was unknown, what was expected), so that messages are
//! built from facts rather than from serde's wording.

use std::fmt;

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};

use crate::error::Error;

/// A JavaScript value, converted by the Node binding without interpretation.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue {
    /// `undefined`: a key holding it counts as absent.
    Undefined,
    Null,
    Bool(bool),
    /// Every JavaScript number, NaN and the infinities included.
    Number(f64),
    String(String),
    /// A Buffer or typed array.
    Bytes(Vec<u8>),
    List(Vec<OptionValue>),
    /// A plain object's own enumerable keys, in order.
    Object(Vec<(String, OptionValue)>),
    /// A value only JavaScript can use: a function, an AbortSignal, a class instance, a
    /// symbol. Named by what it is (`a function`).
    Opaque(String),
}

impl OptionValue {
    /// What the value is, for messages (`a string`, `the number NaN`).
    pub fn describe(&self) -> String {
        match self {
            OptionValue::Undefined => "undefined".into(),
            OptionValue::Null => "null".into(),
            OptionValue::Bool(value) => format!("the boolean {value}"),
            OptionValue::Number(value) => format!("the number {}", format_number(*value)),
            OptionValue::String(_) => "a string".into(),
            OptionValue::Bytes(_) => "bytes".into(),
            OptionValue::List(_) => "a list".into(),
            OptionValue::Object(_) => "an object".into(),
            OptionValue::Opaque(what) => what.clone(),
        }
    }
}

impl From<serde_json::Value> for OptionValue {
    /// JSON as JavaScript would pass it (for tests and for values that arrive as JSON).
    fn from(value: serde_json::Value) -> Self {
        match value {
            serde_json::Value::Null => OptionValue::Null,
            serde_json::Value::Bool(value) => OptionValue::Bool(value),
            serde_json::Value::Number(number) => {
                OptionValue::Number(number.as_f64().unwrap_or(f64::NAN))
            }
            serde_json::Value::String(text) => OptionValue::String(text),
            serde_json::Value::Array(items) => {
                OptionValue::List(items.into_iter().map(Into::into).collect())
            }
            serde_json::Value::Object(map) => OptionValue::Object(
                map.into_iter()
                    .map(|(key, value)| (key, value.into()))
                    .collect(),
            ),
        }
    }
}

/// A number as a person writes it: `30000`, `0.5`, `2e22`, `NaN`, `-Infinity`.
pub fn format_number(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if value.abs() >= 1e15 {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// Why an options value was refused, before the path is known.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    UnknownKey {
        key: String,
        expected: &'static [&'static str],
    },
    MissingKey(&'static str),
    WrongType {
        expected: String,
        got: String,
    },
    UnknownVariant {
        value: String,
        expected: &'static [&'static str],
    },
    /// A value of the right type that is out of range or otherwise unusable; the text
    /// completes "option 'x' …".
    BadValue(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Problem {}

impl de::Error for Problem {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Problem::BadValue(message.to_string())
    }

    fn invalid_type(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Problem::WrongType {
            expected: expected.to_string(),
            got: describe_unexpected(&unexpected),
        }
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Problem::UnknownKey {
            key: field.to_string(),
            expected,
        }
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Problem::UnknownVariant {
            value: variant.to_string(),
            expected,
        }
    }

    fn missing_field(field: &'static str) -> Self {
        Problem::MissingKey(field)
    }
}

fn describe_unexpected(unexpected: &de::Unexpected<'_>) -> String {
    match unexpected {
        de::Unexpected::Bool(value) => format!("the boolean {value}"),
        de::Unexpected::Unsigned(value) => format!("the number {value}"),
        de::Unexpected::Signed(value) => format!("the number {value}"),
        de::Unexpected::Float(value) => format!("the number {}", format_number(*value)),
        de::Unexpected::Str(_) | de::Unexpected::Char(_) => "a string".into(),
        de::Unexpected::Bytes(_) => "bytes".into(),
        de::Unexpected::Unit => "null".into(),
        de::Unexpected::Seq => "a list".into(),
        de::Unexpected::Map => "an object".into(),
        de::Unexpected::Other(what) => (*what).to_string(),
        other => other.to_string(),
    }
}

fn quoted_list(names: &[&str]) -> String {
    if names.is_empty() {
        return "none".into();
    }
    names
        .iter()
        .map(|name| format!("'{name}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Deserializes `value` into `T`, refusing unknown keys at any depth. The error says which
/// option (`guardrails.denyCommands[0].pattern`) was wrong and what is accepted; it is
/// `CONFIG_INVALID` unless `input` is set (per-call arguments), then `INVALID_INPUT`.
pub fn parse<T: DeserializeOwned>(value: OptionValue, input: bool) -> crate::Result<T> {
    let result: Result<T, serde_path_to_error::Error<Problem>> =
        serde_path_to_error::deserialize(value);
    result.map_err(|err| {
        let path = path_text(err.path());
        let message = message(&path, err.inner());
        if input {
            Error::InvalidInput(message)
        } else {
            Error::ConfigInvalid(message)
        }
    })
}

fn path_text(path: &serde_path_to_error::Path) -> String {
    let mut text = String::new();
    for segment in path.iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => text.push_str(&format!("[{index}]")),
            serde_path_to_error::Segment::Map { key } => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            serde_path_to_error::Segment::Enum { variant } => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(variant);
            }
            serde_path_to_error::Segment::Unknown => {}
        }
    }
    text
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else if path == key || path.ends_with(&format!(".{key}")) {
        path.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// serde's names for what it expected, in the words of a JavaScript caller.
fn friendly(expected: &str) -> String {
    if expected.starts_with("struct ") || expected == "a map" {
        "an object".into()
    } else if expected == "a sequence" {
        "a list".into()
    } else if expected.starts_with("enum ") {
        "a string".into()
    } else {
        expected.to_string()
    }
}

fn message(path: &str, problem: &Problem) -> String {
    let at = |path: &str| {
        if path.is_empty() {
            "the options".to_string()
        } else {
            format!("option '{path}'")
        }
    };
    match problem {
        Problem::UnknownKey { key, expected } => format!(
            "unknown option '{}', expected one of {}",
            join(path, key),
            quoted_list(expected)
        ),
        Problem::MissingKey(key) => format!("option '{}' is required", join(path, key)),
        Problem::WrongType { expected, got } => {
            format!("{} must be {}, got {got}", at(path), friendly(expected))
        }
        Problem::UnknownVariant { value, expected } => format!(
            "{} is '{value}', expected one of {}",
            at(path),
            expected.join(", ")
        ),
        Problem::BadValue(text) => format!("{} {text}", at(path)),
    }
}

impl<'de> IntoDeserializer<'de, Problem> for OptionValue {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for OptionValue {
    type Error = Problem;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        match self {
            OptionValue::Undefined | OptionValue::Null => visitor.visit_unit(),
            OptionValue::Bool(value) => visitor.visit_bool(value),
            OptionValue::Number(value) => {
                if value.fract() == 0.0 && value.abs() < 9.007_199_254_740_992e15 {
                    visitor.visit_i64(value as i64)
                } else {
                    visitor.visit_f64(value)
                }
            }
            OptionValue::String(text) => visitor.visit_string(text),
            OptionValue::Bytes(bytes) => visitor.visit_byte_buf(bytes),
            OptionValue::List(items) => {
                let mut sequence = de::value::SeqDeserializer::new(items.into_iter());
                let value = visitor.visit_seq(&mut sequence)?;
                sequence.end()?;
                Ok(value)
            }
            OptionValue::Object(entries) => {
                let present = entries
                    .into_iter()
                    .filter(|(_, value)| *value != OptionValue::Undefined);
                let mut map = de::value::MapDeserializer::new(present);
                let value = visitor.visit_map(&mut map)?;
                map.end()?;
                Ok(value)
            }
            OptionValue::Opaque(what) => Err(Problem::WrongType {
                expected: "plain data".into(),
                got: what,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        match self {
            OptionValue::Undefined | OptionValue::Null => visitor.visit_none(),
            other => visitor.visit_some(other),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Problem> {
        match self {
            OptionValue::String(text) => visitor.visit_enum(text.into_deserializer()),
            other => Err(Problem::WrongType {
                expected: "a string".into(),
                got: other.describe(),
            }),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Problem> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// A key whose value is only meaningful to JavaScript (a function, a signal, a model object):
/// the key is known, its value is taken as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JsOnly;

impl<'de> de::Deserialize<'de> for JsOnly {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        de::IgnoredAny::deserialize(deserializer).map(|_| JsOnly)
    }
}
