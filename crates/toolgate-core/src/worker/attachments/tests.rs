use std::path::{Path, PathBuf};

use super::*;
use crate::fs::rules::PathRule;

struct Fixture {
    _temp: tempfile::TempDir,
    /// The work directory.
    work: PathBuf,
    /// A directory beside it, outside.
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(temp.path()).unwrap();
    let work = base.join("work");
    let outside = base.join("outside");
    std::fs::create_dir_all(work.join("docs")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(work.join("docs/a.pdf"), b"%PDF-1.4 a").unwrap();
    std::fs::write(work.join("docs/B.PDF"), b"%PDF-1.4 B").unwrap();
    std::fs::write(work.join("notes.txt"), b"notes").unwrap();
    std::fs::write(work.join("run.exe"), b"MZ").unwrap();
    std::fs::write(work.join("big.pdf"), vec![b'x'; 2000]).unwrap();
    std::fs::write(outside.join("secret.pdf"), b"%PDF secret").unwrap();
    Fixture {
        _temp: temp,
        work,
        outside,
    }
}

fn policy(yaml: &str) -> AttachmentPolicy {
    crate::yaml::from_str(yaml).unwrap()
}

fn source<'a>(work: &'a Path, limits: AttachmentLimits) -> AttachmentSource<'a> {
    AttachmentSource {
        caller_dir: work,
        called_dir: work,
        worker: "analyzer",
        limits,
        gates: Vec::new(),
    }
}

fn paths(list: &[&str]) -> Vec<String> {
    list.iter().map(|p| p.to_string()).collect()
}

fn refused(source: &AttachmentSource<'_>, list: &[&str]) -> (&'static str, String) {
    let err = read_attachments(source, &paths(list)).unwrap_err();
    (err.code(), err.to_string())
}

#[test]
fn files_within_the_policy_are_read_with_their_media_type() {
    let f = fixture();
    let limits = AttachmentLimits::of(Some(&policy(
        "{ max_attachments: 2, max_total_bytes: 100, allowed_suffixes: [.pdf] }",
    )));
    let read = read_attachments(
        &source(&f.work, limits),
        &paths(&["docs/a.pdf", "./docs/B.PDF"]),
    )
    .unwrap();
    assert_eq!(read.len(), 2);
    assert_eq!(read[0].path, "docs/a.pdf");
    assert_eq!(read[0].media_type, "application/pdf");
    assert_eq!(read[0].bytes, b"%PDF-1.4 a");
    assert_eq!(read[1].path, "docs/B.PDF");
    assert_eq!(read[1].media_type, "application/pdf");
}

#[test]
fn too_many_attachments_are_refused_naming_the_limit() {
    let f = fixture();
    let limits = AttachmentLimits::of(Some(&policy("{ max_attachments: 1 }")));
    let (code, message) = refused(&source(&f.work, limits), &["docs/a.pdf", "notes.txt"]);
    assert_eq!(code, "INVALID_INPUT");
    assert!(
        message.contains("max_attachments") && message.contains("at most 1"),
        "{message}"
    );
    // Without a policy the default applies.
    let many = ["notes.txt"; 5];
    let (code, message) = refused(&source(&f.work, AttachmentLimits::of(None)), &many);
    assert_eq!(code, "INVALID_INPUT");
    assert!(
        message.contains(&format!("at most {DEFAULT_MAX_ATTACHMENTS}")),
        "{message}"
    );
}

#[test]
fn attachments_too_large_together_are_refused() {
    let f = fixture();
    let limits = AttachmentLimits::of(Some(&policy("{ max_total_bytes: 15 }")));
    // Each fits alone (10 bytes), not both.
    let (code, message) = refused(
        &source(&f.work, limits.clone()),
        &["docs/a.pdf", "docs/B.PDF"],
    );
    assert_eq!(code, "INVALID_INPUT");
    assert!(
        message.contains("max_total_bytes") && message.contains("docs/B.PDF"),
        "{message}"
    );
    let (_, message) = refused(&source(&f.work, limits), &["big.pdf"]);
    assert!(message.contains("15 bytes"), "{message}");
    // The default total limit holds a file a little over it back.
    let over = DEFAULT_MAX_ATTACHMENT_BYTES as usize + 1;
    std::fs::write(f.work.join("huge.bin"), vec![0u8; over]).unwrap();
    let (_, message) = refused(&source(&f.work, AttachmentLimits::of(None)), &["huge.bin"]);
    assert!(message.contains("max_total_bytes"), "{message}");
}

#[test]
fn denied_and_not_allowed_suffixes_are_refused_whatever_their_case() {
    let f = fixture();
    let denied = AttachmentLimits::of(Some(&policy("{ denied_suffixes: [.EXE, .Pdf] }")));
    for path in ["run.exe", "docs/a.pdf", "docs/B.PDF"] {
        let (code, message) = refused(&source(&f.work, denied.clone()), &[path]);
        assert_eq!(code, "INVALID_INPUT", "{path}");
        assert!(message.contains("denied_suffixes"), "{path}: {message}");
    }
    let allowed = AttachmentLimits::of(Some(&policy("{ allowed_suffixes: [.pdf] }")));
    for path in ["notes.txt", "run.exe", "docs/a.pdf.txt"] {
        std::fs::write(f.work.join("docs/a.pdf.txt"), b"x").unwrap();
        let (code, message) = refused(&source(&f.work, allowed.clone()), &[path]);
        assert_eq!(code, "INVALID_INPUT", "{path}");
        assert!(
            message.contains("allowed_suffixes") && message.contains(".pdf"),
            "{message}"
        );
    }
    // Denied wins over allowed.
    let both = AttachmentLimits::of(Some(&policy(
        "{ allowed_suffixes: [.pdf], denied_suffixes: [b.pdf] }",
    )));
    let (_, message) = refused(&source(&f.work, both), &["docs/B.PDF"]);
    assert!(message.contains("denied_suffixes"), "{message}");
}

#[test]
fn paths_leading_out_of_the_work_directory_are_refused() {
    let f = fixture();
    let secret = f.outside.join("secret.pdf");
    std::os::unix::fs::symlink(&secret, f.work.join("link.pdf")).unwrap();
    std::os::unix::fs::symlink(&f.outside, f.work.join("docs/out")).unwrap();
    let absolute = secret.display().to_string();
    for path in [
        "../outside/secret.pdf",
        "docs/../../outside/secret.pdf",
        absolute.as_str(),
        "link.pdf",
        "docs/out/secret.pdf",
    ] {
        let (code, message) = refused(&source(&f.work, AttachmentLimits::of(None)), &[path]);
        assert_eq!(code, "PATH_OUTSIDE_ROOT", "{path}: {message}");
    }
    // An absolute path inside the work directory is fine.
    let inside = f.work.join("notes.txt").display().to_string();
    let read = read_attachments(&source(&f.work, AttachmentLimits::of(None)), &[inside]).unwrap();
    assert_eq!(read[0].path, "notes.txt");
}

#[test]
fn directories_missing_files_and_files_outside_the_called_workers_directory_are_refused() {
    let f = fixture();
    let any = source(&f.work, AttachmentLimits::of(None));
    assert_eq!(refused(&any, &["docs"]).0, "INVALID_INPUT");
    assert_eq!(refused(&any, &["missing.pdf"]).0, "FILE_NOT_FOUND");
    // A called worker restricted to docs/ gets nothing from beside it.
    let called = f.work.join("docs");
    let narrowed = AttachmentSource {
        called_dir: &called,
        ..source(&f.work, AttachmentLimits::of(None))
    };
    assert_eq!(refused(&narrowed, &["notes.txt"]).0, "PATH_OUTSIDE_ROOT");
    assert_eq!(
        read_attachments(&narrowed, &paths(&["docs/a.pdf"]))
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn files_the_callers_path_rules_block_are_not_attached() {
    let f = fixture();
    std::fs::write(f.work.join(".env"), b"KEY=1").unwrap();
    let rules: Vec<PathRule> =
        crate::yaml::from_str("[{ pattern: '.env*', approval: blocked }]").unwrap();
    let gate = PathGate::new(&f.work, &rules, "filesystem approval.paths").unwrap();
    let guarded = AttachmentSource {
        gates: vec![gate],
        ..source(&f.work, AttachmentLimits::of(None))
    };
    for path in [".env", "./.env", "docs/../.env"] {
        let (code, message) = refused(&guarded, &[path]);
        assert_eq!(code, "PATH_BLOCKED", "{path}");
        assert!(message.contains(".env*"), "{message}");
    }
    std::os::unix::fs::symlink(f.work.join(".env"), f.work.join("env.txt")).unwrap();
    assert_eq!(refused(&guarded, &["env.txt"]).0, "PATH_BLOCKED");
}

#[test]
fn media_types_follow_the_suffix() {
    assert_eq!(media_type("a.PNG"), "image/png");
    assert_eq!(media_type("report.pdf"), "application/pdf");
    assert_eq!(media_type("README"), "application/octet-stream");
}
