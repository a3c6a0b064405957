//! A JavaScript value as the binding hands it over, and a serde deserializer over it that reads
//! struct keys in JavaScript spelling ([`super::spelling`]) and whose errors keep their
//! structure (which key was unknown, what was expected, where), so that messages are built
//! from facts rather than from serde's wording.

use std::fmt;

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};

use super::numbers::{format_number, TimeoutMs};
use super::spelling::{holds_seconds, js_key, SPREAD};
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

/// Why an options value was refused, before the path is known.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    UnknownKey {
        key: String,
        /// The accepted keys, in any spelling (messages spell them for JavaScript).
        expected: Vec<String>,
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

/// A refused options value and where it is (`guardrails.denyOutput[0].action`), in the
/// caller's spelling. The place is set by the innermost value that knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadError {
    problem: Problem,
    path: Option<String>,
}

impl ReadError {
    fn at(problem: Problem, path: &str) -> Self {
        ReadError {
            problem,
            path: Some(path.to_string()),
        }
    }

    /// The error, placed at `path` unless a value below already placed it.
    fn located(mut self, path: &str) -> Self {
        if self.path.is_none() {
            self.path = Some(path.to_string());
        }
        self
    }
}

impl From<Problem> for ReadError {
    fn from(problem: Problem) -> Self {
        ReadError {
            problem,
            path: None,
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&message(self.path.as_deref().unwrap_or(""), &self.problem))
    }
}

impl std::error::Error for ReadError {}

impl de::Error for ReadError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Problem::BadValue(message.to_string()).into()
    }

    fn invalid_type(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Problem::WrongType {
            expected: expected.to_string(),
            got: describe_unexpected(&unexpected),
        }
        .into()
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Problem::UnknownKey {
            key: field.to_string(),
            expected: expected.iter().map(|name| name.to_string()).collect(),
        }
        .into()
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Problem::UnknownVariant {
            value: variant.to_string(),
            expected,
        }
        .into()
    }

    fn missing_field(field: &'static str) -> Self {
        Problem::MissingKey(field).into()
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

fn quoted_list(names: &[String]) -> String {
    if names.is_empty() {
        return "none".into();
    }
    names
        .iter()
        .map(|name| format!("'{}'", js_key(name)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Deserializes `value` into `T` in JavaScript spelling ([`super::spelling`]), refusing unknown
/// keys at any depth. The error says which option (`guardrails.denyCommands[0].pattern`) was
/// wrong and what is accepted; it is `CONFIG_INVALID` unless `input` is set (per-call
/// arguments), then `INVALID_INPUT`.
pub fn parse<T: DeserializeOwned>(value: OptionValue, input: bool) -> crate::Result<T> {
    T::deserialize(Reader::new(value)).map_err(|err| {
        let message = err.to_string();
        if input {
            Error::InvalidInput(message)
        } else {
            Error::ConfigInvalid(message)
        }
    })
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
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
    } else if matches!(
        expected,
        "f32" | "f64" | "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" | "usize"
    ) {
        "a number".into()
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
        Problem::MissingKey(key) => format!("option '{}' is required", join(path, &js_key(key))),
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

/// The deserializer over an [`OptionValue`]: struct keys in JavaScript spelling, the path of
/// every value kept for messages.
struct Reader {
    value: OptionValue,
    path: String,
    /// Keys the struct around a spread accepts besides the spread struct's own (for the
    /// message naming an unknown key).
    around: Vec<String>,
}

impl Reader {
    fn new(value: OptionValue) -> Self {
        Reader {
            value,
            path: String::new(),
            around: Vec::new(),
        }
    }
}

/// A timeout given in milliseconds (`timeoutMs`, each value of `toolTimeoutsMs`) checked by the
/// one timeout rule and handed on in seconds, the unit of the configuration types.
fn milliseconds_to_seconds(value: OptionValue, path: &str) -> Result<OptionValue, ReadError> {
    let convert = |ms: f64, path: &str| {
        TimeoutMs::check(ms)
            .map(|_| OptionValue::Number(ms / 1000.0))
            .map_err(|text| ReadError::at(Problem::BadValue(text), path))
    };
    match value {
        OptionValue::Number(ms) => convert(ms, path),
        OptionValue::Object(entries) => entries
            .into_iter()
            .map(|(key, value)| match value {
                OptionValue::Number(ms) => Ok((key.clone(), convert(ms, &join(path, &key))?)),
                other => Ok((key, other)),
            })
            .collect::<Result<_, _>>()
            .map(OptionValue::Object),
        other => Ok(other),
    }
}

/// The keys of a struct, in JavaScript spelling: `(field, key as written, value)`.
type StructEntries = std::vec::IntoIter<(&'static str, String, OptionValue)>;

struct StructAccess {
    entries: StructEntries,
    current: Option<(&'static str, String, OptionValue)>,
    path: String,
    around: Vec<String>,
}

impl<'de> de::MapAccess<'de> for StructAccess {
    type Error = ReadError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ReadError> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        let field = entry.0;
        self.current = Some(entry);
        seed.deserialize(de::value::BorrowedStrDeserializer::<ReadError>::new(field))
            .map(Some)
            .map_err(|err| err.located(&self.path))
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ReadError> {
        let (field, key, value) = self.current.take().ok_or_else(|| {
            ReadError::from(Problem::BadValue("has a value without a key".into()))
        })?;
        let (path, around) = if field == SPREAD {
            (self.path.clone(), std::mem::take(&mut self.around))
        } else {
            (join(&self.path, &key), Vec::new())
        };
        let reader = Reader {
            value,
            path: path.clone(),
            around,
        };
        seed.deserialize(reader).map_err(|err| err.located(&path))
    }
}

struct ObjectAccess {
    entries: std::vec::IntoIter<(String, OptionValue)>,
    current: Option<OptionValue>,
    current_path: String,
    path: String,
}

impl<'de> de::MapAccess<'de> for ObjectAccess {
    type Error = ReadError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ReadError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.current = Some(value);
        self.current_path = join(&self.path, &key);
        seed.deserialize(de::value::StringDeserializer::<ReadError>::new(key))
            .map(Some)
            .map_err(|err| err.located(&self.path))
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ReadError> {
        let value = self.current.take().unwrap_or(OptionValue::Undefined);
        let path = std::mem::take(&mut self.current_path);
        let reader = Reader {
            value,
            path: path.clone(),
            around: Vec::new(),
        };
        seed.deserialize(reader).map_err(|err| err.located(&path))
    }
}

struct ListAccess {
    items: std::iter::Enumerate<std::vec::IntoIter<OptionValue>>,
    path: String,
}

impl<'de> de::SeqAccess<'de> for ListAccess {
    type Error = ReadError;

    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ReadError> {
        let Some((index, value)) = self.items.next() else {
            return Ok(None);
        };
        let path = format!("{}[{index}]", self.path);
        let reader = Reader {
            value,
            path: path.clone(),
            around: Vec::new(),
        };
        seed.deserialize(reader)
            .map(Some)
            .map_err(|err| err.located(&path))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

fn present(entries: Vec<(String, OptionValue)>) -> Vec<(String, OptionValue)> {
    entries
        .into_iter()
        .filter(|(_, value)| *value != OptionValue::Undefined)
        .collect()
}

impl<'de> de::Deserializer<'de> for Reader {
    type Error = ReadError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        match self.value {
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
            OptionValue::List(items) => visitor.visit_seq(ListAccess {
                items: items.into_iter().enumerate(),
                path: self.path,
            }),
            OptionValue::Object(entries) => visitor.visit_map(ObjectAccess {
                entries: present(entries).into_iter(),
                current: None,
                current_path: String::new(),
                path: self.path,
            }),
            OptionValue::Opaque(what) => Err(Problem::WrongType {
                expected: "plain data".into(),
                got: what,
            }
            .into()),
        }
    }

    /// A struct's keys are read in JavaScript spelling: each key must be the spelling of one of
    /// `fields` ([`js_key`]); timeouts are converted from milliseconds; a [`SPREAD`] field
    /// receives the keys the others do not name.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        let OptionValue::Object(entries) = self.value else {
            return self.deserialize_any(visitor);
        };
        let spread = fields.contains(&SPREAD);
        let own: Vec<&'static str> = fields
            .iter()
            .copied()
            .filter(|field| *field != SPREAD)
            .collect();
        let mut matched = Vec::with_capacity(entries.len() + 1);
        let mut rest = Vec::new();
        for (key, value) in present(entries) {
            match own.iter().find(|field| js_key(field) == key) {
                Some(field) => {
                    let value = if holds_seconds(field) {
                        milliseconds_to_seconds(value, &join(&self.path, &key))?
                    } else {
                        value
                    };
                    matched.push((*field, key, value));
                }
                None if spread => rest.push((key, value)),
                None => {
                    let mut expected: Vec<String> = own.iter().map(|f| js_key(f)).collect();
                    expected.extend(self.around.iter().cloned());
                    return Err(ReadError::at(
                        Problem::UnknownKey { key, expected },
                        &self.path,
                    ));
                }
            }
        }
        let around = if spread {
            matched.push((SPREAD, String::new(), OptionValue::Object(rest)));
            let mut around: Vec<String> = own.iter().map(|f| js_key(f)).collect();
            around.extend(self.around);
            around
        } else {
            Vec::new()
        };
        visitor.visit_map(StructAccess {
            entries: matched.into_iter(),
            current: None,
            path: self.path,
            around,
        })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        match self.value {
            OptionValue::Undefined | OptionValue::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        match self.value {
            OptionValue::String(text) => visitor.visit_enum(text.into_deserializer()),
            other => Err(Problem::WrongType {
                expected: "a string".into(),
                got: other.describe(),
            }
            .into()),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier
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
