//! Which run and which tool call a process belongs to, as the egress proxy needs to know it:
//! who to ask about a host, what the run allowed already, where records go.

use std::fmt;
use std::sync::Arc;

use super::ask::{Asker, RunAllowances};
use super::policy::NetworkPolicy;
use super::proxy::CallContext;
use super::record::SharedSink;

/// A process's place in a run, handed to the executor with its request; the sandbox's host
/// policy completes it into the proxy's [`CallContext`].
#[derive(Clone)]
pub struct NetworkCall {
    pub tool_call_id: String,
    /// The tool whose process connects (what an approval request names).
    pub tool: String,
    /// What the run allowed with `always` (the same for every call of the run).
    pub run: Arc<RunAllowances>,
    /// The run's approval handler; `None` refuses what `ask` would ask about (fail closed).
    pub asker: Option<Arc<dyn Asker>>,
    /// Where the run's records go as connections close.
    pub sink: Option<SharedSink>,
}

impl NetworkCall {
    /// A call of no run: nobody to ask, nothing allowed before, no sink (a plain `exec`, a
    /// tool called outside a run).
    pub fn alone(tool_call_id: impl Into<String>, tool: impl Into<String>) -> Self {
        NetworkCall {
            tool_call_id: tool_call_id.into(),
            tool: tool.into(),
            run: RunAllowances::new(),
            asker: None,
            sink: None,
        }
    }

    /// The proxy's context for this call under `policy`.
    pub fn context(&self, policy: NetworkPolicy) -> CallContext {
        CallContext {
            tool_call_id: self.tool_call_id.clone(),
            tool: self.tool.clone(),
            policy,
            asker: self.asker.clone(),
            run: Arc::clone(&self.run),
            sink: self.sink.clone(),
            nobody_to_ask: None,
        }
    }
}

impl fmt::Debug for NetworkCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetworkCall")
            .field("tool_call_id", &self.tool_call_id)
            .field("tool", &self.tool)
            .field("asker", &self.asker.is_some())
            .field("sink", &self.sink.is_some())
            .finish()
    }
}
