//! One spelling of a JSON value: object keys sorted at every depth, no whitespace. Two inputs
//! that mean the same thing (`{"a":1,"b":2}` and `{"b":2,"a":1}`) get the same text, so an
//! "always" answer for a call and a hash of a worker description do not depend on key order.

use serde_json::Value;

/// The canonical text of `value`: keys sorted (by their UTF-8 bytes) at every depth.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter_and_values_do() {
        let a = json!({"b": [1, {"y": true, "x": null}], "a": "s"});
        let b = json!({"a": "s", "b": [1, {"x": null, "y": true}]});
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(
            canonical_json(&a),
            r#"{"a":"s","b":[1,{"x":null,"y":true}]}"#
        );
        assert_ne!(
            canonical_json(&json!({"a": [1, 2]})),
            canonical_json(&json!({"a": [2, 1]}))
        );
        assert_ne!(
            canonical_json(&json!({"a": "1"})),
            canonical_json(&json!({"a": 1}))
        );
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(canonical_json(&json!("a\"b\n")), r#""a\"b\n""#);
        assert_eq!(canonical_json(&json!({"k\"": 1})), r#"{"k\"":1}"#);
    }
}
