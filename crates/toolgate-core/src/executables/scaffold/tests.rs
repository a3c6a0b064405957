use super::*;
use crate::executables::registry::{Registry, RegistryOptions};
use crate::executables::run::RunOptions;
use crate::executables::test_support::{discovery_options, Scratch};
use crate::executables::ToolFormat;

const LANGUAGES: [Language; 3] = [Language::Python, Language::Node, Language::Bash];

async fn registry_for(scratch: &Scratch, dir: &Path) -> (Registry, crate::executables::Discovery) {
    let registry = Registry::new(RegistryOptions {
        discovery: discovery_options(&[dir], &scratch.path().join("cache")),
        run: RunOptions::new(scratch.dir("work")),
    })
    .unwrap();
    let discovery = registry.refresh(false).await.unwrap();
    (registry, discovery)
}

/// `toolgate tools new` writes tools that discovery accepts and that run, in every language
/// and both formats.
#[tokio::test(flavor = "multi_thread")]
async fn example_tools_are_discovered_and_run() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("toolgate-tools");
    for language in LANGUAGES {
        let name = format!("proto_{}", language.extension());
        let path = write_protocol_tool(&dir, &NewTool::example(&name, language)).unwrap();
        assert_eq!(path, dir.join(format!("{name}.{}", language.extension())));
        write_manifest_tool(
            &dir,
            &format!("manifest_{}", language.extension()),
            language,
        )
        .unwrap();
    }
    let (registry, discovery) = registry_for(&scratch, &dir).await;
    assert!(
        discovery.diagnostics.is_empty(),
        "{:#?}",
        discovery.diagnostics
    );
    assert_eq!(discovery.tools.len(), 6);

    for language in LANGUAGES {
        let ext = language.extension();
        let input = match language {
            Language::Bash => json!({"text": "hi \"there\""}),
            _ => json!({"name": "Ada"}),
        };
        let output = registry
            .prepare(&format!("proto_{ext}"), &input)
            .unwrap()
            .run()
            .await
            .unwrap();
        let expected = match language {
            Language::Bash => json!({"received": {"text": "hi \"there\""}}),
            _ => json!({"greeting": "Hello, Ada!"}),
        };
        assert_eq!(output.result, expected, "{ext}");

        let manifest = registry.get(&format!("manifest_{ext}")).unwrap();
        assert_eq!(manifest.spec.format, ToolFormat::Manifest);
        let output = registry
            .prepare(&format!("manifest_{ext}"), &json!({"name": "Ada"}))
            .unwrap()
            .run()
            .await
            .unwrap();
        let expected = match language {
            Language::Bash => json!("Hello, Ada!"),
            _ => json!({"greeting": "Hello, Ada!"}),
        };
        assert_eq!(output.result, expected, "manifest {ext}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn names_that_look_like_yaml_values_stay_names() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("tools");
    write_manifest_tool(&dir, "true", Language::Bash).unwrap();
    write_manifest_tool(&dir, "123", Language::Bash).unwrap();
    let (_, discovery) = registry_for(&scratch, &dir).await;
    assert!(
        discovery.diagnostics.is_empty(),
        "{:#?}",
        discovery.diagnostics
    );
    let names: Vec<&str> = discovery.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["123", "true"]);
}

#[test]
fn existing_tools_are_never_overwritten() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    write_protocol_tool(&dir, &NewTool::example("taken", Language::Python)).unwrap();
    let before = std::fs::read(dir.join("taken.py")).unwrap();
    for language in LANGUAGES {
        let err = write_protocol_tool(&dir, &NewTool::example("taken", language)).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(err.to_string().contains("already exists"), "{err}");
    }
    let err = write_manifest_tool(&dir, "taken", Language::Bash).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    assert_eq!(std::fs::read(dir.join("taken.py")).unwrap(), before);
    assert!(!dir.join("taken").exists());
}

/// Attack: names are the only part of a path an agent chooses; traversal is refused.
#[test]
fn names_cannot_leave_the_tool_directory() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    for name in ["../escape", "/tmp/x", "a/b", ".hidden", "x\0y", ""] {
        let err = write_protocol_tool(&dir, &NewTool::example(name, Language::Bash)).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{name:?}");
        assert!(
            write_manifest_tool(&dir, name, Language::Bash).is_err(),
            "{name:?}"
        );
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    assert!(!scratch.path().join("escape.sh").exists());
}

fn agent_tool(name: &str, code: &str, language: Language) -> NewTool {
    NewTool {
        name: name.into(),
        description: "Adds two numbers".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]
        }),
        language,
        code: Some(code.into()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_tool_is_created_checked_and_found_by_the_next_discovery() {
    let scratch = Scratch::new();
    let work = scratch.dir("work");
    let dir = work.join("toolgate-tools");
    let created = create_protocol_tool(
        &work,
        Path::new("toolgate-tools"),
        &agent_tool(
            "add",
            "def run(args):\n    return {\"sum\": args[\"a\"] + args[\"b\"]}\n",
            Language::Python,
        ),
        false,
        None,
    )
    .await
    .unwrap();
    assert_eq!(created.path, dir.join("add.py"));
    assert!(!created.replaced);
    let node = create_protocol_tool(
        &work,
        &dir,
        &agent_tool(
            "add_js",
            "const run = ({ a, b }) => ({ sum: a + b });",
            Language::Node,
        ),
        false,
        None,
    )
    .await
    .unwrap();
    assert_eq!(node.path, dir.join("add_js.mjs"));

    let (registry, discovery) = registry_for(&scratch, &dir).await;
    assert!(
        discovery.diagnostics.is_empty(),
        "{:#?}",
        discovery.diagnostics
    );
    for name in ["add", "add_js"] {
        let output = registry
            .prepare(name, &json!({"a": 2, "b": 3.5}))
            .unwrap()
            .run()
            .await
            .unwrap();
        assert_eq!(output.result, json!({"sum": 5.5}), "{name}");
    }
    let failing = create_protocol_tool(
        &work,
        &dir,
        &agent_tool(
            "fails",
            "def run(args):\n    raise ValueError('b must not be zero')\n",
            Language::Python,
        ),
        false,
        None,
    )
    .await
    .unwrap();
    assert!(failing.path.is_file());
    let (registry, _) = registry_for(&scratch, &dir).await;
    let err = registry
        .prepare("fails", &json!({"a": 1, "b": 0}))
        .unwrap()
        .run()
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TOOL_FAILED");
    assert!(
        err.to_string().contains("ValueError: b must not be zero"),
        "{err}"
    );
}

/// A tool that does not work is not kept, and the agent learns why.
#[tokio::test(flavor = "multi_thread")]
async fn a_broken_agent_tool_leaves_nothing_behind() {
    let scratch = Scratch::new();
    let work = scratch.dir("work");
    let dir = work.join("toolgate-tools");
    let cases = [
        (
            "def run(args):\n    return {\n",
            Language::Python,
            "SyntaxError",
        ),
        (
            "def helper():\n    return 1\n",
            Language::Python,
            "defines no run(args)",
        ),
        ("const x = ;", Language::Node, "SyntaxError"),
        (
            "function helper() {}",
            Language::Node,
            "defines no run(args)",
        ),
        ("  if then fi (", Language::Bash, "syntax error"),
    ];
    for (code, language, expected) in cases {
        let err = create_protocol_tool(
            &work,
            &dir,
            &agent_tool("broken", code, language),
            false,
            None,
        )
        .await
        .unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{code}");
        assert!(err.to_string().contains(expected), "{code}: {err}");
        assert!(err.to_string().contains("nothing was kept"), "{err}");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "{code} left a file"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn replacing_keeps_the_old_version_when_the_new_one_is_broken() {
    let scratch = Scratch::new();
    let work = scratch.dir("work");
    let dir = work.join("toolgate-tools");
    let good = agent_tool(
        "calc",
        "def run(args):\n    return args['a'] * args['b']\n",
        Language::Python,
    );
    create_protocol_tool(&work, &dir, &good, false, None)
        .await
        .unwrap();
    let before = std::fs::read(dir.join("calc.py")).unwrap();

    let err = create_protocol_tool(&work, &dir, &good, false, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");

    let broken = agent_tool("calc", "def run(args) return 1\n", Language::Python);
    let err = create_protocol_tool(&work, &dir, &broken, true, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("SyntaxError"), "{err}");
    assert_eq!(std::fs::read(dir.join("calc.py")).unwrap(), before);

    let better = agent_tool(
        "calc",
        "def run(args):\n    return args['a'] - args['b']\n",
        Language::Python,
    );
    let replaced = create_protocol_tool(&work, &dir, &better, true, None)
        .await
        .unwrap();
    assert!(replaced.replaced);
    assert_ne!(std::fs::read(dir.join("calc.py")).unwrap(), before);

    // Replacing never reaches another file that defines the same name.
    let err = create_protocol_tool(
        &work,
        &dir,
        &agent_tool("calc", "  cat", Language::Bash),
        true,
        None,
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("calc.py' already exists"), "{err}");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(leftovers, ["calc.py"]);
}

/// Attack: the project tool directory was replaced by a symlink that leaves the work directory;
/// the agent's tool is not written there.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_directory_symlinked_out_of_the_work_directory_is_refused() {
    let scratch = Scratch::new();
    let work = scratch.dir("work");
    let outside = scratch.dir("outside");
    std::os::unix::fs::symlink(&outside, work.join("toolgate-tools")).unwrap();
    let tool = agent_tool("sneaky", "def run(args):\n    return 1\n", Language::Python);
    let err = create_protocol_tool(&work, Path::new("toolgate-tools"), &tool, false, None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "PATH_OUTSIDE_ROOT");
    let err = create_protocol_tool(
        &work,
        &work.join("toolgate-tools/../toolgate-tools"),
        &tool,
        false,
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "PATH_OUTSIDE_ROOT");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn agent_tools_are_checked_before_anything_is_written() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let mut tool = agent_tool("ok", "  cat", Language::Bash);
    tool.input_schema = json!({"type": "array"});
    assert!(tool
        .render()
        .unwrap_err()
        .to_string()
        .contains("\"type\": \"object\""));
    let mut tool = agent_tool("ok", "   ", Language::Bash);
    assert!(tool
        .render()
        .unwrap_err()
        .to_string()
        .contains("code is empty"));
    tool.code = Some("x".into());
    tool.description = " ".into();
    assert!(tool
        .render()
        .unwrap_err()
        .to_string()
        .contains("description is empty"));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    assert_eq!(
        "ruby".parse::<Language>().unwrap_err().code(),
        "INVALID_INPUT"
    );
}

/// Descriptions with quotes, backslashes, newlines and non-ASCII survive every template.
#[tokio::test(flavor = "multi_thread")]
async fn awkward_descriptions_survive_every_template() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("tools");
    let awkward =
        "Quotes \"\"\" ''' `x` $HOME \\ back\\slash\nnew line, ünïcode ✓, TOOLGATE_DESCRIPTION";
    for language in LANGUAGES {
        let mut tool = NewTool::example(&format!("awkward_{}", language.extension()), language);
        tool.description = awkward.into();
        write_protocol_tool(&dir, &tool).unwrap();
    }
    let (_, discovery) = registry_for(&scratch, &dir).await;
    assert!(
        discovery.diagnostics.is_empty(),
        "{:#?}",
        discovery.diagnostics
    );
    assert_eq!(discovery.tools.len(), 3);
    for tool in discovery.tools {
        assert_eq!(tool.description, awkward, "{}", tool.name);
    }
}
