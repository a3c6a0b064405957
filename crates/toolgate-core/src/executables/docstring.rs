//! Forge's docstring tools: a Python (`.py`) or TypeScript (`.ts`) script whose header
//! docstring declares the tool, and which reads its JSON input on stdin and prints its result.
//!
//! ```python
//! """
//! Tool: word_count
//! Description: Counts the words of a text.
//! Input:
//!   text (string): The text to count
//!   unique (boolean, optional): Count distinct words only
//! Output: {"count": <number>}
//! """
//! ```
//!
//! TypeScript uses a leading `/** ... */` block with the same lines. The input schema is built
//! from the `Input:` lines (`name (type): description`, `optional` after the type leaves it out
//! of `required`). A file whose header has no `Tool:` line is not a docstring tool; a header
//! with one that is malformed is reported with the file and the line.

use std::io::Read;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::check_tool_name;
use crate::error::{Error, Result};
use crate::limits::{
    MAX_DOCSTRING_DESCRIPTION_CHARS, MAX_DOCSTRING_HEADER_BYTES, MAX_DOCSTRING_INPUTS,
};

/// The script languages of docstring tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptLanguage {
    Python,
    TypeScript,
}

impl ScriptLanguage {
    /// The language of a file name: `.py` or `.ts`.
    pub fn of(path: &Path) -> Option<Self> {
        match path.extension().and_then(|ext| ext.to_str()) {
            Some("py") => Some(ScriptLanguage::Python),
            Some("ts") => Some(ScriptLanguage::TypeScript),
            _ => None,
        }
    }

    /// The interpreters tried, in order, on the tool's PATH.
    pub fn interpreters(self) -> &'static [&'static str] {
        match self {
            ScriptLanguage::Python => &["python3", "python"],
            ScriptLanguage::TypeScript => &["tsx", "bun"],
        }
    }

    /// `python` or `typescript`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScriptLanguage::Python => "python",
            ScriptLanguage::TypeScript => "typescript",
        }
    }
}

/// One `Input:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocInput {
    pub name: String,
    /// The JSON Schema type: `string`, `number`, `integer`, `boolean`, `array` or `object`.
    pub kind: &'static str,
    pub required: bool,
    pub description: String,
}

/// A docstring tool's header, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocstringTool {
    pub name: String,
    pub description: String,
    pub inputs: Vec<DocInput>,
    /// The `Output:` text, added to the description the model sees.
    pub output: Option<String>,
    pub language: ScriptLanguage,
}

impl DocstringTool {
    /// Reads the header of `path`. `Ok(None)` when the file is not a `.py`/`.ts` script or its
    /// header declares no `Tool:`; `Err` (naming the file and line) when the header is malformed.
    pub fn load(path: &Path) -> std::result::Result<Option<Self>, String> {
        let Some(language) = ScriptLanguage::of(path) else {
            return Ok(None);
        };
        let mut head = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| {
                file.take(MAX_DOCSTRING_HEADER_BYTES as u64)
                    .read_to_end(&mut head)
            })
            .map_err(|err| format!("cannot be read ({err})"))?;
        let text = String::from_utf8_lossy(&head);
        let Some(lines) = header_lines(&text, language) else {
            return Ok(None);
        };
        parse(&lines, language)
    }

    /// The JSON Schema of the input, built from the `Input:` lines.
    pub fn input_schema(&self) -> Value {
        let mut properties = Map::new();
        for input in &self.inputs {
            let mut property = json!({ "type": input.kind });
            if !input.description.is_empty() {
                property["description"] = Value::String(input.description.clone());
            }
            properties.insert(input.name.clone(), property);
        }
        let required: Vec<&str> = self
            .inputs
            .iter()
            .filter(|input| input.required)
            .map(|input| input.name.as_str())
            .collect();
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        })
    }

    /// The description the model sees: the `Description:` text, and what it returns.
    pub fn model_description(&self) -> String {
        match &self.output {
            Some(output) => format!("{} Returns: {output}", self.description),
            None => self.description.clone(),
        }
    }
}

/// The interpreter that runs a docstring tool: the first of the language's interpreters found
/// on `PATH` of the tool's environment. `CONFIG_INVALID` naming what to install otherwise.
pub fn interpreter(
    language: ScriptLanguage,
    tool: &str,
    cwd: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Result<std::path::PathBuf> {
    for name in language.interpreters() {
        if let Ok(found) = crate::exec::resolve_program(std::ffi::OsStr::new(name), cwd, env) {
            return Ok(found);
        }
    }
    Err(Error::ConfigInvalid(format!(
        "docstring tool '{tool}' is {} and none of {} is on PATH; install one (TypeScript: npm install -g tsx) or put it on PATH",
        language.as_str(),
        language.interpreters().join(", ")
    )))
}

/// What a sandboxed run of `script` under `interpreter` must be able to read besides the
/// interpreter's own install: the script; for TypeScript, the `node_modules` tree of an
/// interpreter installed by npm (`tsx` needs esbuild beside it) and the nearest `package.json`
/// and `tsconfig.json` above the script, which tsx reads to decide how to load it (an
/// unreadable one is an error to tsx, a missing one is not).
pub fn readable_roots(
    language: ScriptLanguage,
    interpreter: &Path,
    script: &Path,
) -> Vec<std::path::PathBuf> {
    let mut roots = vec![script.to_path_buf()];
    if language != ScriptLanguage::TypeScript {
        return roots;
    }
    let real = std::fs::canonicalize(interpreter).unwrap_or_else(|_| interpreter.to_path_buf());
    if let Some(modules) = real
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name == "node_modules"))
    {
        roots.push(modules.to_path_buf());
    }
    for config in ["package.json", "tsconfig.json"] {
        if let Some(found) = script
            .ancestors()
            .skip(1)
            .map(|dir| dir.join(config))
            .find(|path| path.is_file())
        {
            roots.push(found);
        }
    }
    roots
}

/// The header docstring's lines with their 1-based line numbers, or `None` when the script
/// does not start with one (after a shebang, blank lines and, for Python, comments).
fn header_lines(text: &str, language: ScriptLanguage) -> Option<Vec<(usize, String)>> {
    let mut lines = text.lines().enumerate().map(|(i, line)| (i + 1, line));
    let (start, first) = loop {
        let (number, line) = lines.next()?;
        let trimmed = line.trim();
        let skipped = trimmed.is_empty()
            || (number == 1 && trimmed.starts_with("#!"))
            || (language == ScriptLanguage::Python && trimmed.starts_with('#'))
            || (language == ScriptLanguage::TypeScript && trimmed.starts_with("//"));
        if !skipped {
            break (number, trimmed);
        }
    };
    match language {
        ScriptLanguage::Python => {
            let body = first.trim_start_matches(['r', 'R']);
            let quote = ["\"\"\"", "'''"]
                .into_iter()
                .find(|quote| body.starts_with(quote))?;
            let rest = &body[quote.len()..];
            if let Some(end) = rest.find(quote) {
                return Some(vec![(start, rest[..end].to_string())]);
            }
            let mut out = vec![(start, rest.to_string())];
            for (number, line) in lines {
                if let Some(end) = line.find(quote) {
                    out.push((number, line[..end].to_string()));
                    return Some(out);
                }
                out.push((number, line.to_string()));
            }
            Some(out) // unterminated: whatever was read
        }
        ScriptLanguage::TypeScript => {
            let rest = first.strip_prefix("/*")?;
            let rest = rest.strip_prefix('*').unwrap_or(rest);
            let strip = |line: &str| {
                let line = line.trim_start();
                let line = line.strip_prefix('*').unwrap_or(line);
                line.strip_prefix(' ').unwrap_or(line).to_string()
            };
            if let Some(end) = rest.find("*/") {
                return Some(vec![(start, rest[..end].trim().to_string())]);
            }
            let mut out = vec![(start, rest.trim().to_string())];
            for (number, line) in lines {
                if let Some(end) = line.find("*/") {
                    out.push((number, strip(&line[..end])));
                    return Some(out);
                }
                out.push((number, strip(line)));
            }
            Some(out)
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Preamble,
    Tool,
    Description,
    Input,
    Output,
}

/// The section a line opens (`Tool:`, `Description:`, `Input:`, `Output:`; any case) and the
/// text after the colon.
fn section_of(line: &str) -> Option<(Section, &str)> {
    let (key, rest) = line.trim().split_once(':')?;
    let section = match key.trim().to_ascii_lowercase().as_str() {
        "tool" => Section::Tool,
        "description" => Section::Description,
        "input" | "inputs" => Section::Input,
        "output" | "outputs" => Section::Output,
        _ => return None,
    };
    Some((section, rest.trim()))
}

fn parse(
    lines: &[(usize, String)],
    language: ScriptLanguage,
) -> std::result::Result<Option<DocstringTool>, String> {
    if !lines
        .iter()
        .any(|(_, line)| matches!(section_of(line), Some((Section::Tool, _))))
    {
        return Ok(None);
    }
    let mut name: Option<(usize, String)> = None;
    let mut description = String::new();
    let mut output = String::new();
    let mut inputs: Vec<DocInput> = Vec::new();
    let mut section = Section::Preamble;
    for (number, line) in lines {
        let at = |message: String| format!("line {number}: {message}");
        if let Some((opened, rest)) = section_of(line) {
            section = opened;
            match opened {
                Section::Tool => {
                    if let Some((first, _)) = &name {
                        return Err(at(format!(
                            "a second 'Tool:' line (the first is line {first})"
                        )));
                    }
                    check_tool_name(rest).map_err(|why| at(format!("'Tool: {rest}': {why}")))?;
                    name = Some((*number, rest.to_string()));
                }
                Section::Description => append(&mut description, rest),
                Section::Output => append(&mut output, rest),
                Section::Input => {
                    if !rest.is_empty() && !is_none(rest) {
                        inputs.push(input_line(rest).map_err(at)?);
                    }
                }
                Section::Preamble => {}
            }
            continue;
        }
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        match section {
            Section::Preamble => {}
            Section::Tool => {
                return Err(at(format!(
                    "'{text}' follows 'Tool:'; the tool name is one word on the 'Tool:' line, put other text under 'Description:'"
                )))
            }
            Section::Description => append(&mut description, text),
            Section::Output => append(&mut output, text),
            Section::Input => {
                if !is_none(text) {
                    inputs.push(input_line(text).map_err(at)?);
                }
            }
        }
    }
    let (line, name) = name.ok_or("no 'Tool:' line")?;
    if description.is_empty() {
        return Err(format!(
            "line {line}: tool '{name}' has no 'Description:'; add a 'Description: <what it does>' line to the header"
        ));
    }
    if description.chars().count() > MAX_DOCSTRING_DESCRIPTION_CHARS {
        return Err(format!(
            "line {line}: the description of '{name}' is longer than {MAX_DOCSTRING_DESCRIPTION_CHARS} characters"
        ));
    }
    if inputs.len() > MAX_DOCSTRING_INPUTS {
        return Err(format!(
            "line {line}: tool '{name}' declares {} inputs, at most {MAX_DOCSTRING_INPUTS} are accepted",
            inputs.len()
        ));
    }
    for (index, input) in inputs.iter().enumerate() {
        if inputs[..index].iter().any(|other| other.name == input.name) {
            return Err(format!(
                "input '{}' of tool '{name}' is declared twice; give each input one line",
                input.name
            ));
        }
    }
    Ok(Some(DocstringTool {
        name,
        description,
        inputs,
        output: (!output.is_empty()).then_some(output),
        language,
    }))
}

fn append(text: &mut String, more: &str) {
    if more.is_empty() {
        return;
    }
    if !text.is_empty() {
        text.push(' ');
    }
    text.push_str(more);
}

fn is_none(text: &str) -> bool {
    matches!(
        text.trim().to_ascii_lowercase().as_str(),
        "none" | "-" | "{}"
    )
}

/// `name (type): description`, `name (type, optional): description`, with an optional leading
/// `-` or `*` bullet.
fn input_line(text: &str) -> std::result::Result<DocInput, String> {
    let shape = || {
        format!("'{text}' is not an input line; write 'name (type): description' (types: string, number, integer, boolean, array, object; add ', optional' after the type for an optional input)")
    };
    let text = text.trim().trim_start_matches(['-', '*']).trim_start();
    let (name, rest) = text.split_once('(').ok_or_else(shape)?;
    let (inside, after) = rest.split_once(')').ok_or_else(shape)?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "input name '{name}' must be letters, digits, '_' or '-'"
        ));
    }
    let mut parts = inside.split(',').map(str::trim);
    let type_name = parts.next().unwrap_or_default();
    let kind = match type_name.to_ascii_lowercase().as_str() {
        "string" | "str" => "string",
        "number" | "float" => "number",
        "integer" | "int" => "integer",
        "boolean" | "bool" => "boolean",
        "array" | "list" => "array",
        "object" | "dict" => "object",
        other => {
            return Err(format!(
                "input '{name}' has type '{other}'; use string, number, integer, boolean, array or object"
            ))
        }
    };
    let mut required = true;
    for flag in parts {
        match flag.to_ascii_lowercase().as_str() {
            "optional" => required = false,
            "required" => required = true,
            other => {
                return Err(format!(
                    "input '{name}' has '{other}' after its type; only 'optional' or 'required' may follow"
                ))
            }
        }
    }
    let description = match after.trim_start().strip_prefix(':') {
        Some(description) => description.trim().to_string(),
        None if after.trim().is_empty() => String::new(),
        None => return Err(shape()),
    };
    Ok(DocInput {
        name: name.to_string(),
        kind,
        required,
        description,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str, text: &str) -> std::result::Result<Option<DocstringTool>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        DocstringTool::load(&path)
    }

    #[test]
    fn python_and_typescript_headers_become_schemas() {
        let python = load(
            "count.py",
            "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n\"\"\"\nTool: word_count\nDescription: Counts the words\n  of a text.\nInput:\n  text (string): The text to count\n  - unique (bool, optional): Distinct words only\nOutput: {\"count\": n}\n\"\"\"\nimport json\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(python.name, "word_count");
        assert_eq!(python.description, "Counts the words of a text.");
        assert_eq!(python.language, ScriptLanguage::Python);
        assert_eq!(
            python.input_schema(),
            json!({
                "type": "object",
                "properties": {
                    "text": { "type": "string", "description": "The text to count" },
                    "unique": { "type": "boolean", "description": "Distinct words only" }
                },
                "required": ["text"],
                "additionalProperties": false
            })
        );
        assert_eq!(
            python.model_description(),
            "Counts the words of a text. Returns: {\"count\": n}"
        );
        let ts = load(
            "add.ts",
            "/**\n * Tool: add\n * Description: Adds two numbers\n * Input:\n *   a (number): first\n *   b (integer): second\n * Output: the sum\n */\nconst x = 1;\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(ts.name, "add");
        assert_eq!(ts.inputs.len(), 2);
        assert_eq!(ts.input_schema()["required"], json!(["a", "b"]));
        let no_input = load(
            "now.py",
            "'''Tool: now\nDescription: The time\nInput: none\n'''\n",
        )
        .unwrap()
        .unwrap();
        assert!(no_input.inputs.is_empty());
    }

    #[test]
    fn scripts_without_a_tool_header_are_not_docstring_tools() {
        for (name, text) in [
            ("plain.py", "import sys\nprint(1)\n"),
            ("doc.py", "\"\"\"Just a module docstring.\"\"\"\n"),
            (
                "late.py",
                "import os\n\"\"\"\nTool: late\nDescription: x\n\"\"\"\n",
            ),
            ("plain.ts", "// Tool: x\nexport {}\n"),
            ("tool.sh", "# Tool: x\n"),
        ] {
            assert_eq!(load(name, text), Ok(None), "{name}");
        }
    }

    #[test]
    fn malformed_headers_name_the_line() {
        for (text, expected) in [
            ("\"\"\"\nTool: bad name\nDescription: x\n\"\"\"\n", "line 2:"),
            ("\"\"\"\nTool: t\nInput:\n  x: a string\n\"\"\"\n", "line 4: 'x: a string' is not an input line"),
            ("\"\"\"\nTool: t\nDescription: d\nInput:\n  x (text): y\n\"\"\"\n", "line 5: input 'x' has type 'text'"),
            ("\"\"\"\nTool: t\nDescription: d\nInput:\n  x (string, maybe): y\n\"\"\"\n", "line 5: input 'x' has 'maybe'"),
            ("\"\"\"\nTool: t\nInput:\n  x (string): y\n\"\"\"\n", "line 2: tool 't' has no 'Description:'"),
            ("\"\"\"\nTool: t\nTool: u\n\"\"\"\n", "line 3: a second 'Tool:' line"),
            ("\"\"\"\nTool: t\nDescription: d\nInput:\n  x (string): y\n  x (number): z\n\"\"\"\n", "input 'x' of tool 't' is declared twice"),
            ("\"\"\"\nTool: t\nextra words\nDescription: d\n\"\"\"\n", "line 3: 'extra words' follows 'Tool:'"),
        ] {
            let err = load("t.py", text).unwrap_err();
            assert!(err.starts_with(expected) || err.contains(expected), "{text}: {err}");
        }
    }
}
