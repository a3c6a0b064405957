//! `tool.yaml` manifests: a tool described in YAML whose parameters become `--name=value` flags
//! of an entrypoint program.
//!
//! ```yaml
//! name: word_count
//! description: Counts the words of a text
//! version: "1.0"
//! entrypoint: run.sh              # relative to the tool directory, no '..'
//! usage: word_count --text=<text>
//! parameters:
//!   - { name: text, type: string, required: true, description: The text }
//!   - { name: unique, type: boolean }
//! ```

use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::check_tool_name;
use crate::error::{Error, Result};
use crate::schema::kind_of;

/// The file name of a manifest inside its tool directory.
pub const MANIFEST_FILE: &str = "tool.yaml";
/// A manifest larger than this is not a manifest.
const MAX_MANIFEST_BYTES: u64 = 256 * 1024;

/// A checked `tool.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub name: String,
    pub description: String,
    pub version: Option<String>,
    /// As written: relative to the tool directory.
    pub entrypoint: String,
    pub usage: Option<String>,
    pub parameters: Vec<Parameter>,
}

/// One parameter; it becomes `--name=value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parameter {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ParameterType,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub description: Option<String>,
}

/// The JSON type of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParameterType {
    String,
    Number,
    Integer,
    Boolean,
}

impl ParameterType {
    /// The spelling in `tool.yaml` and in JSON Schema.
    pub fn as_str(self) -> &'static str {
        match self {
            ParameterType::String => "string",
            ParameterType::Number => "number",
            ParameterType::Integer => "integer",
            ParameterType::Boolean => "boolean",
        }
    }
}

/// The manifest as written, before its checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    name: String,
    description: String,
    #[serde(default)]
    version: Option<Version>,
    entrypoint: String,
    #[serde(default)]
    usage: Option<String>,
    #[serde(default)]
    parameters: Vec<Parameter>,
}

/// `version: 1.2` is as common as `version: "1.2"`; both are kept as text.
#[derive(Deserialize)]
#[serde(untagged)]
enum Version {
    Text(String),
    Number(serde_yaml::Number),
}

impl Manifest {
    /// Reads and checks `<tool_dir>/tool.yaml`, including its entrypoint. Returns the manifest
    /// and the entrypoint's real path, or a reason that names the place and the fix.
    pub fn load(manifest_path: &Path) -> std::result::Result<(Manifest, PathBuf), String> {
        let tool_dir = manifest_path.parent().unwrap_or(Path::new("."));
        let meta = std::fs::metadata(manifest_path)
            .map_err(|err| format!("{MANIFEST_FILE} cannot be read: {err}"))?;
        if !meta.is_file() {
            return Err(format!("{MANIFEST_FILE} is not a regular file"));
        }
        if meta.len() > MAX_MANIFEST_BYTES {
            return Err(format!(
                "{MANIFEST_FILE} has {} bytes; a manifest has at most {MAX_MANIFEST_BYTES}",
                meta.len()
            ));
        }
        let text = std::fs::read_to_string(manifest_path)
            .map_err(|err| format!("{MANIFEST_FILE} cannot be read: {err}"))?;
        let manifest = Self::parse(&text)?;
        let program = resolve_entrypoint(tool_dir, &manifest.entrypoint)?;
        Ok((manifest, program))
    }

    /// Parses and checks manifest text (not the entrypoint file: see [`resolve_entrypoint`]).
    pub fn parse(text: &str) -> std::result::Result<Manifest, String> {
        let raw: RawManifest = crate::yaml::from_str(text).map_err(|err| {
            // serde_yaml says "missing field `x` at line 1 column 1"; the fix is to add it.
            format!("{MANIFEST_FILE} is not valid: {err}")
        })?;
        check_tool_name(&raw.name).map_err(|reason| format!("{MANIFEST_FILE}: name: {reason}"))?;
        if raw.description.trim().is_empty() {
            return Err(format!(
                "{MANIFEST_FILE}: description is empty; say what the tool does, the model reads it"
            ));
        }
        check_entrypoint_text(&raw.entrypoint)?;
        let mut seen = std::collections::HashSet::new();
        for (index, parameter) in raw.parameters.iter().enumerate() {
            check_parameter_name(&parameter.name)
                .map_err(|reason| format!("{MANIFEST_FILE}: parameters[{index}].name: {reason}"))?;
            if !seen.insert(parameter.name.as_str()) {
                return Err(format!(
                    "{MANIFEST_FILE}: parameters[{index}]: '{}' is listed twice; give each parameter once",
                    parameter.name
                ));
            }
        }
        Ok(Manifest {
            name: raw.name,
            description: raw.description,
            version: raw.version.map(|version| match version {
                Version::Text(text) => text,
                Version::Number(number) => number.to_string(),
            }),
            entrypoint: raw.entrypoint,
            usage: raw.usage,
            parameters: raw.parameters,
        })
    }

    /// The JSON Schema of the tool's input: one property per parameter, the required ones
    /// required, nothing else allowed.
    pub fn input_schema(&self) -> Value {
        let mut properties = Map::new();
        for parameter in &self.parameters {
            let mut property = json!({ "type": parameter.kind.as_str() });
            if let Some(description) = &parameter.description {
                property["description"] = json!(description);
            }
            properties.insert(parameter.name.clone(), property);
        }
        let required: Vec<&str> = self
            .parameters
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name.as_str())
            .collect();
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        })
    }

    /// The entrypoint's arguments for `input`: `--name=value` in the order of `parameters`,
    /// for the parameters given. Types are checked here too (the schema check comes first, but
    /// the flags must never depend on it): unknown or missing required arguments, a wrong type
    /// or a NUL byte are `INVALID_INPUT`.
    pub fn arguments(&self, input: &Value) -> Result<Vec<String>> {
        let invalid = |reason: String| {
            Error::InvalidInput(format!("input for tool '{}': {reason}", self.name))
        };
        let Value::Object(object) = input else {
            return Err(invalid(format!(
                "the input is {}; give a JSON object",
                kind_of(input)
            )));
        };
        if let Some(unknown) = object
            .keys()
            .find(|key| !self.parameters.iter().any(|p| &p.name == *key))
        {
            let known: Vec<&str> = self.parameters.iter().map(|p| p.name.as_str()).collect();
            return Err(invalid(format!(
                "unknown argument '{unknown}'; the parameters are: {}",
                if known.is_empty() {
                    "(none)".to_string()
                } else {
                    known.join(", ")
                }
            )));
        }
        let mut arguments = Vec::new();
        for parameter in &self.parameters {
            let Some(value) = object.get(&parameter.name) else {
                if parameter.required {
                    return Err(invalid(format!(
                        "the required argument '{}' is missing",
                        parameter.name
                    )));
                }
                continue;
            };
            let text = flag_value(parameter, value).map_err(invalid)?;
            arguments.push(format!("--{}={text}", parameter.name));
        }
        Ok(arguments)
    }
}

/// The text after `--name=` for one value, checked against the parameter's type.
fn flag_value(parameter: &Parameter, value: &Value) -> std::result::Result<String, String> {
    let wrong = || {
        format!(
            "at /{}: expected {}, got {}",
            parameter.name,
            parameter.kind.as_str(),
            kind_of(value)
        )
    };
    match (parameter.kind, value) {
        (ParameterType::String, Value::String(text)) => {
            if text.contains('\0') {
                return Err(format!(
                    "at /{}: the value contains a NUL byte, which no program argument can carry",
                    parameter.name
                ));
            }
            Ok(text.clone())
        }
        (ParameterType::Number, Value::Number(number)) => Ok(number.to_string()),
        (ParameterType::Integer, Value::Number(number)) => {
            if let Some(int) = number.as_i64() {
                Ok(int.to_string())
            } else if let Some(int) = number.as_u64() {
                Ok(int.to_string())
            } else {
                match number.as_f64() {
                    // JSON Schema counts 3.0 as an integer; the program gets "3".
                    Some(float) if float.fract() == 0.0 && float.abs() < 9.0e15 => {
                        Ok(format!("{}", float as i64))
                    }
                    _ => Err(format!(
                        "at /{}: expected integer, got {number}",
                        parameter.name
                    )),
                }
            }
        }
        (ParameterType::Boolean, Value::Bool(flag)) => Ok(flag.to_string()),
        _ => Err(wrong()),
    }
}

fn check_parameter_name(name: &str) -> std::result::Result<(), String> {
    let valid = !name.is_empty()
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "'{}' is not a parameter name; use letters, digits, '_' and '-' (not first)",
            name.escape_debug()
        ))
    }
}

/// The entrypoint as written must be a plain relative path inside the tool directory.
fn check_entrypoint_text(entrypoint: &str) -> std::result::Result<(), String> {
    let path = Path::new(entrypoint);
    if entrypoint.trim().is_empty() {
        return Err(format!(
            "{MANIFEST_FILE}: entrypoint is empty; name the program to run, relative to the tool directory"
        ));
    }
    if entrypoint.contains('\0') {
        return Err(format!("{MANIFEST_FILE}: entrypoint contains a NUL byte"));
    }
    if path.is_absolute() {
        return Err(format!(
            "{MANIFEST_FILE}: entrypoint '{entrypoint}' is absolute; give a path relative to the tool directory"
        ));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "{MANIFEST_FILE}: entrypoint '{entrypoint}' contains '..'; it must stay inside the tool directory"
        ));
    }
    Ok(())
}

/// The real path of `entrypoint`, which must resolve (symlinks followed) to a regular
/// executable file inside `tool_dir`.
pub fn resolve_entrypoint(
    tool_dir: &Path,
    entrypoint: &str,
) -> std::result::Result<PathBuf, String> {
    check_entrypoint_text(entrypoint)?;
    let root = tool_dir
        .canonicalize()
        .map_err(|err| format!("the tool directory cannot be resolved: {err}"))?;
    let real = tool_dir.join(entrypoint).canonicalize().map_err(|err| {
        format!("{MANIFEST_FILE}: entrypoint '{entrypoint}' cannot be resolved: {err}")
    })?;
    if !real.starts_with(&root) {
        return Err(format!(
            "{MANIFEST_FILE}: entrypoint '{entrypoint}' resolves to '{}', outside the tool directory '{}'; keep the program inside it",
            real.display(),
            root.display()
        ));
    }
    let meta = std::fs::metadata(&real)
        .map_err(|err| format!("{MANIFEST_FILE}: entrypoint '{entrypoint}': {err}"))?;
    if !meta.is_file() {
        return Err(format!(
            "{MANIFEST_FILE}: entrypoint '{entrypoint}' is not a regular file"
        ));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "{MANIFEST_FILE}: entrypoint '{entrypoint}' is not executable; run chmod +x on it"
        ));
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executables::test_support::{write_script, Scratch};

    const GOOD: &str = "name: word_count\ndescription: Counts words\nversion: 1.0\nentrypoint: run.sh\nusage: word_count --text=<text>\nparameters:\n  - { name: text, type: string, required: true, description: The text }\n  - { name: limit, type: integer }\n  - { name: ratio, type: number }\n  - { name: unique, type: boolean }\n";

    fn good() -> Manifest {
        Manifest::parse(GOOD).unwrap()
    }

    #[test]
    fn a_good_manifest_parses_and_derives_its_schema() {
        let manifest = good();
        assert_eq!(manifest.version.as_deref(), Some("1.0"));
        let schema = manifest.input_schema();
        assert_eq!(schema["properties"]["limit"]["type"], "integer");
        assert_eq!(schema["properties"]["text"]["description"], "The text");
        assert_eq!(schema["required"], json!(["text"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        crate::schema::InputSchema::compile(&schema).unwrap();
    }

    #[test]
    fn arguments_follow_the_parameter_order_as_flags() {
        let args = good()
            .arguments(&json!({"unique": true, "limit": 3.0, "text": "a b", "ratio": 0.5}))
            .unwrap();
        assert_eq!(
            args,
            ["--text=a b", "--limit=3", "--ratio=0.5", "--unique=true"]
        );
        assert_eq!(
            good().arguments(&json!({"text": "x"})).unwrap(),
            ["--text=x"]
        );
    }

    /// Attack: values that look like flags or shell syntax stay inside their own `--name=`.
    #[test]
    fn hostile_values_stay_inside_their_flag() {
        for value in [
            "--limit=999",
            "-rf /",
            "$(id)",
            "`id`",
            "a\nb",
            "; rm -rf ~",
        ] {
            let args = good().arguments(&json!({"text": value})).unwrap();
            assert_eq!(args, [format!("--text={value}")]);
        }
    }

    #[test]
    fn unknown_missing_and_mistyped_arguments_are_invalid_input() {
        let cases = [
            (json!({"text": "x", "extra": 1}), "unknown argument 'extra'"),
            (json!({"limit": 1}), "required argument 'text' is missing"),
            (
                json!({"text": 5}),
                "at /text: expected string, got a number",
            ),
            (json!({"text": "x", "limit": 1.5}), "expected integer"),
            (json!({"text": "x", "unique": "yes"}), "expected boolean"),
            (json!({"text": "x", "ratio": "1"}), "expected number"),
            (json!({"text": "a\u{0}b"}), "NUL byte"),
            (json!(["x"]), "give a JSON object"),
        ];
        for (input, expected) in cases {
            let err = good().arguments(&input).unwrap_err();
            assert_eq!(err.code(), "INVALID_INPUT");
            assert!(err.to_string().contains(expected), "{input}: {err}");
        }
    }

    #[test]
    fn invalid_manifests_say_what_is_wrong_and_where() {
        let cases = [
            ("description: d\nentrypoint: run.sh\n", "missing field `name`"),
            ("name: t\nentrypoint: run.sh\n", "missing field `description`"),
            ("name: t\ndescription: d\n", "missing field `entrypoint`"),
            ("name: t\ndescription: d\nentrypoint: r\ncolour: red\n", "unknown field `colour`"),
            ("name: t\ndescription: d\nentrypoint: r\n", ""),
            ("name: 'a b'\ndescription: d\nentrypoint: r\n", "^[a-zA-Z0-9_-]+$"),
            ("name: t\ndescription: ' '\nentrypoint: r\n", "description is empty"),
            ("name: t\ndescription: d\nentrypoint: /bin/sh\n", "is absolute"),
            ("name: t\ndescription: d\nentrypoint: ../../bin/sh\n", "contains '..'"),
            ("name: t\ndescription: d\nentrypoint: bin/../../x\n", "contains '..'"),
            ("name: t\ndescription: d\nentrypoint: ''\n", "entrypoint is empty"),
            (
                "name: t\ndescription: d\nentrypoint: r\nparameters:\n  - { name: a, type: list }\n",
                "unknown variant `list`",
            ),
            (
                "name: t\ndescription: d\nentrypoint: r\nparameters:\n  - { name: a, type: string, default: x }\n",
                "unknown field `default`",
            ),
            (
                "name: t\ndescription: d\nentrypoint: r\nparameters:\n  - { name: a, type: string }\n  - { name: a, type: integer }\n",
                "listed twice",
            ),
            (
                "name: t\ndescription: d\nentrypoint: r\nparameters:\n  - { name: '--x', type: string }\n",
                "parameters[0].name",
            ),
            ("name: t\ndescription: d\nentrypoint: r\nparameters:\n  - { name: a }\n", "missing field `type`"),
        ];
        for (yaml, expected) in cases {
            match Manifest::parse(yaml) {
                Ok(_) => assert!(expected.is_empty(), "{yaml} parsed"),
                Err(err) => {
                    assert!(
                        !expected.is_empty() && err.contains(expected),
                        "{yaml}: {err}"
                    )
                }
            }
        }
        let err =
            Manifest::parse("name: t\ndescription: d\nentrypoint: r\nextra: 1\n").unwrap_err();
        assert!(err.contains("line 4"), "{err}");
    }

    #[test]
    fn load_resolves_a_good_entrypoint() {
        let scratch = Scratch::new();
        let dir = scratch.dir("word_count");
        std::fs::write(dir.join(MANIFEST_FILE), GOOD).unwrap();
        let script = write_script(&dir, "run.sh", "#!/bin/sh\necho ok\n");
        let (manifest, program) = Manifest::load(&dir.join(MANIFEST_FILE)).unwrap();
        assert_eq!(manifest.name, "word_count");
        assert_eq!(program, script);
    }

    /// Attack: an entrypoint that leaves the tool directory through a symlink, or that is not a
    /// regular executable file, is refused.
    #[test]
    fn entrypoints_must_be_executable_files_inside_the_tool_directory() {
        let scratch = Scratch::new();
        let dir = scratch.dir("tool");
        let outside = write_script(scratch.path(), "outside.sh", "#!/bin/sh\n");
        std::os::unix::fs::symlink(&outside, dir.join("escape")).unwrap();
        std::os::unix::fs::symlink("/bin/sh", dir.join("shell")).unwrap();
        std::fs::create_dir(dir.join("subdir")).unwrap();
        std::fs::write(dir.join("plain.sh"), "#!/bin/sh\n").unwrap();
        let inner = write_script(&dir, "inner.sh", "#!/bin/sh\n");
        std::os::unix::fs::symlink("inner.sh", dir.join("alias")).unwrap();

        let cases = [
            ("escape", "outside the tool directory"),
            ("shell", "outside the tool directory"),
            ("subdir", "not a regular file"),
            ("plain.sh", "chmod +x"),
            ("missing.sh", "cannot be resolved"),
            ("../outside.sh", "contains '..'"),
        ];
        for (entrypoint, expected) in cases {
            let err = resolve_entrypoint(&dir, entrypoint).unwrap_err();
            assert!(err.contains(expected), "{entrypoint}: {err}");
        }
        assert_eq!(resolve_entrypoint(&dir, "alias").unwrap(), inner);
        assert_eq!(resolve_entrypoint(&dir, "./inner.sh").unwrap(), inner);
    }
}
