//! Core errors reach JavaScript as `Error`s that carry the stable toolgate code.
//!
//! Synchronous functions use napi's custom status, so JavaScript sees `err.code` directly.
//! napi-rs cannot give a rejected promise a custom status (async errors are converted to the
//! default `Status` before they reach the JavaScript thread), so async functions put the code
//! in front of the message as `CODE: message`; the TypeScript layer (`ts/src/errors.ts`) turns
//! both forms into a `ToolgateError`.

/// The napi status of a toolgate error: its stable code, which JavaScript sees as `err.code`.
pub struct Code(pub &'static str);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.0
    }
}

/// The error type of every fallible synchronous binding function.
pub type NodeError = napi::Error<Code>;

/// Converts a core error into a JavaScript error carrying its code (synchronous functions).
pub fn to_napi(err: toolgate_core::Error) -> NodeError {
    napi::Error::new(Code(err.code()), err.to_string())
}

/// Converts a core error for a rejected promise: `CODE: message`.
pub fn to_napi_async(err: toolgate_core::Error) -> napi::Error {
    napi::Error::from_reason(format!("{}: {err}", err.code()))
}

/// An `INVALID_INPUT` error for arguments the binding cannot convert.
pub fn invalid_input(message: impl Into<String>) -> NodeError {
    napi::Error::new(Code("INVALID_INPUT"), message.into())
}
