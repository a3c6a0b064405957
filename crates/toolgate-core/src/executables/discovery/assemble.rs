//! Assembling: the tool list in precedence order, with every clash and failure reported.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use super::scan::{Found, ScannedDirectory};
use super::snapshot::ProtocolOutcome;
use crate::executables::{Diagnostic, DiagnosticKind, Discovery, ToolFormat, ToolSpec};

/// Builds the tool list in precedence order and reports clashes.
pub(super) fn assemble(
    scanned: Vec<ScannedDirectory>,
    answers: &HashMap<PathBuf, ProtocolOutcome>,
) -> Discovery {
    let mut discovery = Discovery::default();
    // name → (directory index, source) of the tool that holds the name.
    let mut holders: BTreeMap<String, (usize, PathBuf)> = BTreeMap::new();
    for (index, dir) in scanned.into_iter().enumerate() {
        for found in dir.found {
            let spec = match found {
                Found::Problem(diagnostic) => {
                    discovery.diagnostics.push(diagnostic);
                    continue;
                }
                Found::Protocol { listed, real, .. } => match answers.get(&real) {
                    Some(Ok(description)) => ToolSpec {
                        name: description.name.clone(),
                        description: description.description.clone(),
                        input_schema: Arc::clone(&description.input_schema),
                        format: ToolFormat::Protocol,
                        source: listed,
                        program: real,
                        directory: dir.directory.clone(),
                        manifest: None,
                        docstring: None,
                    },
                    Some(Err(reason)) => {
                        discovery
                            .diagnostics
                            .push(Diagnostic::invalid(listed, reason));
                        continue;
                    }
                    None => continue,
                },
                Found::Docstring {
                    listed,
                    real,
                    loaded,
                } => ToolSpec {
                    name: loaded.tool.name.clone(),
                    description: loaded.tool.model_description(),
                    input_schema: loaded.schema,
                    format: ToolFormat::Docstring,
                    source: listed,
                    program: real,
                    directory: dir.directory.clone(),
                    manifest: None,
                    docstring: Some(loaded.tool),
                },
                Found::Manifest { path, outcome } => match outcome {
                    Ok(loaded) => ToolSpec {
                        name: loaded.manifest.name.clone(),
                        description: loaded.manifest.description.clone(),
                        input_schema: loaded.schema,
                        format: ToolFormat::Manifest,
                        source: path,
                        program: loaded.program,
                        directory: dir.directory.clone(),
                        manifest: Some(loaded.manifest),
                        docstring: None,
                    },
                    Err(reason) => {
                        discovery
                            .diagnostics
                            .push(Diagnostic::invalid(path, reason));
                        continue;
                    }
                },
            };
            match holders.get(&spec.name) {
                Some((holder_dir, holder)) if *holder_dir == index => {
                    discovery.diagnostics.push(Diagnostic::invalid(
                        &spec.source,
                        format!(
                            "tool '{}' is also defined by '{}' in the same directory; rename one of them",
                            spec.name,
                            holder.display()
                        ),
                    ));
                }
                Some((_, holder)) => {
                    discovery.diagnostics.push(Diagnostic {
                        path: spec.source.clone(),
                        kind: DiagnosticKind::Shadowed,
                        reason: format!(
                            "tool '{}' is overridden by '{}' from a directory that takes precedence",
                            spec.name,
                            holder.display()
                        ),
                    });
                }
                None => {
                    holders.insert(spec.name.clone(), (index, spec.source.clone()));
                    discovery.tools.push(spec);
                }
            }
        }
    }
    discovery
}
