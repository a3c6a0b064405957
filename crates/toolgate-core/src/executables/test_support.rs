//! Helpers for the tests of the custom tools modules: real directories and real scripts.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A temporary directory with its canonical path (macOS-style /tmp symlinks resolved), removed
/// when dropped.
pub struct Scratch {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Scratch {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().canonicalize().expect("canonical temp dir");
        Self { _dir: dir, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A subdirectory, created.
    pub fn dir(&self, name: &str) -> PathBuf {
        let path = self.path.join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    }
}

/// Writes an executable script.
pub fn write_script(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A protocol tool written in sh that describes itself as `name` with `schema`, appends a line
/// to `counter` every time `description` runs, and answers `run` with `run_body` (sh).
pub fn protocol_tool(
    dir: &Path,
    file: &str,
    name: &str,
    schema: &str,
    counter: &Path,
    run_body: &str,
) -> PathBuf {
    write_script(
        dir,
        file,
        &format!(
            r#"#!/bin/sh
case "$1" in
  description)
    echo described >> '{counter}'
    cat <<'EOF'
{{"name": "{name}", "description": "The {name} tool", "input_schema": {schema}}}
EOF
    ;;
  run)
{run_body}
    ;;
  *) echo "usage: $0 description|run" >&2; exit 2 ;;
esac
"#,
            counter = counter.display()
        ),
    )
}

/// How many times the tools sharing `counter` were asked for their description.
pub fn count(counter: &Path) -> usize {
    std::fs::read_to_string(counter)
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

/// PATH only: what a test tool needs to find `cat`, `sleep` and friends.
pub fn minimal_env() -> Vec<(OsString, OsString)> {
    vec![("PATH".into(), "/usr/bin:/bin".into())]
}

pub const OBJECT_SCHEMA: &str = r#"{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}"#;

/// Discovery options for `dirs` (all required) with the cache in `cache_dir`: tests never
/// touch the real home. Descriptions get the reduced environment of this process, so that
/// `#!/usr/bin/env node` finds node wherever it is installed.
pub fn discovery_options(dirs: &[&Path], cache_dir: &Path) -> super::DiscoveryOptions {
    let mut options = super::DiscoveryOptions::new(
        dirs.iter()
            .map(|dir| super::ToolDirectory::required(*dir))
            .collect(),
    );
    options.cache_dir = Some(cache_dir.to_path_buf());
    options
}
