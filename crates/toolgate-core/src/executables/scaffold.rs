//! Writing new tools: `toolgate tools new` (a working example in Python, Node or bash, as a
//! protocol tool or a `tool.yaml` manifest) and `create_custom_tool` (an agent's protocol tool,
//! checked by running its `description` before it is kept).
//!
//! Files appear atomically (written to a hidden temporary file, then linked or renamed into
//! place), an existing tool is never overwritten unless replacing was asked for, and a created
//! tool that does not answer `description` correctly is removed again (or the previous version
//! restored): a failed creation leaves the directory as it was.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use serde_json::{json, Value};

use super::check_tool_name;
use super::manifest::MANIFEST_FILE;
use super::protocol::{self, DESCRIPTION_TIMEOUT};
use super::run::tool_environment;
use crate::error::{Error, Result};
use crate::path::PathValidator;
use crate::sandbox::Sandbox;
use crate::schema::InputSchema;

/// The languages tools can be scaffolded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Python,
    Node,
    Bash,
}

impl FromStr for Language {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "python" => Ok(Language::Python),
            "node" => Ok(Language::Node),
            "bash" => Ok(Language::Bash),
            other => Err(Error::InvalidInput(format!(
                "language '{}' is not supported; use python, node or bash",
                other.escape_debug()
            ))),
        }
    }
}

impl Language {
    /// The file extension of a protocol tool in this language.
    pub fn extension(self) -> &'static str {
        match self {
            Language::Python => "py",
            Language::Node => "mjs",
            Language::Bash => "sh",
        }
    }
}

/// A protocol tool to write.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub language: Language,
    /// Python: code that defines `run(args)`; Node: code that defines `run(args)` (may be
    /// async); bash: the body of the `run` command, which reads the JSON input on stdin. The
    /// return value (Python, Node) or stdout (bash) is the result. `None`: a working example.
    pub code: Option<String>,
}

impl NewTool {
    /// The example tool `toolgate tools new <name> --lang <language>` writes.
    pub fn example(name: &str, language: Language) -> Self {
        let (description, input_schema) = match language {
            Language::Bash => (
                "Echoes its JSON input back (an example made by `toolgate tools new`; replace it with what your tool does)",
                json!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "Any text"}},
                    "required": ["text"],
                    "additionalProperties": false
                }),
            ),
            Language::Python | Language::Node => (
                "Greets someone by name (an example made by `toolgate tools new`; replace it with what your tool does)",
                json!({
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "Who to greet"}},
                    "required": ["name"],
                    "additionalProperties": false
                }),
            ),
        };
        Self {
            name: name.to_string(),
            description: description.to_string(),
            input_schema,
            language,
            code: None,
        }
    }

    /// The file name of this tool in its directory: `<name>.<extension>`.
    pub fn file_name(&self) -> String {
        format!("{}.{}", self.name, self.language.extension())
    }

    fn check(&self) -> Result<()> {
        check_tool_name(&self.name).map_err(Error::InvalidInput)?;
        if self.description.trim().is_empty() {
            return Err(Error::InvalidInput(
                "the description is empty; say what the tool does, the model reads it".into(),
            ));
        }
        InputSchema::compile(&self.input_schema).map_err(Error::InvalidInput)?;
        if let Some(code) = &self.code {
            if code.trim().is_empty() {
                return Err(Error::InvalidInput(
                    "the code is empty; give the code of the tool".into(),
                ));
            }
            if code.contains('\0') {
                return Err(Error::InvalidInput("the code contains a NUL byte".into()));
            }
        }
        Ok(())
    }

    /// The complete source of the tool.
    pub fn render(&self) -> Result<String> {
        self.check()?;
        let description = json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        });
        let pretty = serde_json::to_string_pretty(&description).map_err(|err| {
            Error::InvalidInput(format!("the description cannot be encoded: {err}"))
        })?;
        Ok(match self.language {
            Language::Python => python_protocol(&self.name, &pretty, self.code.as_deref()),
            Language::Node => node_protocol(&self.name, &pretty, self.code.as_deref()),
            Language::Bash => bash_protocol(&self.name, &pretty, self.code.as_deref()),
        })
    }
}

fn python_protocol(name: &str, description_json: &str, code: Option<&str>) -> String {
    let code = code.unwrap_or(
        r#"def run(args):
    """Does the work. `args` is the JSON input, already checked against input_schema."""
    return {"greeting": f"Hello, {args['name']}!"}"#,
    );
    // A raw triple-quoted string holds the JSON verbatim: JSON escapes every quote inside its
    // strings, so `"""` cannot occur in it, and it never ends with a backslash.
    format!(
        r#"#!/usr/bin/env python3
"""{name}: a toolgate executable tool.

`{name} description` prints what the tool is; `{name} run` reads the JSON input on stdin and
prints the result (JSON, or text). Print {{"error": "..."}} or exit non-zero to report a failure.
"""
import json
import sys

TOOL_DESCRIPTION = json.loads(r"""{description_json}""")

{code}


def toolgate_main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "description":
        if not callable(globals().get("run")):
            print("this tool defines no run(args) function", file=sys.stderr)
            return 1
        json.dump(TOOL_DESCRIPTION, sys.stdout)
        return 0
    if command == "run":
        args = json.load(sys.stdin)
        try:
            result = run(args)
        except Exception as error:  # the caller gets {{"error": ...}} as a TOOL_FAILED error
            json.dump({{"error": f"{{type(error).__name__}}: {{error}}"}}, sys.stdout)
            return 0
        if isinstance(result, str):
            sys.stdout.write(result)
        else:
            json.dump(result, sys.stdout)
        return 0
    print(f"usage: {{sys.argv[0]}} description|run", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(toolgate_main())
"#
    )
}

fn node_protocol(name: &str, description_json: &str, code: Option<&str>) -> String {
    let code = code.unwrap_or(
        r#"/** Does the work. `args` is the JSON input, already checked against input_schema. */
async function run(args) {
  return { greeting: `Hello, ${args.name}!` };
}"#,
    );
    format!(
        r#"#!/usr/bin/env node
// {name}: a toolgate executable tool.
// `{name} description` prints what the tool is; `{name} run` reads the JSON input on stdin and
// prints the result (JSON, or text). Print {{"error": "..."}} or exit non-zero to report a failure.

const TOOL_DESCRIPTION = {description_json};

{code}

async function toolgateMain() {{
  const command = process.argv[2] ?? '';
  if (command === 'description') {{
    if (typeof run !== 'function') {{
      console.error('this tool defines no run(args) function');
      return 1;
    }}
    process.stdout.write(JSON.stringify(TOOL_DESCRIPTION));
    return 0;
  }}
  if (command === 'run') {{
    let text = '';
    process.stdin.setEncoding('utf8');
    for await (const chunk of process.stdin) text += chunk;
    let result;
    try {{
      result = await run(JSON.parse(text));
    }} catch (error) {{
      process.stdout.write(JSON.stringify({{ error: String(error?.message ?? error) }}));
      return 0;
    }}
    process.stdout.write(typeof result === 'string' ? result : JSON.stringify(result ?? null));
    return 0;
  }}
  console.error(`usage: ${{process.argv[1]}} description|run`);
  return 2;
}}

process.exitCode = await toolgateMain();
"#
    )
}

fn bash_protocol(name: &str, description_json: &str, code: Option<&str>) -> String {
    let code = code.unwrap_or(
        r#"  # The JSON input arrives on stdin; parse it with jq when your tool takes arguments,
  # e.g. text=$(jq -r .text). Whatever is printed is the result.
  input=$(cat)
  printf '{"received": %s}\n' "$input""#,
    );
    format!(
        r#"#!/usr/bin/env bash
# {name}: a toolgate executable tool.
# `{name} description` prints what the tool is; `{name} run` reads the JSON input on stdin and
# prints the result (JSON, or text). Print {{"error": "..."}} or exit non-zero to report a failure.
set -euo pipefail

run_tool() {{
{code}
}}

case "${{1:-}}" in
  description)
    cat <<'TOOLGATE_DESCRIPTION'
{description_json}
TOOLGATE_DESCRIPTION
    ;;
  run) run_tool ;;
  *) echo "usage: $0 description|run" >&2; exit 2 ;;
esac
"#
    )
}

/// The `tool.yaml` and entrypoint of an example manifest tool: `(file name, content)` pairs.
pub fn manifest_example(name: &str, language: Language) -> Result<Vec<(String, String)>> {
    check_tool_name(name).map_err(Error::InvalidInput)?;
    let entrypoint = format!("run.{}", language.extension());
    let yaml = format!(
        r#"# The {name} tool: toolgate runs `{entrypoint}` with one --name=value flag per parameter.
name: "{name}"
description: "Greets someone by name (an example made by `toolgate tools new`; replace it with what your tool does)"
version: "0.1.0"
entrypoint: {entrypoint}
usage: "{name} --name=<who>"
parameters:
  - name: name
    type: string
    required: true
    description: Who to greet
"#
    );
    let program = match language {
        Language::Bash => format!(
            r#"#!/usr/bin/env bash
# Entry point of the {name} tool: each parameter arrives as --name=value.
set -euo pipefail
name=""
for argument in "$@"; do
  case "$argument" in
    --name=*) name="${{argument#--name=}}" ;;
    *) echo "unknown argument: $argument" >&2; exit 2 ;;
  esac
done
printf 'Hello, %s!\n' "$name"
"#
        ),
        Language::Python => format!(
            r#"#!/usr/bin/env python3
"""Entry point of the {name} tool: each parameter arrives as --name=value."""
import json
import sys

args = {{}}
for argument in sys.argv[1:]:
    key, separator, value = argument.partition("=")
    if not key.startswith("--") or not separator:
        print(f"unknown argument: {{argument}}", file=sys.stderr)
        sys.exit(2)
    args[key[2:]] = value

json.dump({{"greeting": f"Hello, {{args.get('name', '')}}!"}}, sys.stdout)
"#
        ),
        Language::Node => format!(
            r#"#!/usr/bin/env node
// Entry point of the {name} tool: each parameter arrives as --name=value.
const args = {{}};
for (const argument of process.argv.slice(2)) {{
  const match = /^--([^=]+)=(.*)$/s.exec(argument);
  if (!match) {{
    console.error(`unknown argument: ${{argument}}`);
    process.exit(2);
  }}
  args[match[1]] = match[2];
}}
process.stdout.write(JSON.stringify({{ greeting: `Hello, ${{args.name ?? ''}}!` }}));
"#
        ),
    };
    Ok(vec![
        (MANIFEST_FILE.to_string(), yaml),
        (entrypoint, program),
    ])
}

/// Writes the example protocol tool `tool` into `dir` (created when missing) and returns its
/// path. Refuses with `INVALID_INPUT` when a tool of that name is already there.
pub fn write_protocol_tool(dir: &Path, tool: &NewTool) -> Result<PathBuf> {
    let content = tool.render()?;
    create_dir(dir)?;
    refuse_existing(dir, &tool.name, None)?;
    let path = dir.join(tool.file_name());
    place_file(&path, content.as_bytes(), 0o755, false)?;
    Ok(path)
}

/// Writes an example manifest tool as `dir/<name>/` and returns the path of its `tool.yaml`.
/// Refuses with `INVALID_INPUT` when a tool of that name is already there.
pub fn write_manifest_tool(dir: &Path, name: &str, language: Language) -> Result<PathBuf> {
    let files = manifest_example(name, language)?;
    create_dir(dir)?;
    refuse_existing(dir, name, None)?;
    let tool_dir = dir.join(name);
    std::fs::create_dir(&tool_dir).map_err(|err| Error::io("creating", &tool_dir, err))?;
    let written = files.iter().try_for_each(|(file, content)| {
        let mode = if file == MANIFEST_FILE { 0o644 } else { 0o755 };
        place_file(&tool_dir.join(file), content.as_bytes(), mode, false).map(|_| ())
    });
    if let Err(err) = written {
        let _ = std::fs::remove_dir_all(&tool_dir);
        return Err(err);
    }
    Ok(tool_dir.join(MANIFEST_FILE))
}

/// What [`create_protocol_tool`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTool {
    pub name: String,
    pub path: PathBuf,
    /// Whether an earlier version was replaced.
    pub replaced: bool,
}

/// Writes an agent's protocol tool into `dir` and keeps it only when it answers `description`
/// correctly (run through the executor like discovery does, under `sandbox`: the code is the
/// model's); otherwise the directory is left
/// as it was and the error says why (`INVALID_INPUT`, with the tool's stderr).
///
/// When `dir` lies inside `work_dir` it must stay there with symlinks resolved
/// (`PATH_OUTSIDE_ROOT`). Without `replace`, an existing tool of that name is an error; with
/// it, only the same file (`<name>.<ext>`) may be replaced.
pub async fn create_protocol_tool(
    work_dir: &Path,
    dir: &Path,
    tool: &NewTool,
    replace: bool,
    sandbox: Option<&Arc<Sandbox>>,
) -> Result<CreatedTool> {
    let content = tool.render()?;
    let dir = confine(work_dir, dir)?;
    let path = dir.join(tool.file_name());
    let setup_dir = dir.clone();
    let setup_path = path.clone();
    let name = tool.name.clone();
    let previous = tokio::task::spawn_blocking(move || -> Result<Option<Vec<u8>>> {
        create_dir(&setup_dir)?;
        refuse_existing(&setup_dir, &name, replace.then_some(setup_path.as_path()))?;
        place_file(&setup_path, content.as_bytes(), 0o755, replace)
    })
    .await
    .map_err(|err| Error::ToolFailed(format!("creating the tool failed: {err}")))??;

    let checked =
        protocol::describe(&path, &tool_environment(&[]), DESCRIPTION_TIMEOUT, sandbox).await;
    if let Err(refusal) = checked {
        let restore_path = path.clone();
        let restored = tokio::task::spawn_blocking(move || match previous {
            Some(bytes) => place_file(&restore_path, &bytes, 0o755, true).map(|_| ()),
            None => std::fs::remove_file(&restore_path)
                .map_err(|err| Error::io("removing", &restore_path, err)),
        })
        .await;
        let note = match restored {
            Ok(Ok(())) => "nothing was kept",
            _ => "and it could not be removed again",
        };
        return Err(Error::InvalidInput(format!(
            "the new tool '{}' does not work, {note}: {}",
            tool.name, refusal.reason
        )));
    }
    Ok(CreatedTool {
        name: tool.name.clone(),
        path,
        replaced: previous.is_some(),
    })
}

/// `dir` with symlinks resolved when it lies inside `work_dir` (then it must stay inside);
/// a directory elsewhere was configured deliberately and is used as given.
fn confine(work_dir: &Path, dir: &Path) -> Result<PathBuf> {
    let absolute = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        work_dir.join(dir)
    };
    let validator = PathValidator::new(work_dir)?;
    let lexically_inside = lexical_normal(&absolute).starts_with(lexical_normal(work_dir))
        || lexical_normal(&absolute).starts_with(validator.root());
    if lexically_inside {
        validator.resolve(&absolute)
    } else {
        Ok(absolute)
    }
}

/// `a/./b/../c` → `a/c` without touching the file system.
fn lexical_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|err| Error::io("creating the tool directory", dir, err))
}

/// Refuses when any file that would define tool `name` exists in `dir`, except `allowed`.
fn refuse_existing(dir: &Path, name: &str, allowed: Option<&Path>) -> Result<()> {
    let candidates = std::iter::once(name.to_string()).chain(
        [Language::Python, Language::Node, Language::Bash]
            .iter()
            .map(|language| format!("{name}.{}", language.extension())),
    );
    for candidate in candidates {
        let path = dir.join(&candidate);
        if std::fs::symlink_metadata(&path).is_ok() && Some(path.as_path()) != allowed {
            return Err(Error::InvalidInput(format!(
                "'{}' already exists; choose another name{}",
                path.display(),
                if allowed.is_some() {
                    ""
                } else {
                    " (or replace the tool explicitly)"
                }
            )));
        }
    }
    Ok(())
}

/// Puts `content` at `path` atomically. Without `replace` an existing entry is an error; with
/// it, an existing regular file is replaced and its content returned (for a rollback).
fn place_file(path: &Path, content: &[u8], mode: u32, replace: bool) -> Result<Option<Vec<u8>>> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let previous = if replace {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_file() => {
                Some(std::fs::read(path).map_err(|err| Error::io("reading", path, err))?)
            }
            Ok(_) => {
                return Err(Error::InvalidInput(format!(
                    "'{}' exists and is not a regular file; it is not replaced",
                    path.display()
                )))
            }
            Err(_) => None,
        }
    } else {
        None
    };
    let temp = dir.join(format!(
        ".{}.toolgate-{}-{}.tmp",
        path.file_name()
            .map_or("tool".into(), |n| n.to_string_lossy()),
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let result = (|| -> Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)
            .map_err(|err| Error::io("writing", &temp, err))?;
        file.write_all(content)
            .and_then(|()| file.sync_all())
            .map_err(|err| Error::io("writing", &temp, err))?;
        drop(file);
        if replace {
            std::fs::rename(&temp, path).map_err(|err| Error::io("replacing", path, err))
        } else {
            // link() fails when the target exists, so a tool that appeared meanwhile is kept.
            std::fs::hard_link(&temp, path).map_err(|err| {
                if err.kind() == std::io::ErrorKind::AlreadyExists {
                    Error::InvalidInput(format!(
                        "'{}' already exists; choose another name",
                        path.display()
                    ))
                } else {
                    Error::io("creating", path, err)
                }
            })
        }
    })();
    let _ = std::fs::remove_file(&temp);
    result.map(|()| previous)
}

#[cfg(test)]
mod tests;
