//! Numeric options, validated once with the same rules for every API: a JavaScript number is
//! finite, whole where a count is meant, and inside the limits of [`crate::limits`]. `NaN`,
//! the infinities, `1e300` and `Number.MAX_VALUE` are errors that say what is accepted. An
//! output cap is a [`ByteCount`] in worker files too, so both spellings follow one rule.
//!
//! A timeout of `0` is refused everywhere: it cannot mean "no timeout" in one API and "already
//! expired" in another. Leave the option out for the default.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};

use crate::limits::{MAX_COUNT, MAX_OUTPUT_BYTES, MAX_TIMEOUT};

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

/// Accepts any number and checks it with `check` while it is being read (so that a worker
/// file's error carries the key, the line and the column).
struct NumberVisitor<F>(F);

impl<T, F: FnOnce(f64) -> Result<T, String>> Visitor<'_> for NumberVisitor<F> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<T, E> {
        (self.0)(value).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<T, E> {
        self.visit_f64(value as f64)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<T, E> {
        self.visit_f64(value as f64)
    }
}

fn number<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    check: impl FnOnce(f64) -> Result<T, String>,
) -> Result<T, D::Error> {
    deserializer.deserialize_f64(NumberVisitor(check))
}

/// A timeout in milliseconds: from 1 to [`MAX_TIMEOUT`] (a day).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeoutMs(pub Duration);

impl TimeoutMs {
    /// Checks a number of milliseconds; the error completes "option 'timeoutMs' …".
    pub fn check(value: f64) -> Result<Duration, String> {
        let max = MAX_TIMEOUT.as_millis();
        if value.is_finite() && (1.0..=max as f64).contains(&value) {
            Ok(Duration::from_secs_f64(value / 1000.0))
        } else {
            Err(format!(
                "is {}; give a number of milliseconds from 1 to {max} (a day), or leave it out for the default",
                format_number(value)
            ))
        }
    }
}

impl<'de> Deserialize<'de> for TimeoutMs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        number(deserializer, |value| TimeoutMs::check(value).map(TimeoutMs))
    }
}

/// A whole number of bytes from 1 to [`MAX_OUTPUT_BYTES`] (1 GiB), for output caps
/// (`max_output_bytes`, `maxOutputBytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteCount(pub u64);

impl ByteCount {
    /// The cap as a `usize`.
    pub fn get(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl Serialize for ByteCount {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl JsonSchema for ByteCount {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "ByteCount".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_OUTPUT_BYTES,
        })
    }
}

impl<'de> Deserialize<'de> for ByteCount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        number(deserializer, |value| {
            whole(value, 1, MAX_OUTPUT_BYTES, "bytes").map(ByteCount)
        })
    }
}

/// A whole number from `MIN` to `MAX` (line numbers, result counts, depths).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count<const MIN: u64, const MAX: u64 = MAX_COUNT>(pub u64);

impl<const MIN: u64, const MAX: u64> Count<MIN, MAX> {
    /// The value as a `usize`.
    pub fn get(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Count<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        number(deserializer, |value| whole(value, MIN, MAX, "").map(Count))
    }
}

fn whole(value: f64, min: u64, max: u64, unit: &str) -> Result<u64, String> {
    if value.is_finite() && value.fract() == 0.0 && value >= min as f64 && value <= max as f64 {
        return Ok(value as u64);
    }
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!(" of {unit}")
    };
    Err(format!(
        "is {}; give a whole number{unit} from {min} to {max}",
        format_number(value)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::value::{parse, OptionValue};

    fn timeout(value: f64) -> crate::Result<TimeoutMs> {
        parse(OptionValue::Number(value), false)
    }

    #[test]
    fn timeouts_are_finite_positive_and_at_most_a_day() {
        assert_eq!(timeout(1.0).unwrap().0, Duration::from_millis(1));
        assert_eq!(timeout(86_400_000.0).unwrap().0, MAX_TIMEOUT);
        assert_eq!(timeout(1500.5).unwrap().0, Duration::from_micros(1_500_500));
        for bad in [
            0.0,
            -1.0,
            0.5,
            86_400_001.0,
            2e22,
            1e300,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let err = timeout(bad).unwrap_err();
            assert_eq!(err.code(), "CONFIG_INVALID", "{bad}");
            assert!(
                err.to_string().contains("milliseconds from 1 to 86400000"),
                "{err}"
            );
        }
        assert!(timeout(2e22).unwrap_err().to_string().contains("is 2e22"));
        assert!(timeout(f64::NAN)
            .unwrap_err()
            .to_string()
            .contains("is NaN"));
    }

    #[test]
    fn byte_counts_and_counts_are_whole_and_bounded() {
        let bytes = |value: f64| parse::<ByteCount>(OptionValue::Number(value), false);
        assert_eq!(bytes(1.0).unwrap().0, 1);
        assert_eq!(bytes(MAX_OUTPUT_BYTES as f64).unwrap().0, MAX_OUTPUT_BYTES);
        for bad in [
            0.0,
            1.5,
            -3.0,
            MAX_OUTPUT_BYTES as f64 + 1.0,
            f64::NAN,
            1e300,
        ] {
            assert!(bytes(bad).is_err(), "{bad}");
        }
        let count = |value: f64| parse::<Count<0, 20>>(OptionValue::Number(value), true);
        assert_eq!(count(0.0).unwrap().get(), 0);
        assert_eq!(count(20.0).unwrap().get(), 20);
        let err = count(21.0).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(err.to_string().contains("from 0 to 20"), "{err}");
        assert!(count(f64::INFINITY).is_err());
        let err = parse::<Count<1>>(OptionValue::String("3".into()), true).unwrap_err();
        assert!(
            err.to_string().contains("must be a number, got a string"),
            "{err}"
        );
    }
}
