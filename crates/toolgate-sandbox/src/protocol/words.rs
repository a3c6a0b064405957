//! A word list as one buffer: how a policy and a call travel in a server request.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// An argument list as one buffer, each word followed by a NUL (words cannot contain one:
/// they become C strings; the caller refuses a word that has one).
pub fn join<S: AsRef<OsStr>>(words: impl IntoIterator<Item = S>) -> Vec<u8> {
    let mut bytes = Vec::new();
    for word in words {
        bytes.extend_from_slice(word.as_ref().as_bytes());
        bytes.push(0);
    }
    bytes
}

/// The inverse of [`join`].
pub fn split(bytes: &[u8]) -> Vec<OsString> {
    let bytes = bytes.strip_suffix(&[0]).unwrap_or(bytes);
    if bytes.is_empty() {
        return Vec::new();
    }
    bytes
        .split(|&b| b == 0)
        .map(|word| OsStr::from_bytes(word).to_os_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_lists_round_trip() {
        let list: Vec<OsString> = ["--env", "A=x y", "", "--"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(split(&join(&list)), list);
        assert!(split(&join(Vec::<OsString>::new())).is_empty());
        assert_eq!(join(["a", "bc"]), b"a\0bc\0");
    }
}
