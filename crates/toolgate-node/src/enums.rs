//! The core's enums as JavaScript string unions (`binding.d.ts` carries them), converted with
//! `From` so that a new core variant fails to compile here until it has its spelling.

use napi_derive::napi;
use toolgate_core::approval::{self, Toolset};
use toolgate_core::command::{self, config::OutputAction as CoreOutputAction};
use toolgate_core::executables::{self, scaffold, CacheMode as CoreCacheMode};
use toolgate_core::fs::{self, config::CodeAgentGroup as CoreGroup};

/// What happens when a tool is called: run it, ask a human first, or refuse.
#[napi(string_enum = "camelCase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    PreApproved,
    Ask,
    Blocked,
}

impl From<approval::Decision> for Decision {
    fn from(decision: approval::Decision) -> Self {
        match decision {
            approval::Decision::PreApproved => Decision::PreApproved,
            approval::Decision::Ask => Decision::Ask,
            approval::Decision::Blocked => Decision::Blocked,
        }
    }
}

impl From<Decision> for approval::Decision {
    fn from(decision: Decision) -> Self {
        match decision {
            Decision::PreApproved => approval::Decision::PreApproved,
            Decision::Ask => approval::Decision::Ask,
            Decision::Blocked => approval::Decision::Blocked,
        }
    }
}

/// A tool's own `needsApproval`: none, a boolean, or a function of the input.
#[napi(string_enum = "kebab-case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnApproval {
    /// The tool has no `needsApproval`.
    None,
    /// `needsApproval: true`.
    Always,
    /// `needsApproval: false`.
    Never,
    /// `needsApproval` is a function.
    Function,
}

impl From<OwnApproval> for approval::OwnApproval {
    fn from(own: OwnApproval) -> Self {
        match own {
            OwnApproval::None => approval::OwnApproval::None,
            OwnApproval::Always => approval::OwnApproval::from_flag(true),
            OwnApproval::Never => approval::OwnApproval::from_flag(false),
            OwnApproval::Function => approval::OwnApproval::Dynamic,
        }
    }
}

/// The toolset a tool belongs to (it selects the documented default).
#[napi(string_enum = "snake_case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolsetKind {
    Filesystem,
    CodeAgent,
    Shell,
    CliExecute,
    /// A `tools.ts` module.
    Custom,
    Executables,
    Workers,
    CreateCustomTool,
    /// Tools of MCP servers.
    Mcp,
    /// Forge's built-in tools.
    Builtins,
    /// A tool gated on its own.
    Tool,
}

impl From<ToolsetKind> for Toolset {
    fn from(kind: ToolsetKind) -> Self {
        match kind {
            ToolsetKind::Filesystem => Toolset::Filesystem,
            ToolsetKind::CodeAgent => Toolset::CodeAgent,
            ToolsetKind::Shell => Toolset::Shell,
            ToolsetKind::CliExecute => Toolset::CliExecute,
            ToolsetKind::Custom => Toolset::ToolsModule,
            ToolsetKind::Executables => Toolset::Executables,
            ToolsetKind::Workers => Toolset::Workers,
            ToolsetKind::CreateCustomTool => Toolset::CreateCustomTool,
            ToolsetKind::Mcp => Toolset::Mcp,
            ToolsetKind::Builtins => Toolset::Builtins,
            ToolsetKind::Tool => Toolset::Standalone,
        }
    }
}

impl From<Toolset> for ToolsetKind {
    fn from(toolset: Toolset) -> Self {
        match toolset {
            Toolset::Filesystem => ToolsetKind::Filesystem,
            Toolset::CodeAgent => ToolsetKind::CodeAgent,
            Toolset::Shell => ToolsetKind::Shell,
            Toolset::CliExecute => ToolsetKind::CliExecute,
            Toolset::ToolsModule => ToolsetKind::Custom,
            Toolset::Executables => ToolsetKind::Executables,
            Toolset::Workers => ToolsetKind::Workers,
            Toolset::CreateCustomTool => ToolsetKind::CreateCustomTool,
            Toolset::Mcp => ToolsetKind::Mcp,
            Toolset::Builtins => ToolsetKind::Builtins,
            Toolset::Standalone => ToolsetKind::Tool,
        }
    }
}

/// Which code-agent tools a worker gets.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeAgentGroup {
    Search,
    Read,
    Write,
    All,
}

impl From<CoreGroup> for CodeAgentGroup {
    fn from(group: CoreGroup) -> Self {
        match group {
            CoreGroup::Search => CodeAgentGroup::Search,
            CoreGroup::Read => CodeAgentGroup::Read,
            CoreGroup::Write => CodeAgentGroup::Write,
            CoreGroup::All => CodeAgentGroup::All,
        }
    }
}

/// The check that refused a command, in the order the checks run.
#[napi(string_enum = "kebab-case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandLayer {
    Syntax,
    Allowlist,
    ShellOrTrampoline,
    Rules,
    Program,
    Arguments,
    Paths,
    Guardrails,
}

impl From<command::Layer> for CommandLayer {
    fn from(layer: command::Layer) -> Self {
        match layer {
            command::Layer::Syntax => CommandLayer::Syntax,
            command::Layer::Allowlist => CommandLayer::Allowlist,
            command::Layer::ShellOrTrampoline => CommandLayer::ShellOrTrampoline,
            command::Layer::Rules => CommandLayer::Rules,
            command::Layer::Program => CommandLayer::Program,
            command::Layer::Arguments => CommandLayer::Arguments,
            command::Layer::Paths => CommandLayer::Paths,
            command::Layer::Guardrails => CommandLayer::Guardrails,
        }
    }
}

/// What the shell policy decided about a command: an approval, or `refused` by a layer.
#[napi(string_enum = "camelCase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    PreApproved,
    Ask,
    Blocked,
    Refused,
}

impl From<command::Verdict> for Verdict {
    fn from(verdict: command::Verdict) -> Self {
        match verdict {
            command::Verdict::PreApproved => Verdict::PreApproved,
            command::Verdict::Ask => Verdict::Ask,
            command::Verdict::Blocked => Verdict::Blocked,
            command::Verdict::Refused => Verdict::Refused,
        }
    }
}

/// Where a shell decision came from.
#[napi(string_enum = "kebab-case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionSource {
    Rule,
    Default,
    NoDefault,
}

/// Whether executable tool descriptions are read from and written to the cache.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    Use,
    Refresh,
    Off,
}

impl From<CoreCacheMode> for CacheMode {
    fn from(mode: CoreCacheMode) -> Self {
        match mode {
            CoreCacheMode::Use => CacheMode::Use,
            CoreCacheMode::Refresh => CacheMode::Refresh,
            CoreCacheMode::Off => CacheMode::Off,
        }
    }
}

/// What a `deny_output` guardrail match does.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputAction {
    Block,
    Redact,
}

impl From<CoreOutputAction> for OutputAction {
    fn from(action: CoreOutputAction) -> Self {
        match action {
            CoreOutputAction::Block => OutputAction::Block,
            CoreOutputAction::Redact => OutputAction::Redact,
        }
    }
}

/// What a patch operation does.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchAction {
    Add,
    Update,
    Delete,
    Move,
}

impl From<fs::PatchAction> for PatchAction {
    fn from(action: fs::PatchAction) -> Self {
        match action {
            fs::PatchAction::Add => PatchAction::Add,
            fs::PatchAction::Update => PatchAction::Update,
            fs::PatchAction::Delete => PatchAction::Delete,
            fs::PatchAction::Move => PatchAction::Move,
        }
    }
}

/// What `read` found.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    Text,
    Directory,
    Binary,
}

impl From<fs::ReadKind> for ReadKind {
    fn from(kind: fs::ReadKind) -> Self {
        match kind {
            fs::ReadKind::Text => ReadKind::Text,
            fs::ReadKind::Directory => ReadKind::Directory,
            fs::ReadKind::Binary => ReadKind::Binary,
        }
    }
}

/// What `write` did.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteAction {
    Created,
    Updated,
}

impl From<fs::WriteAction> for WriteAction {
    fn from(action: fs::WriteAction) -> Self {
        match action {
            fs::WriteAction::Created => WriteAction::Created,
            fs::WriteAction::Updated => WriteAction::Updated,
        }
    }
}

/// The type of a file-system entry.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryType {
    File,
    Directory,
    Symlink,
    Other,
}

impl From<fs::EntryType> for EntryType {
    fn from(kind: fs::EntryType) -> Self {
        match kind {
            fs::EntryType::File => EntryType::File,
            fs::EntryType::Directory => EntryType::Directory,
            fs::EntryType::Symlink => EntryType::Symlink,
            fs::EntryType::Other => EntryType::Other,
        }
    }
}

/// The format of an executable tool.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    Protocol,
    Manifest,
    /// A Python or TypeScript script with a Forge docstring header.
    Docstring,
}

impl From<executables::ToolFormat> for ToolFormat {
    fn from(format: executables::ToolFormat) -> Self {
        match format {
            executables::ToolFormat::Protocol => ToolFormat::Protocol,
            executables::ToolFormat::Manifest => ToolFormat::Manifest,
            executables::ToolFormat::Docstring => ToolFormat::Docstring,
        }
    }
}

/// Why something in a tool directory is not (or not the) tool.
#[napi(string_enum = "snake_case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticKind {
    Invalid,
    Shadowed,
    MissingDirectory,
}

impl From<executables::DiagnosticKind> for DiagnosticKind {
    fn from(kind: executables::DiagnosticKind) -> Self {
        match kind {
            executables::DiagnosticKind::Invalid => DiagnosticKind::Invalid,
            executables::DiagnosticKind::Shadowed => DiagnosticKind::Shadowed,
            executables::DiagnosticKind::MissingDirectory => DiagnosticKind::MissingDirectory,
        }
    }
}

/// The language of a scaffolded or agent-written tool.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolLanguage {
    Python,
    Node,
    Bash,
}

impl From<ToolLanguage> for scaffold::Language {
    fn from(language: ToolLanguage) -> Self {
        match language {
            ToolLanguage::Python => scaffold::Language::Python,
            ToolLanguage::Node => scaffold::Language::Node,
            ToolLanguage::Bash => scaffold::Language::Bash,
        }
    }
}

/// How a worker's model calls tools.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallFormat {
    /// The provider's own tool calling.
    Native,
    /// Forge's `<tool>{...}</tool>` blocks in plain text (the `xmlToolCalls()` middleware).
    Xml,
}

impl From<toolgate_core::worker::ToolCallFormat> for ToolCallFormat {
    fn from(format: toolgate_core::worker::ToolCallFormat) -> Self {
        match format {
            toolgate_core::worker::ToolCallFormat::Native => ToolCallFormat::Native,
            toolgate_core::worker::ToolCallFormat::Xml => ToolCallFormat::Xml,
        }
    }
}
