//! Reading a built-in tool's input: strictly, with errors that name the tool and the field.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};

/// Deserializes the model's `input` for `tool`; an unknown field, a missing one or a wrong type
/// is `INVALID_INPUT` naming the field.
pub fn parse<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T> {
    let input = if input.is_null() {
        Value::Object(Default::default())
    } else {
        input
    };
    serde_path_to_error::deserialize(input).map_err(|err| {
        let path = err.path().to_string();
        let place = if path == "." {
            String::new()
        } else {
            format!(" at '{path}'")
        };
        Error::InvalidInput(format!("{tool}: invalid input{place}: {}", err.inner()))
    })
}
