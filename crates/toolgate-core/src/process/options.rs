//! `exec()` options, read by [`crate::options::parse`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::error::Result;
use crate::exec::ExecRequest;
use crate::options::{ByteCount, JsOnly, TimeoutMs, WorkDir};
use crate::sandbox_config::{prepare_cached, SandboxOption, SandboxScope};

/// What `exec` runs. `command` is an absolute path, a path relative to `cwd`, or a name looked
/// up on `env.PATH`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecOptions {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Working directory (default: the current directory).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The complete environment of the child; nothing is inherited.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Bytes written to stdin; without it stdin is `/dev/null`.
    #[serde(default)]
    pub stdin: Option<Stdin>,
    #[serde(default)]
    pub timeout_ms: Option<TimeoutMs>,
    #[serde(default)]
    pub max_output_bytes: Option<ByteCount>,
    /// Aborting kills the process group (handled by the SDK).
    #[serde(default)]
    pub signal: Option<JsOnly>,
    /// Run under the kernel sandbox (`cwd` is its work directory); without it `exec` runs the
    /// program unconfined, as the raw primitive it is.
    #[serde(default)]
    pub sandbox: Option<SandboxOption>,
}

impl ExecOptions {
    /// The request these options describe, and the best-effort warning of its sandbox when
    /// this was the first in the process to have one. A sandboxed request also gets a private
    /// HOME/TMPDIR; `sandbox: false` is the same as no sandbox.
    pub fn into_request(self) -> Result<(ExecRequest, Option<String>)> {
        let cwd = WorkDir::resolve(self.cwd)?;
        let mut warning = None;
        let sandbox = match self.sandbox {
            Some(option) => {
                let fields = option.into_fields();
                let scope = SandboxScope::new(&cwd, false, &fields, &cwd, "option 'sandbox'")?;
                let prepared = prepare_cached(&scope)?;
                warning = prepared.warning;
                prepared.sandbox
            }
            None => None,
        };
        let mut request = ExecRequest::new(self.command, cwd)
            .args(self.args)
            .env(self.env);
        if let Some(sandbox) = sandbox {
            request = request.sandbox(sandbox);
        }
        if let Some(stdin) = self.stdin {
            request = request.stdin(stdin.0);
        }
        if let Some(timeout) = self.timeout_ms {
            request = request.timeout(timeout.0);
        }
        if let Some(cap) = self.max_output_bytes {
            request = request.max_output_bytes(cap.get());
        }
        Ok((request, warning))
    }
}

/// stdin as text or bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stdin(pub Vec<u8>);

impl<'de> de::Deserialize<'de> for Stdin {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct StdinVisitor;
        impl Visitor<'_> for StdinVisitor {
            type Value = Stdin;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or bytes")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> std::result::Result<Stdin, E> {
                Ok(Stdin(text.as_bytes().to_vec()))
            }
            fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> std::result::Result<Stdin, E> {
                Ok(Stdin(bytes.to_vec()))
            }
        }
        deserializer.deserialize_any(StdinVisitor)
    }
}
