//! `math_calculate`: arithmetic with the `evalexpr` crate, an expression evaluator that runs no
//! code (no loops, no user functions, no I/O; `random` and regex functions are compiled out).
//! The context is read-only, so assignments fail. Time is bounded by size: the expression is
//! at most [`MAX_EXPRESSION_BYTES`] long and nests at most [`MAX_EXPRESSION_NESTING`] deep (the parser
//! recurses), and evaluation visits each node once.

use evalexpr::{ContextWithMutableVariables, HashMapContext, Value as ExprValue};
use serde::Deserialize;
use serde_json::{json, Value};

use super::input;
use crate::error::{Error, Result};
use crate::limits::{MAX_EXPRESSION_BYTES, MAX_EXPRESSION_NESTING};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MathInput {
    expression: String,
}

/// `math_calculate`: evaluates `expression` (`+ - * / % ^`, comparisons, `math::sqrt(x)`,
/// `math::sin(x)`, `min(a, b)`, `floor(x)`, constants `pi` and `e`).
pub fn math_calculate(value: Value) -> Result<Value> {
    let request: MathInput = input::parse("math_calculate", value)?;
    let expression = request.expression.trim();
    if expression.is_empty() {
        return Err(Error::InvalidInput(
            "math_calculate: the expression is empty".into(),
        ));
    }
    if expression.len() > MAX_EXPRESSION_BYTES {
        return Err(Error::InvalidInput(format!(
            "math_calculate: the expression is longer than {MAX_EXPRESSION_BYTES} bytes"
        )));
    }
    let bytes = expression.as_bytes();
    let mut depth = 0usize;
    for (index, &byte) in bytes.iter().enumerate() {
        match byte {
            b'(' => {
                depth += 1;
                if depth > MAX_EXPRESSION_NESTING {
                    return Err(Error::InvalidInput(format!(
                        "math_calculate: parentheses nest more than {MAX_EXPRESSION_NESTING} deep"
                    )));
                }
            }
            b')' => depth = depth.saturating_sub(1),
            // Statement chains and assignments are the language's only ways to build state.
            b';' => return Err(not_allowed(';')),
            b'=' if !is_comparison(bytes, index) => return Err(not_allowed('=')),
            _ => {}
        }
    }
    let mut context = HashMapContext::new();
    context
        .set_value("pi".into(), ExprValue::Float(std::f64::consts::PI))
        .and_then(|_| context.set_value("e".into(), ExprValue::Float(std::f64::consts::E)))
        .map_err(|err| Error::Internal(format!("math_calculate constants: {err}")))?;
    let result = evalexpr::eval_with_context(expression, &context).map_err(|err| {
        Error::InvalidInput(format!(
            "math_calculate: '{expression}' cannot be evaluated: {err}"
        ))
    })?;
    let value = match result {
        ExprValue::Int(n) => json!(n),
        ExprValue::Float(x) if x.is_finite() => json!(x),
        ExprValue::Float(x) => json!(x.to_string()),
        ExprValue::Boolean(b) => json!(b),
        other => {
            return Err(Error::InvalidInput(format!(
                "math_calculate: '{expression}' is not a number (it evaluates to {other})"
            )))
        }
    };
    Ok(json!({ "expression": expression, "result": value }))
}

fn not_allowed(c: char) -> Error {
    Error::InvalidInput(format!(
        "math_calculate: '{c}' is not allowed; give one expression without assignments"
    ))
}

/// Whether the `=` at `index` belongs to `==`, `!=`, `<=` or `>=`.
fn is_comparison(bytes: &[u8], index: usize) -> bool {
    let before = index.checked_sub(1).map(|i| bytes[i]);
    let after = bytes.get(index + 1).copied();
    match before {
        Some(b'!') | Some(b'<') | Some(b'>') => true,
        Some(b'=') => index < 2 || bytes[index - 2] != b'=',
        _ => after == Some(b'=') && bytes.get(index + 2) != Some(&b'='),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calc(expression: &str) -> Result<Value> {
        math_calculate(json!({ "expression": expression })).map(|out| out["result"].clone())
    }

    #[test]
    fn evaluates_arithmetic_and_functions() {
        assert_eq!(calc("2 + 3 * 4").unwrap(), json!(14));
        assert_eq!(calc("(1 + 2) ^ 2").unwrap(), json!(9.0));
        assert_eq!(calc("math::sqrt(16)").unwrap(), json!(4.0));
        assert_eq!(calc("max(3, 7)").unwrap(), json!(7));
        assert_eq!(calc("1 <= 2").unwrap(), json!(true));
        assert_eq!(calc("2 == 2").unwrap(), json!(true));
        let pi = calc("pi * 2").unwrap().as_f64().unwrap();
        assert!((pi - std::f64::consts::TAU).abs() < 1e-12);
        assert_eq!(calc("1 / 0.0").unwrap(), json!("inf"));
    }

    #[test]
    fn refuses_state_code_and_oversized_input() {
        for expression in ["a = 5", "x = 1; x", "pi = 3", "a += 1", ""] {
            assert!(calc(expression).is_err(), "{expression} must be refused");
        }
        let err = calc("9223372036854775807 + 1").unwrap_err();
        assert!(err.to_string().contains("cannot be evaluated"), "{err}");
        let err = calc("1 / 0").unwrap_err();
        assert_eq!(err.error_code(), crate::ErrorCode::InvalidInput);
        let err = calc(&format!("{}1{}", "(".repeat(200), ")".repeat(200))).unwrap_err();
        assert!(err.to_string().contains("nest"), "{err}");
        let err = calc(&"1+".repeat(600)).unwrap_err();
        assert!(err.to_string().contains("longer"), "{err}");
        assert!(calc("random()").is_err());
        assert!(calc("str::regex_matches(\"a\", \"a\")").is_err());
        assert!(calc("\"text\"").is_err());
    }
}
