//! The executable protocol: `<tool> description` prints `{name, description, input_schema}` as
//! JSON on stdout; `<tool> run` reads the input as JSON on stdin and writes the result to
//! stdout. This module asks a tool for its description and checks the answer.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{check_tool_name, schema_text, SchemaText};
use crate::exec::{self, ExecOutput, ExecRequest};
use crate::sandbox::Sandbox;
use crate::schema::{clip, kind_of, InputSchema};

pub use crate::limits::DESCRIPTION_TIMEOUT;
/// Cap for a description's output; a schema larger than this is not a tool schema.
pub const DESCRIPTION_MAX_BYTES: usize = 1024 * 1024;
/// How much of a failing tool's stderr goes into a message.
pub(crate) const STDERR_EXCERPT_CHARS: usize = 2_000;

/// What a protocol tool says about itself, checked.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Description {
    pub name: String,
    pub description: String,
    #[serde(with = "super::shared_schema")]
    pub input_schema: SchemaText,
}

impl PartialEq for Description {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.input_schema.get() == other.input_schema.get()
    }
}

/// Why a description was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: String,
}

/// Asks the program at `program` (absolute, symlinks resolved) for its description, with
/// `cwd` = its directory, the environment `env` with a private HOME/TMPDIR, `timeout`, and
/// under `sandbox` (the discovery sandbox: a tool directory is untrusted code, and this runs
/// before anyone was asked). Always through the executor.
pub async fn describe(
    program: &Path,
    env: &[(OsString, OsString)],
    timeout: Duration,
    sandbox: Option<&Arc<Sandbox>>,
) -> Result<Description, Refusal> {
    // A tool directory named with `..` (`../executable-tools` beside the worker file) reaches
    // here as written; the sandbox's view is built from real paths.
    let program = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    let cwd = program.parent().unwrap_or(Path::new("/")).to_path_buf();
    let mut request = ExecRequest::new(program.as_os_str(), &cwd)
        .args(["description"])
        .env(env.iter().cloned())
        .private_dirs()
        .timeout(timeout)
        .max_output_bytes(DESCRIPTION_MAX_BYTES);
    request.sandbox = sandbox.cloned();
    if request.sandbox.is_some() {
        // It runs in its own directory, which the call's view must then hold (read-only); the
        // sandbox may grant nothing there (a tool directory outside the work directory).
        request.readable.push(cwd);
    }
    match exec::run(request).await {
        Ok(output) => interpret(&output, timeout),
        Err(err) => Err(Refusal {
            reason: format!("`description` could not be started: {err}"),
        }),
    }
}

/// Turns the output of `<tool> description` into a checked [`Description`].
pub fn interpret(output: &ExecOutput, timeout: Duration) -> Result<Description, Refusal> {
    let refuse = |reason: String| Err(Refusal { reason });
    if output.timed_out {
        return refuse(format!(
            "`description` did not finish within {} s and was killed; it must print its JSON and exit at once",
            timeout.as_secs_f64()
        ));
    }
    if !output.success() {
        return refuse(format!(
            "`description` failed ({}){}",
            ending(output),
            stderr_excerpt(&output.stderr)
        ));
    }
    if output.stdout_truncated {
        return refuse(format!(
            "`description` printed more than {DESCRIPTION_MAX_BYTES} bytes; a description is one small JSON object"
        ));
    }
    parse(&output.stdout).or_else(refuse)
}

/// Parses and checks the JSON a tool printed for `description`: an object with a `name`
/// matching `^[a-zA-Z0-9_-]+$`, a non-empty `description` and an `input_schema` that compiles.
pub fn parse(stdout: &[u8]) -> Result<Description, String> {
    let value: Value = serde_json::from_slice(stdout).map_err(|err| {
        if stdout.iter().all(u8::is_ascii_whitespace) {
            "`description` printed nothing; it must print {\"name\", \"description\", \"input_schema\"} as JSON".to_string()
        } else {
            format!(
                "`description` did not print valid JSON ({err}); it printed: {}",
                clip(String::from_utf8_lossy(stdout).trim())
            )
        }
    })?;
    let Value::Object(mut object) = value else {
        return Err(format!(
            "`description` printed {}; it must print a JSON object {{\"name\", \"description\", \"input_schema\"}}",
            kind_of(&value)
        ));
    };
    let name = match object.remove("name") {
        Some(Value::String(name)) => name,
        Some(other) => {
            return Err(format!(
                "\"name\" is {}; it must be a string",
                kind_of(&other)
            ))
        }
        None => return Err("the description has no \"name\"".into()),
    };
    check_tool_name(&name)?;
    let description = match object.remove("description") {
        Some(Value::String(text)) if !text.trim().is_empty() => text,
        Some(Value::String(_)) => {
            return Err(format!(
            "tool '{name}': \"description\" is empty; say what the tool does, the model reads it"
        ))
        }
        Some(other) => {
            return Err(format!(
                "tool '{name}': \"description\" is {}; it must be a string",
                kind_of(&other)
            ))
        }
        None => {
            return Err(format!(
                "tool '{name}': the description has no \"description\""
            ))
        }
    };
    let Some(input_schema) = object.remove("input_schema") else {
        return Err(format!(
            "tool '{name}': the description has no \"input_schema\"; give a JSON Schema with \"type\": \"object\""
        ));
    };
    InputSchema::compile(&input_schema).map_err(|reason| format!("tool '{name}': {reason}"))?;
    Ok(Description {
        name,
        description,
        input_schema: schema_text(&input_schema),
    })
}

/// `exit code 3` or `killed by SIGSEGV`.
pub(crate) fn ending(output: &ExecOutput) -> String {
    match (&output.exit_code, &output.signal) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by {signal}"),
        (None, None) => "ended without an exit code".into(),
    }
}

/// `: <stderr>` trimmed and cut, or nothing when stderr is empty.
pub(crate) fn stderr_excerpt(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let count = text.chars().count();
    if count <= STDERR_EXCERPT_CHARS {
        return format!(": {text}");
    }
    // The end of stderr is where the error usually is.
    let tail: String = text.chars().skip(count - STDERR_EXCERPT_CHARS).collect();
    format!(": …{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executables::test_support::{minimal_env, write_script, Scratch};

    #[test]
    fn a_good_description_parses() {
        let description = parse(
            br#"{"name":"weather","description":"Weather for a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"extra":1}"#,
        )
        .unwrap();
        assert_eq!(description.name, "weather");
        assert_eq!(
            crate::executables::schema_value(&description.input_schema)["required"][0],
            "city"
        );
    }

    #[test]
    fn malformed_descriptions_are_refused_with_the_reason() {
        let schema = r#"{"type":"object"}"#;
        let cases: Vec<(String, &str)> = vec![
            ("".into(), "printed nothing"),
            ("not json".into(), "did not print valid JSON"),
            ("[1]".into(), "printed an array"),
            (format!(r#"{{"description":"d","input_schema":{schema}}}"#), "no \"name\""),
            (format!(r#"{{"name":5,"description":"d","input_schema":{schema}}}"#), "\"name\" is a number"),
            (format!(r#"{{"name":"a b","description":"d","input_schema":{schema}}}"#), "^[a-zA-Z0-9_-]+$"),
            (format!(r#"{{"name":"../../bin/sh","description":"d","input_schema":{schema}}}"#), "^[a-zA-Z0-9_-]+$"),
            (format!(r#"{{"name":"t","description":"  ","input_schema":{schema}}}"#), "\"description\" is empty"),
            (format!(r#"{{"name":"t","input_schema":{schema}}}"#), "no \"description\""),
            (r#"{"name":"t","description":"d"}"#.into(), "no \"input_schema\""),
            (r#"{"name":"t","description":"d","input_schema":{"type":"object","properties":{"a":{"type":12}}}}"#.into(), "does not compile"),
            (r#"{"name":"t","description":"d","input_schema":{"type":"string"}}"#.into(), "\"type\": \"object\""),
            (r#"{"name":"t","description":"d","input_schema":{"type":"object","properties":{"q":{"type":"string","pattern":"(?=(a+)+$)x"}}}}"#.into(), "/properties/q/pattern"),
            (r#"{"name":"t","description":"d","input_schema":{"type":"object","patternProperties":{"(a)\\1":{}}}}"#.into(), "linear-time"),
        ];
        for (stdout, expected) in cases {
            let err = parse(stdout.as_bytes()).unwrap_err();
            assert!(err.contains(expected), "{stdout}: {err}");
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn describe_runs_the_tool_in_its_directory_with_only_the_given_environment() {
        let scratch = Scratch::new();
        let tool = write_script(
            scratch.path(),
            "envy",
            r#"#!/bin/sh
env_text=$(env | sort | tr '\n' ' ')
printf '{"name":"envy","description":"cwd=%s env=%s","input_schema":{"type":"object"}}' "$(pwd)" "$env_text"
"#,
        );
        let mut env = minimal_env();
        env.push(("MARK".into(), "given".into()));
        let description = describe(&tool, &env, DESCRIPTION_TIMEOUT, None)
            .await
            .unwrap();
        let text = &description.description;
        assert!(
            text.contains(&format!("cwd={}", scratch.path().display())),
            "{text}"
        );
        assert!(text.contains("MARK=given"), "{text}");
        // cargo gives this test process CARGO_* variables; none may reach the tool.
        assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
        assert!(!text.contains("CARGO_"), "{text}");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_hanging_description_is_killed_at_the_timeout() {
        let scratch = Scratch::new();
        let tool = write_script(scratch.path(), "hang", "#!/bin/sh\nsleep 30 &\nwait\n");
        let started = std::time::Instant::now();
        let refusal = describe(&tool, &minimal_env(), Duration::from_millis(500), None)
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(
            refusal.reason.contains("did not finish within 0.5 s"),
            "{}",
            refusal.reason
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_failing_description_carries_its_exit_code_and_stderr() {
        let scratch = Scratch::new();
        let tool = write_script(
            scratch.path(),
            "broken",
            "#!/bin/sh\necho 'ImportError: no module named requests' >&2\nexit 3\n",
        );
        let refusal = describe(&tool, &minimal_env(), DESCRIPTION_TIMEOUT, None)
            .await
            .unwrap_err();
        assert!(refusal.reason.contains("exit code 3"), "{}", refusal.reason);
        assert!(
            refusal.reason.contains("no module named requests"),
            "{}",
            refusal.reason
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_flooding_description_is_refused() {
        let scratch = Scratch::new();
        let tool = write_script(
            scratch.path(),
            "flood",
            "#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' x\n",
        );
        let refusal = describe(&tool, &minimal_env(), DESCRIPTION_TIMEOUT, None)
            .await
            .unwrap_err();
        assert!(
            refusal.reason.contains("more than 1048576 bytes"),
            "{}",
            refusal.reason
        );
    }

    #[test]
    fn long_stderr_keeps_its_end() {
        let stderr = format!("{}THE REAL ERROR", "noise ".repeat(2_000));
        let excerpt = stderr_excerpt(stderr.as_bytes());
        assert!(excerpt.ends_with("THE REAL ERROR"));
        assert!(excerpt.chars().count() < STDERR_EXCERPT_CHARS + 10);
        assert_eq!(stderr_excerpt(b"  \n"), "");
    }
}
