//! One file-tool call as a napi `AsyncTask`: the work runs on libuv's thread pool (neither the
//! JavaScript thread nor toolgate's I/O runtime is blocked by a search or a large read), a
//! panic in it becomes `INTERNAL_ERROR`, and a core error rejects with the structured error.

use std::sync::Arc;

use napi::{Env, Task};
use toolgate_core::fs::access::{Access, CallGate};
use toolgate_core::fs::Cancel;
use toolgate_core::PathValidator;

use crate::error::{guard, to_js};

/// The work of one call: given what it may access and the cancel flag, produce the core output.
pub type Work<T> = Box<dyn FnOnce(Access<'_>, &Cancel) -> toolgate_core::Result<T> + Send>;

/// A file-tool call. `R` is what JavaScript receives.
pub struct FileTask<T, R> {
    pub(super) place: &'static str,
    pub(super) validator: Arc<PathValidator>,
    /// The path rules of the call, when its toolset has some.
    pub(super) call: Option<CallGate>,
    pub(super) cancel: Cancel,
    /// The work, or the error found while reading the arguments (it rejects the promise).
    pub(super) work: Option<toolgate_core::Result<Work<T>>>,
    pub(super) _result: std::marker::PhantomData<fn() -> R>,
}

impl<
        T: Send + 'static,
        R: From<T> + napi::bindgen_prelude::ToNapiValue + napi::bindgen_prelude::TypeName,
    > Task for FileTask<T, R>
{
    type Output = toolgate_core::Result<T>;
    type JsValue = R;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let work = self.work.take();
        let place = self.place;
        let validator = Arc::clone(&self.validator);
        let cancel = self.cancel.clone();
        let call = self.call.take();
        Ok(guard(place, move || match work {
            Some(Ok(work)) => work(Access::new(&validator, call.as_ref()), &cancel),
            Some(Err(err)) => Err(err),
            None => Err(toolgate_core::Error::Internal(format!("{place} ran twice"))),
        }))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        output.map(R::from).map_err(|err| to_js(&env, &err))
    }
}
