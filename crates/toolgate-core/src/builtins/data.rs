//! `json_parse` (JSON text queried with an RFC 9535 JSONPath expression, `serde_json_path`) and
//! `csv_parse` (the `csv` crate). Pure functions of their input; sizes are bounded first.

use serde::Deserialize;
use serde_json::{json, Map, Value};
use serde_json_path::JsonPath;

use super::input;
use crate::error::{Error, Result};
use crate::limits::{
    DEFAULT_CSV_ROWS, MAX_CSV_ROWS, MAX_DATA_BYTES, MAX_JSON_PATH_BYTES, MAX_JSON_PATH_NESTING,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonParseInput {
    data: String,
    #[serde(default)]
    path: Option<String>,
}

fn check_size(tool: &str, data: &str) -> Result<()> {
    if data.len() > MAX_DATA_BYTES {
        return Err(Error::InvalidInput(format!(
            "{tool}: data is {} bytes, at most {MAX_DATA_BYTES} are accepted",
            data.len()
        )));
    }
    Ok(())
}

/// `json_parse`: parses `data`; with `path`, returns the values the expression selects.
pub fn json_parse(value: Value) -> Result<Value> {
    let request: JsonParseInput = input::parse("json_parse", value)?;
    check_size("json_parse", &request.data)?;
    // serde_json stops at 128 levels of nesting, so hostile input cannot exhaust the stack.
    let document: Value = serde_json::from_str(&request.data)
        .map_err(|err| Error::InvalidInput(format!("json_parse: data is not valid JSON: {err}")))?;
    let Some(path) = request.path else {
        return Ok(json!({ "result": document }));
    };
    let compiled = compile_path(&path)?;
    let matches: Vec<Value> = compiled
        .query(&document)
        .all()
        .into_iter()
        .cloned()
        .collect();
    Ok(json!({ "path": path, "count": matches.len(), "matches": matches }))
}

fn compile_path(path: &str) -> Result<JsonPath> {
    if path.len() > MAX_JSON_PATH_BYTES {
        return Err(Error::InvalidInput(format!(
            "json_parse: the path is longer than {MAX_JSON_PATH_BYTES} bytes"
        )));
    }
    let mut depth = 0usize;
    for c in path.chars() {
        match c {
            '[' | '(' => {
                depth += 1;
                if depth > MAX_JSON_PATH_NESTING {
                    return Err(Error::InvalidInput(format!(
                        "json_parse: the path nests brackets more than {MAX_JSON_PATH_NESTING} deep"
                    )));
                }
            }
            ']' | ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    JsonPath::parse(path).map_err(|err| {
        Error::InvalidInput(format!(
            "json_parse: '{path}' is not an RFC 9535 JSONPath expression ({err}); examples: '$.items[0].name', '$..id', '$.items[?@.price < 10]'"
        ))
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CsvParseInput {
    data: String,
    #[serde(default)]
    delimiter: Option<String>,
    #[serde(default)]
    quote: Option<String>,
    #[serde(default = "yes")]
    has_header: bool,
    #[serde(default)]
    max_rows: Option<u64>,
}

fn yes() -> bool {
    true
}

fn one_byte(tool: &str, field: &str, text: Option<&str>, default: u8) -> Result<u8> {
    match text {
        None => Ok(default),
        Some("\\t") | Some("\t") => Ok(b'\t'),
        Some(text) if text.len() == 1 && text.is_ascii() => Ok(text.as_bytes()[0]),
        Some(text) => Err(Error::InvalidInput(format!(
            "{tool}: {field} must be one ASCII character, got '{text}'"
        ))),
    }
}

/// `csv_parse`: rows as objects keyed by the header row (or as arrays without one).
pub fn csv_parse(value: Value) -> Result<Value> {
    let request: CsvParseInput = input::parse("csv_parse", value)?;
    check_size("csv_parse", &request.data)?;
    let delimiter = one_byte("csv_parse", "delimiter", request.delimiter.as_deref(), b',')?;
    let quote = one_byte("csv_parse", "quote", request.quote.as_deref(), b'"')?;
    let max_rows = match request.max_rows {
        None => DEFAULT_CSV_ROWS,
        Some(0) => {
            return Err(Error::InvalidInput(
                "csv_parse: max_rows must be at least 1".into(),
            ))
        }
        Some(n) if n > MAX_CSV_ROWS as u64 => {
            return Err(Error::InvalidInput(format!(
                "csv_parse: max_rows is {n}, at most {MAX_CSV_ROWS} rows are returned"
            )))
        }
        Some(n) => n as usize,
    };
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .quote(quote)
        .has_headers(request.has_header)
        .from_reader(request.data.as_bytes());
    let csv_error = |err: csv::Error| {
        let line = err
            .position()
            .map(|position| format!(" (line {})", position.line()))
            .unwrap_or_default();
        Error::InvalidInput(format!("csv_parse: the data is not valid CSV{line}: {err}"))
    };
    let headers: Option<Vec<String>> = if request.has_header {
        Some(
            reader
                .headers()
                .map_err(csv_error)?
                .iter()
                .map(str::to_string)
                .collect(),
        )
    } else {
        None
    };
    let mut rows = Vec::new();
    let mut truncated = false;
    for record in reader.records() {
        let record = record.map_err(csv_error)?;
        if rows.len() == max_rows {
            truncated = true;
            break;
        }
        let row = match &headers {
            Some(names) => {
                let mut object = Map::new();
                for (name, field) in names.iter().zip(record.iter()) {
                    object.insert(name.clone(), Value::String(field.to_string()));
                }
                Value::Object(object)
            }
            None => Value::Array(
                record
                    .iter()
                    .map(|f| Value::String(f.to_string()))
                    .collect(),
            ),
        };
        rows.push(row);
    }
    Ok(json!({
        "headers": headers,
        "rows": rows,
        "row_count": rows.len(),
        "truncated": truncated,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_parse_queries_with_jsonpath() {
        let data = r#"{"items":[{"name":"a","price":5},{"name":"b","price":20}]}"#;
        let out = json_parse(json!({"data": data, "path": "$.items[?@.price < 10].name"})).unwrap();
        assert_eq!(out["matches"], json!(["a"]));
        assert_eq!(out["count"], 1);
        let whole = json_parse(json!({"data": "[1,2]"})).unwrap();
        assert_eq!(whole["result"], json!([1, 2]));
    }

    #[test]
    fn json_parse_refuses_bad_input_with_reasons() {
        let err = json_parse(json!({"data": "{nope"})).unwrap_err();
        assert!(err.to_string().contains("not valid JSON"), "{err}");
        let err = json_parse(json!({"data": "{}", "path": "items"})).unwrap_err();
        assert!(err.to_string().contains("RFC 9535"), "{err}");
        let deep = format!("$.a{}", "[?(".repeat(40));
        let err = json_parse(json!({"data": "{}", "path": deep})).unwrap_err();
        assert!(err.to_string().contains("nests"), "{err}");
        let nested = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        let err = json_parse(json!({"data": nested})).unwrap_err();
        assert_eq!(err.error_code(), crate::ErrorCode::InvalidInput);
        let err = json_parse(json!({"data": "1", "extra": true})).unwrap_err();
        assert!(err.to_string().contains("extra"), "{err}");
        let big = "1".repeat(MAX_DATA_BYTES + 1);
        assert!(json_parse(json!({ "data": big })).is_err());
    }

    #[test]
    fn csv_parse_handles_headers_delimiters_quotes_and_limits() {
        let data = "name;note\n\"Ada\";\"likes ; and \"\"quotes\"\"\"\nBob;x\n";
        let out = csv_parse(json!({"data": data, "delimiter": ";"})).unwrap();
        assert_eq!(out["headers"], json!(["name", "note"]));
        assert_eq!(out["rows"][0]["note"], "likes ; and \"quotes\"");
        assert_eq!(out["row_count"], 2);
        let limited = csv_parse(json!({"data": data, "delimiter": ";", "max_rows": 1})).unwrap();
        assert_eq!(limited["row_count"], 1);
        assert_eq!(limited["truncated"], true);
        let plain = csv_parse(json!({"data": "1,2\n3,4\n", "has_header": false})).unwrap();
        assert_eq!(plain["rows"], json!([["1", "2"], ["3", "4"]]));
        let err = csv_parse(json!({"data": "a,b\n1,2,3\n"})).unwrap_err();
        assert!(err.to_string().contains("line"), "{err}");
        let err = csv_parse(json!({"data": "a", "delimiter": "::"})).unwrap_err();
        assert!(err.to_string().contains("one ASCII character"), "{err}");
        assert!(csv_parse(json!({"data": "a", "max_rows": 10_001})).is_err());
    }
}
