//! `file_create`: Forge's downloadable file. The model names a file and gives its text; it is
//! written to `.toolgate/files/` in the work directory through the file tools' confinement
//! (symlinks resolved against the work directory, written from the root with `O_NOFOLLOW`) and
//! their atomic write.

use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Value};

use super::input;
use crate::error::{Error, Result};
use crate::limits::MAX_FILENAME_BYTES;
use crate::path::PathValidator;

/// Where created files go, relative to the work directory.
pub const FILES_DIR: &str = ".toolgate/files";

/// The extensions Forge allows, with the MIME type each file is reported with.
pub const EXTENSIONS: &[(&str, &str)] = &[
    ("md", "text/markdown"),
    ("json", "application/json"),
    ("yaml", "text/yaml"),
    ("yml", "text/yaml"),
    ("txt", "text/plain"),
    ("log", "text/plain"),
    ("csv", "text/csv"),
    ("sh", "text/x-shellscript"),
    ("xml", "text/xml"),
    ("html", "text/html"),
    ("py", "text/x-python"),
    ("ts", "text/typescript"),
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCreateInput {
    filename: String,
    content: String,
}

/// The MIME type of an accepted file name, or why the name is refused.
pub fn check_filename(filename: &str) -> Result<&'static str> {
    let refuse = |why: &str| {
        Err(Error::InvalidInput(format!(
            "file_create: file name '{filename}' {why}"
        )))
    };
    if filename.is_empty() || filename.len() > MAX_FILENAME_BYTES {
        return refuse(&format!("must have 1 to {MAX_FILENAME_BYTES} bytes"));
    }
    if filename.contains(['/', '\\']) || filename.contains("..") {
        return refuse(
            "contains a path separator or '..'; give a plain file name such as 'report.md'",
        );
    }
    if filename.starts_with('.') || filename.chars().any(char::is_control) {
        return refuse("starts with '.' or contains control characters");
    }
    let extension = Path::new(filename)
        .extension()
        .and_then(|ext| ext.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match EXTENSIONS.iter().find(|(ext, _)| *ext == extension) {
        Some((_, mime)) => Ok(mime),
        None => {
            let allowed: Vec<&str> = EXTENSIONS.iter().map(|(ext, _)| *ext).collect();
            refuse(&format!(
                "has an extension that is not allowed; use one of: {}",
                allowed.join(", ")
            ))
        }
    }
}

/// `file_create`: writes the file and reports `{ filename, path, mime_type, bytes }`.
pub fn file_create(work_dir: &Path, value: Value) -> Result<Value> {
    let request: FileCreateInput = input::parse("file_create", value)?;
    let mime_type = check_filename(&request.filename)?;
    let validator = PathValidator::new(work_dir)?;
    let relative = format!("{FILES_DIR}/{}", request.filename);
    let written = crate::fs::write(&validator, &relative, request.content.as_bytes())?;
    let path = validator.root().join(&written.path);
    Ok(json!({
        "filename": request.filename,
        "path": path.display().to_string(),
        "mime_type": mime_type,
        "bytes": written.bytes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_under_the_files_directory() {
        let dir = tempfile::tempdir().unwrap();
        let out = file_create(
            dir.path(),
            json!({"filename": "Report.MD", "content": "# hi\n"}),
        )
        .unwrap();
        assert_eq!(out["mime_type"], "text/markdown");
        assert_eq!(out["bytes"], 5);
        let expected = dir
            .path()
            .canonicalize()
            .unwrap()
            .join(".toolgate/files/Report.MD");
        assert_eq!(out["path"], expected.display().to_string());
        assert_eq!(std::fs::read_to_string(expected).unwrap(), "# hi\n");
    }

    #[test]
    fn refuses_paths_and_other_extensions() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "../x.md",
            "a/b.md",
            "a\\b.md",
            "..md",
            ".hidden.md",
            "x.exe",
            "x",
            "x.md\n",
            "",
            "x.md.sh.bin",
        ] {
            let err =
                file_create(dir.path(), json!({"filename": name, "content": ""})).unwrap_err();
            assert_eq!(err.error_code(), crate::ErrorCode::InvalidInput, "{name}");
        }
        assert!(!dir.path().join(".toolgate").exists());
    }

    #[test]
    fn a_symlinked_files_directory_cannot_lead_outside() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".toolgate")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join(".toolgate/files")).unwrap();
        let err =
            file_create(dir.path(), json!({"filename": "x.txt", "content": "x"})).unwrap_err();
        assert_eq!(err.error_code(), crate::ErrorCode::PathOutsideRoot);
        assert!(!outside.path().join("x.txt").exists());
    }
}
