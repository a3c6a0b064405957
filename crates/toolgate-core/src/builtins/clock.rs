//! `datetime_now` (the `jiff` crate: IANA time zones, strftime formats) and `uuid_generate`
//! (the `uuid` crate: v4 random, v7 time-ordered).

use serde::Deserialize;
use serde_json::{json, Value};

use super::input;
use crate::error::{Error, Result};
use crate::limits::{MAX_DATETIME_FORMAT_BYTES, MAX_UUIDS};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DatetimeInput {
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    format: Option<String>,
}

/// `datetime_now`: the current time in a time zone (default UTC), ISO 8601 and optionally in
/// a strftime `format`.
pub fn datetime_now(value: Value) -> Result<Value> {
    let request: DatetimeInput = input::parse("datetime_now", value)?;
    let zone_name = request.timezone.unwrap_or_else(|| "UTC".into());
    if zone_name.len() > 64 {
        return Err(Error::InvalidInput(
            "datetime_now: the timezone name is longer than 64 characters".into(),
        ));
    }
    let now = jiff::Timestamp::now();
    let zoned = now.in_tz(&zone_name).map_err(|err| {
        Error::InvalidInput(format!(
            "datetime_now: '{zone_name}' is not a known IANA time zone ({err}); use names like 'UTC', 'Europe/Berlin', 'America/New_York'"
        ))
    })?;
    let formatted = match &request.format {
        None => None,
        Some(format) if format.len() > MAX_DATETIME_FORMAT_BYTES => {
            return Err(Error::InvalidInput(format!(
                "datetime_now: the format is longer than {MAX_DATETIME_FORMAT_BYTES} bytes"
            )))
        }
        Some(format) => Some(jiff::fmt::strtime::format(format, &zoned).map_err(|err| {
            Error::InvalidInput(format!(
                "datetime_now: '{format}' is not a strftime format this tool understands ({err}); e.g. '%Y-%m-%d %H:%M:%S %Z'"
            ))
        })?),
    };
    Ok(json!({
        "iso": zoned.strftime("%Y-%m-%dT%H:%M:%S%.f%:z").to_string(),
        "timezone": zone_name,
        "unix": now.as_second(),
        "unix_ms": now.as_millisecond(),
        "weekday": zoned.strftime("%A").to_string(),
        "formatted": formatted,
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UuidInput {
    #[serde(default)]
    version: Option<Value>,
    #[serde(default)]
    count: Option<u32>,
}

/// `uuid_generate`: `count` (default 1) UUIDs of `version` 4 (default, random) or 7
/// (time-ordered).
pub fn uuid_generate(value: Value) -> Result<Value> {
    let request: UuidInput = input::parse("uuid_generate", value)?;
    let version = match &request.version {
        None => 4,
        Some(Value::Number(n)) if n.as_u64() == Some(4) => 4,
        Some(Value::Number(n)) if n.as_u64() == Some(7) => 7,
        Some(Value::String(text)) if matches!(text.as_str(), "4" | "v4") => 4,
        Some(Value::String(text)) if matches!(text.as_str(), "7" | "v7") => 7,
        Some(other) => {
            return Err(Error::InvalidInput(format!(
                "uuid_generate: version {other} is not supported; use 'v4' (random) or 'v7' (time-ordered)"
            )))
        }
    };
    let count = request.count.unwrap_or(1);
    if count == 0 || count > MAX_UUIDS {
        return Err(Error::InvalidInput(format!(
            "uuid_generate: count must be between 1 and {MAX_UUIDS}, got {count}"
        )));
    }
    let uuids: Vec<String> = (0..count)
        .map(|_| match version {
            7 => uuid::Uuid::now_v7(),
            _ => uuid::Uuid::new_v4(),
        })
        .map(|id| id.to_string())
        .collect();
    Ok(json!({ "version": format!("v{version}"), "uuids": uuids }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetime_now_in_zones_and_formats() {
        let out = datetime_now(json!({"timezone": "Asia/Tokyo", "format": "%Y|%Z"})).unwrap();
        assert!(out["iso"].as_str().unwrap().ends_with("+09:00"), "{out}");
        assert!(
            out["formatted"].as_str().unwrap().ends_with("|JST"),
            "{out}"
        );
        let utc = datetime_now(json!({})).unwrap();
        assert!(utc["iso"].as_str().unwrap().ends_with("+00:00"), "{utc}");
        let err = datetime_now(json!({"timezone": "Mars/Olympus"})).unwrap_err();
        assert!(err.to_string().contains("IANA"), "{err}");
        let err = datetime_now(json!({"format": "%Q%"})).unwrap_err();
        assert_eq!(err.error_code(), crate::ErrorCode::InvalidInput);
    }

    #[test]
    fn uuid_generate_v4_and_v7() {
        let out = uuid_generate(json!({"version": "v7", "count": 3})).unwrap();
        let ids: Vec<uuid::Uuid> = out["uuids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_str().unwrap().parse().unwrap())
            .collect();
        assert!(ids.iter().all(|id| id.get_version_num() == 7));
        assert!(
            ids.windows(2).all(|pair| pair[0] <= pair[1]),
            "v7 ids sort by time"
        );
        let one = uuid_generate(json!({})).unwrap();
        let id: uuid::Uuid = one["uuids"][0].as_str().unwrap().parse().unwrap();
        assert_eq!(id.get_version_num(), 4);
        assert!(uuid_generate(json!({"version": 1})).is_err());
        assert!(uuid_generate(json!({"count": 101})).is_err());
        assert!(uuid_generate(json!({"count": 0})).is_err());
    }
}
