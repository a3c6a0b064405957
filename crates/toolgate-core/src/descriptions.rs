//! The descriptions the model reads for the command tools, written from the built policy and
//! its limits, so that what the model is told is what is enforced.

use std::time::Duration;

use crate::approval::Decision;
use crate::command::{CliExecute, CliExecuteConfig, ShellConfig, ShellToolset};
use crate::limits::{DEFAULT_COMMAND_TIMEOUT, DEFAULT_MAX_OUTPUT_BYTES};
use crate::sandbox::Sandbox;

/// A size for people: `1 MiB`, `64 KiB`, `100 bytes`.
pub fn describe_bytes(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

fn limits(timeout: Option<f64>, max_output_bytes: Option<u64>) -> (String, String) {
    let timeout = timeout
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .unwrap_or(DEFAULT_COMMAND_TIMEOUT);
    let cap = max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES as u64);
    (format!("{}", timeout.as_secs_f64()), describe_bytes(cap))
}

/// What the kernel sandbox lets the program do, in one sentence (nothing without a sandbox).
fn sandbox_sentence(sandbox: Option<&std::sync::Arc<Sandbox>>) -> Option<String> {
    let policy = sandbox?.policy();
    let writes = if policy.readonly {
        "cannot write files"
    } else {
        "can write only inside the work directory"
    };
    let network = match policy.network {
        crate::sandbox::NetworkMode::On => "may use the network",
        crate::sandbox::NetworkMode::Proxy => {
            "may reach only the hosts its network policy allows, through toolgate's proxy"
        }
        crate::sandbox::NetworkMode::Off => "has no network access",
    };
    Some(format!(
        "It runs in a sandbox: it {writes}, {network}, cannot read files outside the work directory and the system, and every process it starts ends with the call."
    ))
}

const RESULT_SHAPE: &str =
    "The result is { stdout, stderr, exitCode, truncated, timedOut }; a non-zero exitCode is a normal result.";

/// The description of a `cli_execute` tool: the programs that were found, the work directory,
/// the read roots and the limits.
pub fn cli_execute_description(policy: &CliExecute, config: &CliExecuteConfig) -> String {
    let names: Vec<&str> = policy.available().collect();
    let (timeout, cap) = limits(config.timeout, config.max_output_bytes.map(|cap| cap.0));
    let work_dir = policy.work_dir().display();
    let roots = if config.read_roots.is_empty() {
        String::new()
    } else {
        let roots: Vec<String> = config
            .read_roots
            .iter()
            .map(|root| root.display().to_string())
            .collect();
        format!(" or in {}", roots.join(", "))
    };
    [
        Some(format!("Run one of these programs directly, without a shell: {}.", names.join(", "))),
        Some("Give the arguments as an array, one element per argument; they are passed verbatim, so there are no pipes, redirections, globs, variables or command substitution.".into()),
        Some(format!("The program runs in {work_dir}; arguments that are paths must stay inside it{roots}.")),
        sandbox_sentence(policy.sandbox()),
        Some(format!("Each of stdout and stderr is cut at {cap}; the program is killed after {timeout} s.")),
        Some(RESULT_SHAPE.into()),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ")
}

/// The description of the `shell` tool: the work directory, the limits, the blocked patterns
/// and what happens to commands no rule matches.
pub fn shell_description(policy: &ShellToolset, config: &ShellConfig) -> String {
    let work_dir = policy.work_dir().display();
    let (timeout, cap) = limits(config.timeout, config.max_output_bytes.map(|cap| cap.0));
    let mut lines = vec![
        format!("Run one command (a program and its arguments) in {work_dir}. No shell is used: words are split with POSIX quotes, and there are no pipes, redirections, ';' or '&&' lists, $(...), ${{...}}, backticks, globs or variable expansion. Run one command per call."),
        format!("Arguments that are paths must stay inside {work_dir}."),
    ];
    lines.extend(sandbox_sentence(policy.sandbox()));
    lines.extend([
        format!(
            "Each of stdout and stderr is cut at {cap}; the command is killed after {timeout} s."
        ),
        RESULT_SHAPE.into(),
    ]);
    let blocked: Vec<&str> = config
        .rules
        .iter()
        .filter(|rule| rule.approval == Decision::Blocked)
        .map(|rule| rule.pattern.as_str())
        .collect();
    if !blocked.is_empty() {
        lines.push(format!(
            "Commands starting with these words are blocked: {}.",
            blocked.join("; ")
        ));
    }
    if matches!(config.default, None | Some(Decision::Blocked)) {
        lines.push("Commands that no rule allows are blocked.".into());
    }
    lines.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(describe_bytes(1024 * 1024), "1 MiB");
        assert_eq!(describe_bytes(64 * 1024), "64 KiB");
        assert_eq!(describe_bytes(100), "100 bytes");
        assert_eq!(describe_bytes(1536), "1536 bytes");
    }

    #[test]
    fn the_shell_description_states_the_enforced_limits_and_rules() {
        let dir = tempfile::tempdir().unwrap();
        let config: ShellConfig = serde_yaml::from_str(
            "rules:\n  - { pattern: 'git push', approval: blocked }\n  - { pattern: 'git status', approval: preApproved }\ntimeout: 7\nmax_output_bytes: 2048\n",
        )
        .unwrap();
        let policy = ShellToolset::new(dir.path(), &config).unwrap();
        let text = shell_description(&policy, &config);
        assert!(text.contains("cut at 2 KiB"), "{text}");
        assert!(text.contains("killed after 7 s"), "{text}");
        assert!(text.contains("blocked: git push."), "{text}");
        assert!(
            text.contains("Commands that no rule allows are blocked."),
            "{text}"
        );
        let open = ShellConfig {
            default: Some(Decision::Ask),
            ..ShellConfig::default()
        };
        let policy = ShellToolset::new(dir.path(), &open).unwrap();
        let text = shell_description(&policy, &open);
        assert!(text.contains("killed after 120 s"), "{text}");
        assert!(text.contains("cut at 1 MiB"), "{text}");
        assert!(!text.contains("no rule allows"), "{text}");
        assert!(
            !text.contains("sandbox"),
            "no sandbox, nothing said: {text}"
        );
    }

    #[test]
    fn the_descriptions_say_what_the_sandbox_allows() {
        let dir = tempfile::tempdir().unwrap();
        let config = ShellConfig {
            default: Some(Decision::Ask),
            ..ShellConfig::default()
        };
        let mut scope = crate::sandbox_config::SandboxScope::new(
            dir.path(),
            true,
            &Default::default(),
            dir.path(),
            "s",
        )
        .unwrap();
        scope.mode = crate::sandbox_config::SandboxModeName::BestEffort;
        let sandbox = scope.build().unwrap().sandbox;
        let policy = ShellToolset::new(dir.path(), &config)
            .unwrap()
            .with_sandbox(sandbox.clone());
        let text = shell_description(&policy, &config);
        assert!(text.contains("cannot write files"), "{text}");
        assert!(text.contains("has no network access"), "{text}");
        let cli_config = CliExecuteConfig {
            allowed_binaries: vec!["ls".into()],
            ..CliExecuteConfig::default()
        };
        scope.readonly = false;
        scope.network =
            crate::sandbox_config::ScopeNetwork::new(Some(&crate::network::NetworkSetting::Open));
        let policy = CliExecute::new(dir.path(), &cli_config)
            .unwrap()
            .with_sandbox(scope.build().unwrap().sandbox);
        let text = cli_execute_description(&policy, &cli_config);
        assert!(
            text.contains("can write only inside the work directory"),
            "{text}"
        );
        assert!(text.contains("may use the network"), "{text}");
    }
}
