//! Core errors reach JavaScript one way, synchronous or not: as an `Error` object built here
//! with `code`, `layer` and the message. Nothing is encoded into the message, so the SDK never
//! parses one.
//!
//! The binding keeps no list of codes or layers: both are the core's (`ErrorCode::ALL`,
//! `ErrorLayer::ALL`, spelled by their `as_str`). `errorCodes()` and `constants().errorLayers`
//! hand them to JavaScript, and `scripts/write-native-binding.mjs` writes the `ErrorCode` and
//! `ErrorLayer` unions of `binding.d.ts` from them when the addon is built.
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
use toolgate_core::error::{ErrorCode, ErrorLayer};

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

/// Every error code, in documentation order (the list the `ErrorCode` type is written from).
#[napi(js_name = "errorCodes", ts_return_type = "ErrorCode[]")]
pub fn error_codes_js(env: Env) -> napi::Result<Vec<String>> {
    infallible(&env, "errorCodes", error_codes)
}

/// Every error code, in documentation order, as JavaScript spells it.
pub fn error_codes() -> Vec<String> {
    ErrorCode::ALL
        .into_iter()
        .map(|code| code.as_str().to_owned())
        .collect()
}

/// Every error layer, as JavaScript spells it.
pub fn error_layers() -> Vec<String> {
    ErrorLayer::ALL
        .into_iter()
        .map(|layer| layer.as_str().to_owned())
        .collect()
}
