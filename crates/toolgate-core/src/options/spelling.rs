//! The JavaScript spelling of a configuration key, derived from its one spelling in Rust (the
//! worker-file key). Every toolset's configuration is one serde type, written in worker-file
//! spelling; a JavaScript caller writes the same keys in camelCase, and timeouts in
//! milliseconds:
//!
//! | worker file (seconds) | JavaScript (milliseconds) |
//! | --- | --- |
//! | `allowed_binaries`, `max_output_bytes` | `allowedBinaries`, `maxOutputBytes` |
//! | `timeout`, `startup_timeout` | `timeoutMs`, `startupTimeoutMs` |
//! | `tool_timeouts` (a map of timeouts) | `toolTimeoutsMs` |
//!
//! Only the keys of structs are spelled; the keys of maps (server names, variable names, tool
//! names) are data and stay as written.

/// The name of a struct field that receives every key the struct does not name, like a
/// JavaScript spread: `{ workDir, ...cliExecute }` is a struct with `work_dir` and a field
/// `#[serde(rename = "...")] config: CliExecuteConfig`.
pub const SPREAD: &str = "...";

/// Whether a key holds seconds in a worker file (and milliseconds, `…Ms`, in JavaScript): it is
/// `timeout`, or ends in `_timeout` or `_timeouts`.
pub fn holds_seconds(key: &str) -> bool {
    key == "timeout" || key.ends_with("_timeout") || key.ends_with("_timeouts")
}

/// The JavaScript spelling of a key: `max_output_bytes` → `maxOutputBytes`, `timeout` →
/// `timeoutMs`. A key already in camelCase (the options of JavaScript-only functions) is its own
/// spelling.
pub fn js_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 2);
    let mut upper = false;
    for c in key.chars() {
        if c == '_' && !out.is_empty() {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    if holds_seconds(key) {
        out.push_str("Ms");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_camel_case_and_timeouts_are_milliseconds() {
        for (key, js) in [
            ("allowed_binaries", "allowedBinaries"),
            ("max_output_bytes", "maxOutputBytes"),
            ("env_passthrough", "envPassthrough"),
            ("web_search", "webSearch"),
            ("base_url", "baseUrl"),
            ("read_only", "readOnly"),
            ("timeout", "timeoutMs"),
            ("startup_timeout", "startupTimeoutMs"),
            ("tool_timeouts", "toolTimeoutsMs"),
            ("servers", "servers"),
            // JavaScript-only options are already spelled for JavaScript.
            ("workDir", "workDir"),
            ("descriptionTimeoutMs", "descriptionTimeoutMs"),
        ] {
            assert_eq!(js_key(key), js, "{key}");
        }
        assert!(holds_seconds("timeout"));
        assert!(!holds_seconds("timeouts_seen"));
        assert!(!holds_seconds("importTimeoutMs"));
    }
}
