//! Per-call arguments of the file tools from JavaScript (`FileTools.read`, `.edit`, `.patch`,
//! `.glob`, `.grep`, `.tree`), read by [`crate::options::parse`]: `INVALID_INPUT` when wrong.
//! The defaults are the core's ([`crate::limits`]).

use serde::Deserialize;

use super::{EditRequest, GlobRequest, GrepRequest, PatchAction, ReadRequest, TreeRequest};
use crate::limits::{
    DEFAULT_GLOB_RESULTS, DEFAULT_GREP_RESULTS, DEFAULT_READ_LINES, DEFAULT_TREE_DEPTH,
    MAX_GREP_CONTEXT,
};
use crate::options::Count;

/// Most lines of grep context, as a type parameter.
const GREP_CONTEXT: u64 = MAX_GREP_CONTEXT as u64;

/// `read` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReadOptions {
    pub path: String,
    #[serde(default)]
    pub offset: Option<Count<1>>,
    #[serde(default)]
    pub limit: Option<Count<1>>,
    #[serde(default)]
    pub line_numbers: Option<bool>,
}

impl From<ReadOptions> for ReadRequest {
    fn from(options: ReadOptions) -> Self {
        ReadRequest {
            path: options.path,
            offset: options.offset.map_or(1, |offset| offset.0),
            limit: options
                .limit
                .map_or(DEFAULT_READ_LINES as u64, |limit| limit.0),
            line_numbers: options.line_numbers.unwrap_or(true),
        }
    }
}

/// `edit` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EditOptions {
    pub path: String,
    pub old_text: String,
    pub new_text: String,
    #[serde(default)]
    pub replace_all: bool,
}

impl From<EditOptions> for EditRequest {
    fn from(options: EditOptions) -> Self {
        EditRequest {
            path: options.path,
            old_text: options.old_text,
            new_text: options.new_text,
            replace_all: options.replace_all,
        }
    }
}

/// What a patch operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatchActionOption {
    Add,
    Update,
    Delete,
    Move,
}

impl From<PatchActionOption> for PatchAction {
    fn from(action: PatchActionOption) -> Self {
        match action {
            PatchActionOption::Add => PatchAction::Add,
            PatchActionOption::Update => PatchAction::Update,
            PatchActionOption::Delete => PatchAction::Delete,
            PatchActionOption::Move => PatchAction::Move,
        }
    }
}

/// One `patch` operation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchOperationOptions {
    pub action: PatchActionOption,
    pub path: String,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub new_path: Option<String>,
}

impl From<PatchOperationOptions> for super::PatchOperation {
    fn from(options: PatchOperationOptions) -> Self {
        super::PatchOperation {
            action: options.action.into(),
            path: options.path,
            content: options.content,
            new_path: options.new_path,
        }
    }
}

/// `glob` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GlobOptions {
    pub pattern: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub max_results: Option<Count<1>>,
}

impl From<GlobOptions> for GlobRequest {
    fn from(options: GlobOptions) -> Self {
        GlobRequest {
            pattern: options.pattern,
            path: options.path,
            max_results: options.max_results.map_or(DEFAULT_GLOB_RESULTS, Count::get),
        }
    }
}

/// `grep` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GrepOptions {
    pub pattern: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default)]
    pub context: Option<Count<0, GREP_CONTEXT>>,
    #[serde(default)]
    pub max_results: Option<Count<1>>,
    #[serde(default)]
    pub ignore_case: bool,
}

impl From<GrepOptions> for GrepRequest {
    fn from(options: GrepOptions) -> Self {
        GrepRequest {
            pattern: options.pattern,
            path: options.path,
            include: options.include,
            exclude: options.exclude,
            context: options.context.map_or(0, Count::get),
            max_results: options.max_results.map_or(DEFAULT_GREP_RESULTS, Count::get),
            ignore_case: options.ignore_case,
        }
    }
}

/// `tree` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TreeOptions {
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub max_depth: Option<Count<1>>,
}

impl From<TreeOptions> for TreeRequest {
    fn from(options: TreeOptions) -> Self {
        TreeRequest {
            path: options.path,
            max_depth: options.max_depth.map_or(DEFAULT_TREE_DEPTH, Count::get),
        }
    }
}
