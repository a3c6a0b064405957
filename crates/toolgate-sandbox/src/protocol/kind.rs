//! What kind of call a served call is: the part of its words its view depends on besides the
//! policy (see [`CallKind`]).

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// What a served call's view is built for besides its policy: the directory holding its call
/// directory and its program's read roots (sorted, without repeats). Calls of one policy and
/// kind share a view, and so the inits made ahead of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CallKind {
    /// The parent of the call's directory (its private HOME and TMPDIR).
    pub private_dir: Option<OsString>,
    /// The call's `--read` paths.
    pub reads: Vec<OsString>,
}

impl CallKind {
    /// The kind of a call with these `--read` paths and `--call-dir`.
    pub fn new<S: AsRef<OsStr>>(reads: &[S], call_dir: Option<&OsStr>) -> Self {
        let mut reads: Vec<OsString> = reads.iter().map(|read| read.as_ref().to_owned()).collect();
        reads.sort();
        reads.dedup();
        let private_dir = call_dir
            .and_then(|dir| Path::new(dir).parent())
            .map(|dir| dir.as_os_str().to_os_string());
        Self { private_dir, reads }
    }

    /// As words: the private directory (empty for none; paths are absolute), then the reads.
    pub(crate) fn to_words(&self) -> Vec<OsString> {
        let mut words = Vec::with_capacity(self.reads.len() + 1);
        words.push(self.private_dir.clone().unwrap_or_default());
        words.extend(self.reads.iter().cloned());
        words
    }

    /// The inverse of `to_words` (no words at all, as `words::split` reads one empty word:
    /// no private directory and no reads).
    pub(crate) fn from_words(mut words: Vec<OsString>) -> Self {
        let private_dir = if words.is_empty() {
            OsString::new()
        } else {
            words.remove(0)
        };
        Self {
            private_dir: (!private_dir.is_empty()).then_some(private_dir),
            reads: words,
        }
    }
}
