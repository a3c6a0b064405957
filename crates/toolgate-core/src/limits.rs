//! Every fixed limit of the core in one place, so that a reader (and the docs) can see what
//! toolgate refuses and why. Each section says which inputs it bounds; the code that checks a
//! limit names it in its error message.

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

/// Largest content one `file_write` (or one `file_patch` operation) writes, and largest
/// `old_text` / `new_text` of an edit, in bytes.
pub const MAX_CONTENT_BYTES: usize = 16 * 1024 * 1024;

/// Largest content all operations of one `file_patch` write together, in bytes.
pub const MAX_PATCH_BYTES: usize = 64 * 1024 * 1024;

/// Most operations in one `file_patch`.
pub const MAX_PATCH_OPERATIONS: usize = 1000;

/// Largest file `file_edit` rewrites in memory, before and after the edit, in bytes.
pub const MAX_EDIT_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Deepest nesting of collections in a YAML document (worker files, `tool.yaml` manifests):
/// sequences and mappings, flow (`[`, `{`) and block alike. The YAML parser takes time
/// quadratic in flow nesting (16k levels took 1.3 s, 50k levels over 30 s), and serde_yaml
/// refuses documents deeper than 128 levels anyway.
pub const MAX_YAML_DEPTH: usize = 100;
