//! Options objects cross the boundary untyped and are read by the core, strictly
//! ([`toolgate_core::options`]): this module only copies a JavaScript value into an
//! [`OptionValue`], without interpreting it. Values only JavaScript can use (functions,
//! AbortSignals, class instances) are kept as opaque markers, so that a key holding one is
//! still a known or an unknown key.

use napi::bindgen_prelude::{JsObjectValue, Object, TypedArray, Unknown};
use napi::{Env, JsValue, ValueType};
use serde::de::DeserializeOwned;
use toolgate_core::limits::MAX_OPTIONS_DEPTH;
use toolgate_core::options::{self, OptionValue};
use toolgate_core::Error;

/// Most values one options object may hold: a guard against huge inputs, not a real limit.
const MAX_VALUES: usize = 1_000_000;

struct Walk<'env> {
    env: &'env Env,
    object_prototype: Unknown<'env>,
    values: usize,
    input: bool,
}

fn refused(input: bool, message: String) -> Error {
    if input {
        Error::InvalidInput(message)
    } else {
        Error::ConfigInvalid(message)
    }
}

fn napi_failure(err: napi::Error) -> Error {
    Error::InvalidInput(format!("the value cannot be read: {}", err.reason))
}

impl<'env> Walk<'env> {
    fn value(&mut self, value: Unknown<'env>, depth: usize) -> Result<OptionValue, Error> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(refused(
                self.input,
                format!("the options hold more than {MAX_VALUES} values; pass less data"),
            ));
        }
        if depth > MAX_OPTIONS_DEPTH {
            return Err(refused(
                self.input,
                format!("the options nest deeper than {MAX_OPTIONS_DEPTH} levels"),
            ));
        }
        let converted = match value.get_type().map_err(napi_failure)? {
            ValueType::Undefined => OptionValue::Undefined,
            ValueType::Null => OptionValue::Null,
            ValueType::Boolean => {
                OptionValue::Bool(unsafe { value.cast::<bool>() }.map_err(napi_failure)?)
            }
            ValueType::Number => {
                OptionValue::Number(unsafe { value.cast::<f64>() }.map_err(napi_failure)?)
            }
            ValueType::String => {
                OptionValue::String(unsafe { value.cast::<String>() }.map_err(napi_failure)?)
            }
            ValueType::Function => OptionValue::Opaque("a function".into()),
            ValueType::Symbol => OptionValue::Opaque("a symbol".into()),
            ValueType::BigInt => OptionValue::Opaque("a bigint".into()),
            ValueType::Object => self.object(value, depth)?,
            _ => OptionValue::Opaque("a native value".into()),
        };
        Ok(converted)
    }

    fn object(&mut self, value: Unknown<'env>, depth: usize) -> Result<OptionValue, Error> {
        let object: Object<'env> = unsafe { value.cast() }.map_err(napi_failure)?;
        if object.is_array().map_err(napi_failure)? {
            let length = object.get_array_length().map_err(napi_failure)?;
            let mut items = Vec::new();
            for index in 0..length {
                let item: Unknown<'env> = object.get_element(index).map_err(napi_failure)?;
                items.push(self.value(item, depth + 1)?);
            }
            return Ok(OptionValue::List(items));
        }
        if object.is_typedarray().map_err(napi_failure)? {
            let bytes: TypedArray = unsafe { value.cast() }.map_err(napi_failure)?;
            let data: &[u8] = &bytes.arraybuffer;
            return Ok(OptionValue::Bytes(data.to_vec()));
        }
        if object.is_buffer().map_err(napi_failure)? {
            let bytes: napi::bindgen_prelude::Buffer =
                unsafe { value.cast() }.map_err(napi_failure)?;
            return Ok(OptionValue::Bytes(bytes.to_vec()));
        }
        let prototype = object.get_prototype().map_err(napi_failure)?;
        let plain = prototype.get_type().map_err(napi_failure)? == ValueType::Null
            || self
                .env
                .strict_equals(prototype, self.object_prototype)
                .map_err(napi_failure)?;
        if !plain {
            return Ok(OptionValue::Opaque(describe_instance(&object)));
        }
        let keys = object.get_property_names().map_err(napi_failure)?;
        let count = keys.get_array_length().map_err(napi_failure)?;
        let mut entries = Vec::new();
        for index in 0..count {
            let key: String = keys.get_element(index).map_err(napi_failure)?;
            let entry: Unknown<'env> = object.get_named_property(&key).map_err(napi_failure)?;
            entries.push((key, self.value(entry, depth + 1)?));
        }
        Ok(OptionValue::Object(entries))
    }
}

/// `an instance of AbortSignal`, or `an object` when the constructor cannot be named.
fn describe_instance(object: &Object<'_>) -> String {
    object
        .get_named_property::<Object>("constructor")
        .and_then(|constructor| constructor.get_named_property::<String>("name"))
        .ok()
        .filter(|name| !name.is_empty())
        .map_or_else(
            || "an object that is not plain data".to_string(),
            |name| format!("an instance of {name}"),
        )
}

/// Copies a JavaScript value for the core.
pub fn copy(env: &Env, value: Unknown<'_>, input: bool) -> Result<OptionValue, Error> {
    let global = env.get_global().map_err(napi_failure)?;
    // `Object` is a function; it is read as an object to reach its `prototype`.
    let object: Object = global
        .get_named_property_unchecked("Object")
        .map_err(napi_failure)?;
    let object_prototype: Unknown = object
        .get_named_property("prototype")
        .map_err(napi_failure)?;
    let mut walk = Walk {
        env,
        object_prototype,
        values: 0,
        input,
    };
    walk.value(value, 0)
}

/// Reads construction options (`CONFIG_INVALID` when wrong). `undefined` reads as `{}`.
pub fn config<T: DeserializeOwned>(env: &Env, value: Option<Unknown<'_>>) -> Result<T, Error> {
    read(env, value, false)
}

/// Reads per-call arguments (`INVALID_INPUT` when wrong). `undefined` reads as `{}`.
pub fn input<T: DeserializeOwned>(env: &Env, value: Option<Unknown<'_>>) -> Result<T, Error> {
    read(env, value, true)
}

fn read<T: DeserializeOwned>(
    env: &Env,
    value: Option<Unknown<'_>>,
    input: bool,
) -> Result<T, Error> {
    let copied = match value {
        Some(value) => copy(env, value, input)?,
        None => OptionValue::Undefined,
    };
    let copied = match copied {
        OptionValue::Undefined => OptionValue::Object(Vec::new()),
        other => other,
    };
    options::parse(copied, input)
}
