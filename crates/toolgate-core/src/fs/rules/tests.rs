use super::*;
use crate::approval::Decision::{Ask, Blocked, PreApproved};

fn rules(list: &[(&str, Decision)]) -> PathRules {
    let list: Vec<PathRule> = list
        .iter()
        .map(|(pattern, approval)| PathRule {
            pattern: pattern.to_string(),
            approval: *approval,
        })
        .collect();
    PathRules::new(&list, "approval.paths", false).unwrap()
}

/// The decision and the deciding pattern of `path` as a file.
fn file(rules: &PathRules, path: &str) -> Option<(Decision, String)> {
    decided(rules, path, EntryKind::File)
}

fn decided(rules: &PathRules, path: &str, kind: EntryKind) -> Option<(Decision, String)> {
    rules
        .decide(Path::new(path), kind)
        .map(|rule| (rule.approval, rule.pattern))
}

fn the_issue_rules() -> PathRules {
    rules(&[
        (".env*", Blocked),
        (".git/**", Ask),
        ("src/**", PreApproved),
    ])
}

#[test]
fn the_issue_example_decides_names_at_any_depth_and_anchored_directories() {
    let r = the_issue_rules();
    let blocked = Some((Blocked, ".env*".to_string()));
    for path in [
        ".env",
        ".env.local",
        "config/.env",
        "src/.env",
        "src/deep/er/.env.prod",
    ] {
        assert_eq!(file(&r, path), blocked, "{path}");
    }
    // A directory whose name matches blocks everything inside it.
    assert_eq!(file(&r, ".envs/production/key"), blocked);
    let ask = Some((Ask, ".git/**".to_string()));
    assert_eq!(decided(&r, ".git", EntryKind::Dir), ask);
    assert_eq!(file(&r, ".git/config"), ask);
    assert_eq!(file(&r, ".git/refs/heads/main"), ask);
    // Anchored: a nested .git is not the work directory's.
    assert_eq!(file(&r, "vendor/x/.git/config"), None);
    assert_eq!(
        file(&r, "src/lib/a.ts"),
        Some((PreApproved, "src/**".into()))
    );
    assert_eq!(file(&r, "README.md"), None);
    assert_eq!(decided(&r, ".", EntryKind::Dir), None);
    assert_eq!(decided(&r, "", EntryKind::Dir), None);
}

#[test]
fn case_is_significant_on_a_case_sensitive_file_system() {
    let r = the_issue_rules();
    assert_eq!(file(&r, ".ENV"), None);
    assert_eq!(file(&r, ".Env.local"), None);
    let folded = PathRules::new(
        &[PathRule {
            pattern: ".env*".into(),
            approval: Blocked,
        }],
        "approval.paths",
        true,
    )
    .unwrap();
    assert_eq!(file(&folded, ".ENV").map(|d| d.0), Some(Blocked));
    assert_eq!(file(&folded, "a/.Env.Local").map(|d| d.0), Some(Blocked));
}

#[test]
fn the_deepest_match_wins_then_the_longest_then_the_strictest() {
    let r = rules(&[
        (".env*", Blocked),
        (".env.example", PreApproved),
        ("src/config/**", PreApproved),
        ("docs/", Ask),
        ("*.md", PreApproved),
        ("q*", Ask),
        ("*q", Blocked),
    ]);
    // Longer pattern at the same depth.
    assert_eq!(file(&r, ".env.example").map(|d| d.0), Some(PreApproved));
    assert_eq!(file(&r, ".env.example.bak").map(|d| d.0), Some(Blocked));
    // A rule about the file beats a rule about its directory, however long.
    assert_eq!(file(&r, "src/config/.env").map(|d| d.0), Some(Blocked));
    assert_eq!(
        file(&r, "src/config/app.json").map(|d| d.0),
        Some(PreApproved)
    );
    assert_eq!(file(&r, "docs/guide.md").map(|d| d.0), Some(PreApproved));
    assert_eq!(file(&r, "docs/guide.txt").map(|d| d.0), Some(Ask));
    // Equally deep and equally long: the strictest.
    assert_eq!(file(&r, "qq"), Some((Blocked, "*q".into())));
}

#[test]
fn nothing_inside_a_blocked_directory_is_opened_again() {
    let r = rules(&[
        ("secrets/", Blocked),
        ("secrets/public/**", PreApproved),
        ("*.md", PreApproved),
    ]);
    assert_eq!(
        decided(&r, "secrets", EntryKind::Dir).map(|d| d.0),
        Some(Blocked)
    );
    assert_eq!(file(&r, "secrets/public/a.txt").map(|d| d.0), Some(Blocked));
    assert_eq!(file(&r, "secrets/README.md").map(|d| d.0), Some(Blocked));
    // A trailing '/' matches directories, and paths that may be one: never a plain file.
    assert_eq!(file(&r, "secrets"), None);
    assert_eq!(
        decided(&r, "secrets", EntryKind::Unknown).map(|d| d.0),
        Some(Blocked)
    );
    assert_eq!(file(&r, "x/secrets/key").map(|d| d.0), Some(Blocked));
}

#[test]
fn double_star_is_the_work_directory_and_star_everything_in_it() {
    let everything = rules(&[("**", Blocked), ("src/**", PreApproved)]);
    assert_eq!(
        decided(&everything, ".", EntryKind::Dir).map(|d| d.0),
        Some(Blocked)
    );
    assert_eq!(file(&everything, "README.md").map(|d| d.0), Some(Blocked));
    assert_eq!(
        file(&everything, "src/a/b.ts").map(|d| d.0),
        Some(PreApproved)
    );
    // `docs` falls back to the work directory's rule and is blocked, so its files are too.
    assert_eq!(
        decided(&everything, "docs", EntryKind::Dir).map(|d| d.0),
        Some(Blocked)
    );
    // `*` matches every name at every depth, so it is as deep as any file rule: it does not
    // leave the work directory itself blocked, and a directory rule does not beat it.
    let inside = rules(&[("*", Blocked), ("src/**", PreApproved), ("*/", Ask)]);
    assert_eq!(decided(&inside, ".", EntryKind::Dir), None);
    assert_eq!(file(&inside, "README.md").map(|d| d.0), Some(Blocked));
    assert_eq!(file(&inside, "src/a.ts").map(|d| d.0), Some(Blocked));
    // `*/` (one more literal character than `*`) wins for directories.
    assert_eq!(
        decided(&inside, "docs", EntryKind::Dir).map(|d| d.0),
        Some(Ask)
    );
    assert_eq!(file(&inside, "docs/a.txt").map(|d| d.0), Some(Blocked));
}

#[test]
fn anchoring_middle_double_star_and_classes() {
    let r = rules(&[
        ("/build", Blocked),
        ("out/", Ask),
        ("a/**/z.txt", Ask),
        ("**/node_modules/**", Blocked),
        ("key[0-9].pem", Blocked),
    ]);
    assert_eq!(
        decided(&r, "build", EntryKind::Dir).map(|d| d.0),
        Some(Blocked)
    );
    assert_eq!(file(&r, "build/x").map(|d| d.0), Some(Blocked));
    assert_eq!(file(&r, "src/build/x"), None);
    assert_eq!(file(&r, "src/out/x").map(|d| d.0), Some(Ask));
    assert_eq!(file(&r, "a/z.txt").map(|d| d.0), Some(Ask));
    assert_eq!(file(&r, "a/b/c/z.txt").map(|d| d.0), Some(Ask));
    assert_eq!(file(&r, "b/a/z.txt"), None);
    assert_eq!(
        file(&r, "x/node_modules/p/i.js").map(|d| d.0),
        Some(Blocked)
    );
    assert_eq!(file(&r, "node_modules").map(|d| d.0), Some(Blocked));
    assert_eq!(file(&r, "d/key7.pem").map(|d| d.0), Some(Blocked));
    assert_eq!(file(&r, "d/keyx.pem"), None);
}

#[test]
fn invalid_patterns_are_config_errors_naming_the_rule() {
    let error = |pattern: &str| {
        let err = PathRules::new(
            &[
                PathRule {
                    pattern: "ok".into(),
                    approval: Ask,
                },
                PathRule {
                    pattern: pattern.into(),
                    approval: Blocked,
                },
            ],
            "code_agent approval.paths",
            false,
        )
        .unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID", "{pattern}: {err}");
        let message = err.to_string();
        assert!(
            message.contains("code_agent approval.paths[1]"),
            "{message}"
        );
        message
    };
    assert!(error("").contains("'**'"));
    assert!(error("!.env").contains("negation is not supported"));
    assert!(error(" .env").contains("whitespace"));
    assert!(error("a/../.env").contains("'..'"));
    assert!(error("./.env").contains("'.'"));
    assert!(error("a//b").contains("empty component"));
    assert!(error("/").contains("work directory itself"));
    assert!(error("a//").contains("more than one '/'"));
    assert!(error("src/[").contains("not a valid glob"));
    assert!(error(&"a".repeat(5000)).contains("4096"));
    assert!(error("a\0b").contains("NUL"));
    // An escaped '!' is a name.
    let escaped = rules(&[("\\!important", Blocked)]);
    assert_eq!(file(&escaped, "!important").map(|d| d.0), Some(Blocked));
    let too_many: Vec<PathRule> = (0..=MAX_PATH_RULES)
        .map(|i| PathRule {
            pattern: format!("f{i}"),
            approval: Ask,
        })
        .collect();
    let err = PathRules::new(&too_many, "approval.paths", false).unwrap_err();
    assert!(err.to_string().contains("at most 256"), "{err}");
}

#[test]
fn rule_references_describe_themselves() {
    let r = the_issue_rules();
    let rule = r.decide(Path::new(".env"), EntryKind::File).unwrap();
    assert_eq!(rule.index, 0);
    assert_eq!(rule.describe(), "approval.paths[0] '.env*' (blocked)");
}
