//! Every default and limit of toolgate, defined once. The Node binding hands them to the
//! TypeScript layer (`limits()`), which never restates them; tool descriptions the model reads
//! are written from them. The limits on what the model or a repository supplies (patterns,
//! sizes, nesting) are checked before the library that would see the input, and the code that
//! checks one names it in its error message.

use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Project defaults and names: timeouts, output caps, tool names, delegation, file-tool defaults.
// Every module imports its values from here; this module imports none of them (layers point
// down, docs/architecture.md).
// ---------------------------------------------------------------------------------------------

/// Default timeout of a `cli_execute` or `shell` command: 120 seconds.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// Default cap of each of stdout and stderr, in bytes: 1 MiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// Default number of lines a read returns, and the line cap of every file tool's output.
pub const DEFAULT_READ_LINES: usize = 2000;

/// Directories no search or walk descends into: version control, dependencies, virtual
/// environments and build output. Naming one explicitly as the search path still searches it.
pub const SKIPPED_DIRECTORIES: [&str; 7] = [
    ".git",
    "node_modules",
    "vendor",
    "__pycache__",
    ".venv",
    "dist",
    "build",
];

/// Default timeout of one executable tool run.
pub const DEFAULT_EXECUTABLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long importing a tools module (`tools.ts`, its imports included) may take.
pub const DEFAULT_IMPORT_TIMEOUT: Duration = Duration::from_secs(30);

/// Most files counted as a tools module's imports (those the SDK reports for protection; a
/// module graph larger than this is not one toolgate expects to load).
pub const MAX_MODULE_IMPORTS: usize = 20_000;

/// Largest source file of a native ES module the SDK reads for its imports (what Node's own
/// loader runs is read from its source: see the SDK's `loadedFiles`).
pub const MAX_MODULE_SOURCE_BYTES: u64 = 16 * 1024 * 1024;

/// How long an executable tool's `description` may take during discovery.
pub const DESCRIPTION_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest timeout anything accepts: a day. Longer values are almost certainly a unit mistake
/// (milliseconds given as seconds).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// Largest output cap anything accepts, in bytes (1 GiB): a bigger cap is a mistake, and the
/// output is held in memory.
pub const MAX_OUTPUT_BYTES: u64 = 1024 * 1024 * 1024;

/// The prefix of every executable tool's name as the model sees it.
pub const EXECUTABLE_TOOL_PREFIX: &str = "custom_tool_";

/// Longest tool name a model provider accepts (function names of at most 64 characters).
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Longest executable tool name: the model sees `custom_tool_<name>`.
pub const MAX_EXECUTABLE_NAME_LEN: usize = MAX_TOOL_NAME_LEN - EXECUTABLE_TOOL_PREFIX.len();

/// Tools that end a worker's run; no toolset may use these names.
pub const RESERVED_TOOL_NAMES: [&str; 3] = ["task_completion", "ask_question", "converse"];

/// How deep workers may call workers (the top-level worker is depth 0).
pub const MAX_WORKER_DEPTH: usize = 5;

/// How many workers one delegation graph may hold (every call path counts): loading more is a
/// configuration mistake, and each is planned when the top worker loads.
pub const MAX_WORKERS_IN_GRAPH: usize = 64;

/// How many directory entries the project-wide search for a worker named in `allowed_workers`
/// may visit (golem-forge's registry scans the project): a name is found in a large project,
/// and a home directory mistaken for a project is not read to the end.
pub const MAX_WORKER_SEARCH_ENTRIES: usize = 20_000;

/// How many folders deep, below each folder it starts from, that search goes.
pub const MAX_WORKER_SEARCH_DEPTH: usize = 8;

/// Model steps of a run when neither the worker file nor the caller says.
pub const DEFAULT_MAX_STEPS: u32 = 20;

/// The project's executable tool directory, relative to the work directory.
pub const DEFAULT_TOOL_DIRECTORY: &str = "toolgate-tools";

/// The user's executable tool directory, relative to the home directory.
pub const GLOBAL_TOOL_DIRECTORY: &str = ".toolgate/tools";

/// How many directory entries finding the paths of `blocked` path rules and `sandbox.protect`
/// patterns may judge (a walk of the work directory, `node_modules` included). Past it, loading
/// fails and says how to anchor the pattern: a partial list would hide only some of the files.
pub const MAX_GUARD_WALK_ENTRIES: usize = 200_000;

/// Most patterns in one `sandbox.protect` list.
pub const MAX_PROTECT_PATTERNS: usize = 256;

/// Most lines of context `grep` shows on each side of a match.
pub const MAX_GREP_CONTEXT: usize = 20;

/// Default number of paths a glob lists.
pub const DEFAULT_GLOB_RESULTS: usize = 100;

/// Default number of matching lines grep shows.
pub const DEFAULT_GREP_RESULTS: usize = 50;

/// Default depth of a directory tree.
pub const DEFAULT_TREE_DEPTH: usize = 3;

/// Largest count any count option accepts (results, lines, depth): beyond it the number is a
/// mistake, not a wish.
pub const MAX_COUNT: u64 = 1_000_000_000;

/// How deeply an options object from JavaScript may nest.
pub const MAX_OPTIONS_DEPTH: usize = 32;

/// Checks a tool name as the model will see it (`prefix` + `name`): `^[a-zA-Z0-9_-]+$`, at most
/// [`MAX_TOOL_NAME_LEN`] characters in all. Returns the reason when it is not acceptable.
pub fn check_tool_name(name: &str, prefix: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the name is empty; use letters, digits, '_' and '-'".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "the name '{}' contains {:?}; a tool name matches ^[a-zA-Z0-9_-]+$",
            name.escape_debug(),
            bad
        ));
    }
    let max = MAX_TOOL_NAME_LEN - prefix.len();
    if name.len() > max {
        return Err(if prefix.is_empty() {
            format!(
                "the name '{name}' has {} characters; model providers accept at most {MAX_TOOL_NAME_LEN}",
                name.len()
            )
        } else {
            format!(
                "the name '{name}' has {} characters; at most {max} are allowed so that '{prefix}{name}' fits the {MAX_TOOL_NAME_LEN} characters model providers accept",
                name.len()
            )
        });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The kernel sandbox's limits per call (`sandbox.limits`): what stops a fork bomb or a runaway
// from taking the host down. Chosen so that builds and test suites fit (a large TypeScript or
// Rust build stays under 4 GiB; a package install's cache under 512 MiB of private tmpfs) and
// a runaway is stopped well before the machine suffers. Each can be raised or lowered in the
// configuration; `toolgate check --sandbox` says how each is enforced on the machine.
// ---------------------------------------------------------------------------------------------

/// Processes (and threads) one call may have at once: a fork bomb stops here. Enforced
/// exactly by a cgroup's `pids.max`, else by `RLIMIT_NPROC` in the call's own user namespace
/// (not for root) and the PID namespace's own `pid_max` (Linux 6.14, at least 301).
pub const DEFAULT_SANDBOX_PROCESSES: u64 = 512;

/// Memory of one call, in MiB: the whole call with a cgroup, each process (`RLIMIT_DATA`)
/// without.
pub const DEFAULT_SANDBOX_MEMORY_MB: u64 = 4096;

/// Size of a call's private tmpfs (its `HOME` and `TMPDIR`), in MiB: it is memory.
pub const DEFAULT_SANDBOX_TMP_MB: u64 = 512;

/// CPU seconds per process: none by default (the call's timeout bounds its time).
pub const DEFAULT_SANDBOX_CPU_SECONDS: Option<u64> = None;

/// Largest file a process may write, in MiB (`RLIMIT_FSIZE`).
pub const DEFAULT_SANDBOX_FILE_SIZE_MB: u64 = 1024;

/// The largest value any sandbox limit accepts (a larger one is a typing error).
pub const MAX_SANDBOX_LIMIT: u64 = 1 << 40;

// ---------------------------------------------------------------------------------------------
// What the model (or a repository) supplies: patterns, sizes, counts and nesting.
//
// Each of these is checked before the library that would otherwise see the input (globset,
// the regex engine, serde_yaml, the allocator), so an oversized or pathological value is an
// `INVALID_INPUT` / `CONFIG_INVALID` error that says the limit, never a panic, a stack overflow
// or a stall of seconds.
// ---------------------------------------------------------------------------------------------

/// Longest glob (`glob_search` pattern, grep `include`/`exclude`), in bytes. A glob longer than
/// the longest path (PATH_MAX is 4096) cannot match more than a shorter one would.
pub const MAX_GLOB_BYTES: usize = 4096;

/// Deepest nesting of `{a,{b,c}}` alternatives in a glob. globset turns nesting into recursion,
/// so very deep nesting would overflow the stack.
pub const MAX_GLOB_BRACE_DEPTH: usize = 10;

/// Most rules in one file toolset's `approval.paths`.
pub const MAX_PATH_RULES: usize = 256;

/// Most include or exclude globs in one grep request (each list).
pub const MAX_GREP_FILTERS: usize = 100;

/// Longest grep regular expression, in bytes.
pub const MAX_REGEX_BYTES: usize = 8 * 1024;

/// Deepest nesting of groups, repetitions and classes in a grep regex (the regex parser's own
/// default is 250).
pub const MAX_REGEX_NESTING: u32 = 100;

/// Largest compiled grep regex. `a{1000}{1000}` and other counted repetitions that would compile
/// to millions of states fail to compile at this size instead of stalling.
pub const MAX_REGEX_COMPILED_BYTES: usize = 10 * 1024 * 1024;

/// Cache of the lazy DFA grep matches with; a larger regex only runs slower with a smaller one.
pub const MAX_REGEX_DFA_BYTES: usize = 32 * 1024 * 1024;

/// Most paths `glob_search` lists and most matching lines `grep_search` shows (`max_results`);
/// the output holds at most 2000 lines anyway.
pub const MAX_SEARCH_RESULTS: usize = 2000;

/// Deepest `directory_tree` drawing (`max_depth`); the drawing recurses per level.
pub const MAX_TREE_DEPTH: usize = 64;

/// Longest `shell` command line, in bytes. A program's argument list and environment together may
/// not exceed the kernel's ARG_MAX anyway (2 MiB by default); a command longer than this is
/// data that belongs on stdin or in a file.
pub const MAX_COMMAND_BYTES: usize = 128 * 1024;

/// Most arguments of one `cli_execute` / `shell` call.
pub const MAX_ARGUMENTS: usize = 4096;

/// Longest single argument, in bytes: the kernel's MAX_ARG_STRLEN, past which `execve` fails.
pub const MAX_ARGUMENT_BYTES: usize = 128 * 1024;

/// Largest `stdin` a `cli_execute` call may pass, in bytes.
pub const MAX_STDIN_BYTES: usize = 16 * 1024 * 1024;

/// Largest content one `file_write` (or one `file_patch` operation) writes, and largest
/// `old_text` / `new_text` of an edit, in bytes.
pub const MAX_CONTENT_BYTES: usize = 16 * 1024 * 1024;

/// Largest content all operations of one `file_patch` write together, in bytes.
pub const MAX_PATCH_BYTES: usize = 64 * 1024 * 1024;

/// Most operations in one `file_patch`.
pub const MAX_PATCH_OPERATIONS: usize = 1000;

/// Largest file `file_edit` rewrites in memory, before and after the edit, in bytes.
pub const MAX_EDIT_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Most files one worker call attaches when the called worker has no `attachment_policy`
/// (golem-forge's own default).
pub const DEFAULT_MAX_ATTACHMENTS: u64 = 4;

/// Most bytes the files of one worker call hold together when the called worker has no
/// `attachment_policy` (10 MiB).
pub const DEFAULT_MAX_ATTACHMENT_BYTES: u64 = 10 * 1024 * 1024;

/// Highest `attachment_policy.max_attachments` a worker file may set.
pub const MAX_ATTACHMENTS: u64 = 64;

/// Highest `attachment_policy.max_total_bytes` a worker file may set (64 MiB): the files are
/// held in memory and sent to the model in one message.
pub const MAX_ATTACHMENT_BYTES: u64 = 64 * 1024 * 1024;

/// Deepest nesting of collections in a YAML document (worker files, `tool.yaml` manifests):
/// sequences and mappings, flow (`[`, `{`) and block alike. The YAML parser takes time
/// quadratic in flow nesting (16k levels took 1.3 s, 50k levels over 30 s), and serde_yaml
/// refuses documents deeper than 128 levels anyway.
pub const MAX_YAML_DEPTH: usize = 100;

// ---------------------------------------------------------------------------------------------
// Runs: "always" answers, run states, the audit log.
// ---------------------------------------------------------------------------------------------

/// Longest prefix an "always" answer may give, in bytes.
pub const MAX_PREFIX_PATTERN_BYTES: usize = 4096;

/// Longest display of a tool input shown for review, in bytes: a longer input is shown cut, with
/// its size and SHA-256, and may only be approved once (no "always", no saved rule).
pub const MAX_REVIEW_BYTES: usize = 64 * 1024;

/// The project permissions file, beside the top-level worker file: saved approvals, read by
/// every run of a worker in its folder, written by the "save" answers; protected configuration
/// (no sandboxed process or file tool of the agent may change it).
pub const PERMISSIONS_FILE_NAME: &str = "toolgate.permissions.yaml";

/// Largest project permissions file read, in bytes.
pub const MAX_PERMISSIONS_FILE_BYTES: usize = 4 * 1024 * 1024;

/// Most rules a project permissions file may hold.
pub const MAX_SAVED_RULES: usize = 2000;

/// How long saving a rule waits for another process holding the permissions file's lock, in
/// milliseconds.
pub const PERMISSIONS_LOCK_WAIT_MS: u64 = 10_000;

/// How long a run state may wait for its answers, in milliseconds: a week.
pub const STATE_MAX_AGE_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// Largest run state accepted, in bytes (the conversation is inside).
pub const MAX_STATE_BYTES: usize = 64 * 1024 * 1024;

/// Shortest `stateSecret` accepted, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// Most approval requests one run state may wait for.
pub const MAX_PENDING: usize = 256;

/// Most "always" answers a run may collect.
pub const MAX_ALWAYS_SCOPES: usize = 1024;

/// Longest reason a denial may give the model, in bytes.
pub const MAX_REASON_BYTES: usize = 8 * 1024;

/// Shortest secret value that is redacted, in bytes.
pub const MIN_SECRET_VALUE_BYTES: usize = 6;

/// Most redaction patterns one log takes (besides the environment's secrets).
pub const MAX_AUDIT_PATTERNS: usize = 1000;

// ---------------------------------------------------------------------------------------------
// Toolsets: the file tools' output, MCP servers, the built-in tools, docstring tools.
// ---------------------------------------------------------------------------------------------

// The file tools' output.

/// Default cap on the bytes of any file tool's output (50 KiB).
pub const DEFAULT_READ_BYTES: usize = 50 * 1024;

/// Lines longer than this many bytes are cut in listings and search results.
pub const MAX_LINE_BYTES: usize = 2000;

/// Matching lines in search output are cut shorter: a minified bundle must not flood it.
pub const MAX_MATCH_LINE_BYTES: usize = 500;

// MCP servers (the `mcp` toolset).

/// How long a tool call may take before it fails with `TOOL_FAILED` (default).
pub const DEFAULT_MCP_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a server may take to start, answer `initialize` and list its tools (default).
pub const DEFAULT_MCP_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest message a stdio server may send; a longer one ends the connection as malformed.
pub const MAX_MCP_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Most tools one server may list.
pub const MAX_MCP_TOOLS_PER_SERVER: usize = 1000;

/// Most servers one toolset may have.
pub const MAX_MCP_SERVERS: usize = 32;

/// Longest server name (it prefixes every tool name of the server).
pub const MAX_MCP_SERVER_NAME_LEN: usize = 32;

/// Longest tool name a server may list (the protocol's limit).
pub const MAX_MCP_SERVER_TOOL_NAME_LEN: usize = 128;

/// Largest tool input the model may send to a server, serialized as JSON.
pub const MAX_MCP_INPUT_BYTES: usize = 1024 * 1024;

// `http_request` (the built-in tools).

/// Default time for a whole request, redirects included.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest timeout a configuration may set.
pub const MAX_HTTP_TIMEOUT: Duration = Duration::from_secs(300);

/// Default cap on the response body kept for the model.
pub const DEFAULT_HTTP_RESPONSE_BYTES: usize = 1024 * 1024;

/// The largest response cap a configuration may set.
pub const MAX_HTTP_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Redirects followed before the request fails.
pub const MAX_HTTP_REDIRECTS: usize = 5;

/// Longest `http_request` URL accepted from the model.
pub const MAX_HTTP_URL_BYTES: usize = 8 * 1024;

/// Largest request body accepted from the model.
pub const MAX_HTTP_REQUEST_BODY_BYTES: usize = 1024 * 1024;

/// Most request headers accepted from the model.
pub const MAX_HTTP_HEADERS: usize = 64;

/// Largest single header value accepted from the model.
pub const MAX_HTTP_HEADER_VALUE_BYTES: usize = 8 * 1024;

// `web_search`.

/// Longest `web_search` query, in characters.
pub const MAX_SEARCH_QUERY_CHARS: usize = 2000;

/// `web_search` results unless the model asks for another number.
pub const DEFAULT_SEARCH_RESULTS: u32 = 5;

/// The most results one `web_search` call may ask for.
pub const MAX_SEARCH_RESULTS_PER_CALL: u32 = 20;

// `json_parse` and `csv_parse`.

/// Largest JSON or CSV text `json_parse` / `csv_parse` accept, in bytes.
pub const MAX_DATA_BYTES: usize = 4 * 1024 * 1024;

/// Longest JSONPath expression accepted.
pub const MAX_JSON_PATH_BYTES: usize = 512;

/// How deeply brackets and parentheses of a JSONPath expression may nest (the parser recurses).
pub const MAX_JSON_PATH_NESTING: usize = 32;

/// Rows returned by `csv_parse` unless `max_rows` says fewer.
pub const DEFAULT_CSV_ROWS: usize = 1000;

/// The most rows `csv_parse` returns.
pub const MAX_CSV_ROWS: usize = 10_000;

// `datetime_now` and `uuid_generate`.

/// Longest `datetime_now` strftime format, in bytes.
pub const MAX_DATETIME_FORMAT_BYTES: usize = 256;

/// The most UUIDs one `uuid_generate` call returns.
pub const MAX_UUIDS: u32 = 100;

// `file_create`.

/// Longest `file_create` file name, in bytes.
pub const MAX_FILENAME_BYTES: usize = 200;

// `math_calculate`.

/// Longest `math_calculate` expression, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 1000;

/// How deeply the parentheses of a `math_calculate` expression may nest.
pub const MAX_EXPRESSION_NESTING: usize = 64;

// Docstring tools (executable tools described by a comment header).

/// How much of a script is read to find its header.
pub const MAX_DOCSTRING_HEADER_BYTES: usize = 64 * 1024;

/// The most `Input:` parameters a docstring tool may declare.
pub const MAX_DOCSTRING_INPUTS: usize = 64;

/// Longest description a docstring tool may give, in characters.
pub const MAX_DOCSTRING_DESCRIPTION_CHARS: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_the_pattern_and_the_provider_limit() {
        for good in ["a", "weather", "git-log_2", &"x".repeat(MAX_TOOL_NAME_LEN)] {
            assert!(check_tool_name(good, "").is_ok(), "{good}");
        }
        for bad in ["", "a b", "a.b", "ü", &"x".repeat(MAX_TOOL_NAME_LEN + 1)] {
            assert!(check_tool_name(bad, "").is_err(), "{bad:?}");
        }
        let long = "x".repeat(MAX_EXECUTABLE_NAME_LEN + 1);
        let reason = check_tool_name(&long, EXECUTABLE_TOOL_PREFIX).unwrap_err();
        assert!(reason.contains("custom_tool_"), "{reason}");
        assert!(check_tool_name(&long[1..], EXECUTABLE_TOOL_PREFIX).is_ok());
    }

    #[test]
    fn defaults_are_inside_their_limits() {
        assert!(DEFAULT_COMMAND_TIMEOUT <= MAX_TIMEOUT);
        assert!(DEFAULT_EXECUTABLE_TIMEOUT <= MAX_TIMEOUT);
        assert!(DEFAULT_MAX_OUTPUT_BYTES as u64 <= MAX_OUTPUT_BYTES);
        assert_eq!(MAX_GREP_CONTEXT, 20);
        assert!(SKIPPED_DIRECTORIES.contains(&"node_modules"));
        assert!(RESERVED_TOOL_NAMES
            .iter()
            .all(|name| check_tool_name(name, "").is_ok()));
    }
}
