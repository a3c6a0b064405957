//! Core errors reach JavaScript one way, synchronous or not: as an `Error` object built here
//! with `code` (an [`ErrorCode`]), `layer` (an [`ErrorLayer`]) and the message. Nothing is
//! encoded into the message, so the SDK never parses one.
//!
//! - Synchronous functions take the [`Env`] and return `napi::Result`, whose error holds the
//!   built object; napi throws that very object.
//! - Async functions return [`Settled`]: the outcome crosses threads as data and the error object
//!   is built on the JavaScript thread when the promise settles.
//! - Every entry point runs its work inside [`guard`] (or [`GuardedFuture`]): a panic becomes an
//!   `INTERNAL_ERROR` instead of aborting the host process.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use napi::bindgen_prelude::{JsObjectValue, ToNapiValue, TypeName};
use napi::{Env, JsValue, Status};
use napi_derive::napi;
use toolgate_core::error::{ErrorCode as CoreCode, ErrorLayer as CoreLayer};

/// The stable code of every toolgate error (`err.code`).
#[napi(string_enum = "UPPER_SNAKE")]
pub enum ErrorCode {
    PathOutsideRoot,
    BinaryNotAllowed,
    ShellNotAllowed,
    BinaryNotFound,
    SpawnFailed,
    ArgumentRejected,
    CommandBlocked,
    GuardrailBlocked,
    OutputBlocked,
    Timeout,
    ToolBlocked,
    PathBlocked,
    ApprovalDenied,
    InvalidInput,
    ToolNotFound,
    ToolFailed,
    ConfigInvalid,
    ModuleInvalid,
    FileNotFound,
    IoError,
    SandboxUnavailable,
    StateInvalid,
    InternalError,
}

impl From<CoreCode> for ErrorCode {
    fn from(code: CoreCode) -> Self {
        match code {
            CoreCode::PathOutsideRoot => ErrorCode::PathOutsideRoot,
            CoreCode::BinaryNotAllowed => ErrorCode::BinaryNotAllowed,
            CoreCode::ShellNotAllowed => ErrorCode::ShellNotAllowed,
            CoreCode::BinaryNotFound => ErrorCode::BinaryNotFound,
            CoreCode::SpawnFailed => ErrorCode::SpawnFailed,
            CoreCode::ArgumentRejected => ErrorCode::ArgumentRejected,
            CoreCode::CommandBlocked => ErrorCode::CommandBlocked,
            CoreCode::GuardrailBlocked => ErrorCode::GuardrailBlocked,
            CoreCode::OutputBlocked => ErrorCode::OutputBlocked,
            CoreCode::Timeout => ErrorCode::Timeout,
            CoreCode::ToolBlocked => ErrorCode::ToolBlocked,
            CoreCode::PathBlocked => ErrorCode::PathBlocked,
            CoreCode::ApprovalDenied => ErrorCode::ApprovalDenied,
            CoreCode::InvalidInput => ErrorCode::InvalidInput,
            CoreCode::ToolNotFound => ErrorCode::ToolNotFound,
            CoreCode::ToolFailed => ErrorCode::ToolFailed,
            CoreCode::ConfigInvalid => ErrorCode::ConfigInvalid,
            CoreCode::ModuleInvalid => ErrorCode::ModuleInvalid,
            CoreCode::FileNotFound => ErrorCode::FileNotFound,
            CoreCode::IoError => ErrorCode::IoError,
            CoreCode::SandboxUnavailable => ErrorCode::SandboxUnavailable,
            CoreCode::StateInvalid => ErrorCode::StateInvalid,
            CoreCode::InternalError => ErrorCode::InternalError,
        }
    }
}

/// The part of toolgate an error comes from (`err.layer`).
#[napi(string_enum = "kebab-case")]
pub enum ErrorLayer {
    Config,
    Approval,
    Input,
    Paths,
    Command,
    Process,
    Files,
    Tools,
    Sandbox,
    Internal,
}

impl From<CoreLayer> for ErrorLayer {
    fn from(layer: CoreLayer) -> Self {
        match layer {
            CoreLayer::Config => ErrorLayer::Config,
            CoreLayer::Approval => ErrorLayer::Approval,
            CoreLayer::Input => ErrorLayer::Input,
            CoreLayer::Paths => ErrorLayer::Paths,
            CoreLayer::Command => ErrorLayer::Command,
            CoreLayer::Process => ErrorLayer::Process,
            CoreLayer::Files => ErrorLayer::Files,
            CoreLayer::Tools => ErrorLayer::Tools,
            CoreLayer::Sandbox => ErrorLayer::Sandbox,
            CoreLayer::Internal => ErrorLayer::Internal,
        }
    }
}

/// Builds the JavaScript error for a core error and wraps it for napi to throw or reject with.
pub fn to_js(env: &Env, err: &toolgate_core::Error) -> napi::Error {
    let build = || -> napi::Result<napi::Error> {
        let mut object =
            env.create_error(napi::Error::new(Status::GenericFailure, err.to_string()))?;
        object.set_named_property("code", err.code())?;
        object.set_named_property("layer", err.layer().as_str())?;
        Ok(napi::Error::from(object.to_unknown()))
    };
    // Building can only fail while the environment shuts down; the plain error still carries
    // the message.
    build().unwrap_or_else(|fallback| fallback)
}

/// Runs `work` and turns a panic into an `INTERNAL_ERROR` naming where it happened.
pub fn guard<T>(
    place: &str,
    work: impl FnOnce() -> toolgate_core::Result<T>,
) -> toolgate_core::Result<T> {
    catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| Err(panic_error(place, &panic)))
}

/// Runs a synchronous entry point that cannot fail but for a bug: a panic becomes an
/// `INTERNAL_ERROR`.
pub fn infallible<T>(env: &Env, place: &str, work: impl FnOnce() -> T) -> napi::Result<T> {
    sync(env, place, || Ok(work()))
}

/// Runs a synchronous entry point: panics and core errors become JavaScript errors.
pub fn sync<T>(
    env: &Env,
    place: &str,
    work: impl FnOnce() -> toolgate_core::Result<T>,
) -> napi::Result<T> {
    guard(place, work).map_err(|err| to_js(env, &err))
}

fn panic_error(place: &str, panic: &Box<dyn std::any::Any + Send>) -> toolgate_core::Error {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    // The payload can quote the whole input (a 400 KB pattern); the start says enough.
    let message: String = message.chars().take(300).collect();
    toolgate_core::Error::Internal(format!("{place}: {message}"))
}

/// A future whose panics become `INTERNAL_ERROR`s.
pub struct GuardedFuture<F> {
    place: &'static str,
    inner: Pin<Box<F>>,
}

impl<T, F: Future<Output = toolgate_core::Result<T>>> Future for GuardedFuture<F> {
    type Output = Settled<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Settled<T>> {
        let place = self.place;
        let inner = self.inner.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(Settled(result)),
            Err(panic) => Poll::Ready(Settled(Err(panic_error(place, &panic)))),
        }
    }
}

/// Guards an async entry point (see [`GuardedFuture`]).
pub fn guarded<T, F: Future<Output = toolgate_core::Result<T>>>(
    place: &'static str,
    future: F,
) -> GuardedFuture<F> {
    GuardedFuture {
        place,
        inner: Box::pin(future),
    }
}

/// The outcome of async work, settled on the JavaScript thread: the value, or a rejection with
/// the error object built by [`to_js`].
pub struct Settled<T>(pub toolgate_core::Result<T>);

impl<T: TypeName> TypeName for Settled<T> {
    fn type_name() -> &'static str {
        T::type_name()
    }

    fn value_type() -> napi::ValueType {
        T::value_type()
    }
}

impl<T: ToNapiValue> ToNapiValue for Settled<T> {
    unsafe fn to_napi_value(
        env: napi::sys::napi_env,
        value: Self,
    ) -> napi::Result<napi::sys::napi_value> {
        match value.0 {
            Ok(value) => unsafe { T::to_napi_value(env, value) },
            Err(err) => Err(to_js(&Env::from_raw(env), &err)),
        }
    }
}

/// Every error code, in documentation order (the runtime list behind the `ErrorCode` type).
#[napi(js_name = "errorCodes")]
pub fn error_codes_js(env: Env) -> napi::Result<Vec<ErrorCode>> {
    infallible(&env, "errorCodes", error_codes)
}

/// Every error code, in documentation order.
pub fn error_codes() -> Vec<ErrorCode> {
    CoreCode::ALL.into_iter().map(ErrorCode::from).collect()
}
