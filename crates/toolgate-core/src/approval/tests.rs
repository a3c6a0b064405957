use super::*;
use Decision::{Ask, Blocked, PreApproved};

fn inputs(documented: Decision) -> ApprovalInputs {
    ApprovalInputs::new(documented)
}

#[test]
fn decisions_use_the_documented_spelling() {
    let config: ApprovalConfig = serde_json::from_str(
        r#"{"default":"ask","tools":{"file_write":"blocked","grep_search":"preApproved"}}"#,
    )
    .unwrap();
    assert_eq!(config.default, Some(Ask));
    assert_eq!(config.tools["file_write"], Blocked);
    assert_eq!(config.tools["grep_search"], PreApproved);
    assert_eq!(
        serde_json::to_string(&config).unwrap(),
        r#"{"default":"ask","tools":{"file_write":"blocked","grep_search":"preApproved"}}"#
    );
    assert_eq!(
        serde_json::to_string(&ApprovalConfig::default()).unwrap(),
        "{}"
    );
    assert!(PreApproved < Ask && Ask < Blocked);
    assert_eq!(Decision::strictest([Ask, PreApproved]), Ask);
    assert_eq!(Decision::strictest([]), PreApproved);
}

#[test]
fn unknown_keys_and_decisions_are_errors() {
    let err = serde_json::from_str::<ApprovalConfig>(r#"{"defualt":"ask"}"#).unwrap_err();
    assert!(err.to_string().contains("unknown field `defualt`"), "{err}");
    let err = serde_json::from_str::<ApprovalConfig>(r#"{"default":"maybe"}"#).unwrap_err();
    assert!(err.to_string().contains("preApproved"), "{err}");
}

#[test]
fn the_schema_lists_the_decisions() {
    let schema = serde_json::to_string(&schemars::schema_for!(ApprovalConfig)).unwrap();
    for decision in ["preApproved", "ask", "blocked"] {
        assert!(schema.contains(decision), "{schema}");
    }
    assert!(
        schema.contains("\"additionalProperties\":false"),
        "{schema}"
    );
}

/// One row: explicit, own, toolset default, documented default, worker floor, caller floor →
/// decision, dynamic.
type Row = (
    Option<Decision>,
    OwnApproval,
    Option<Decision>,
    Decision,
    Option<Decision>,
    Option<Decision>,
    Decision,
    bool,
);

#[test]
fn the_resolve_table() {
    use OwnApproval::{Dynamic, None as NoOwn, Static};
    let rows: &[Row] = &[
        // Nothing configured: the documented default.
        (None, NoOwn, None, Ask, None, None, Ask, false),
        (
            None,
            NoOwn,
            None,
            PreApproved,
            None,
            None,
            PreApproved,
            false,
        ),
        // The toolset default replaces the documented default, also when it is looser.
        (
            None,
            NoOwn,
            Some(PreApproved),
            Ask,
            None,
            None,
            PreApproved,
            false,
        ),
        (
            None,
            NoOwn,
            Some(Blocked),
            PreApproved,
            None,
            None,
            Blocked,
            false,
        ),
        // An explicit entry replaces both defaults.
        (
            Some(PreApproved),
            NoOwn,
            Some(Blocked),
            Ask,
            None,
            None,
            PreApproved,
            false,
        ),
        (
            Some(Ask),
            NoOwn,
            Some(PreApproved),
            PreApproved,
            None,
            None,
            Ask,
            false,
        ),
        // The tool's own boolean joins the explicit entry; the strictest wins, defaults are out.
        (
            None,
            Static(Ask),
            Some(PreApproved),
            PreApproved,
            None,
            None,
            Ask,
            false,
        ),
        (
            Some(Ask),
            Static(PreApproved),
            None,
            Ask,
            None,
            None,
            Ask,
            false,
        ),
        (
            Some(PreApproved),
            Static(Ask),
            None,
            Ask,
            None,
            None,
            Ask,
            false,
        ),
        (
            Some(Blocked),
            Static(PreApproved),
            None,
            Ask,
            None,
            None,
            Blocked,
            false,
        ),
        (
            None,
            Static(PreApproved),
            Some(Blocked),
            Ask,
            None,
            None,
            PreApproved,
            false,
        ),
        // Its own function decides per call while nothing stricter applies.
        (None, Dynamic, Some(Ask), Ask, None, None, PreApproved, true),
        (
            Some(PreApproved),
            Dynamic,
            None,
            Ask,
            None,
            None,
            PreApproved,
            true,
        ),
        (Some(Ask), Dynamic, None, Ask, None, None, Ask, false),
        (None, Dynamic, None, Ask, Some(Ask), None, Ask, false),
        (
            None,
            Dynamic,
            None,
            Ask,
            None,
            Some(Blocked),
            Blocked,
            false,
        ),
        // The worker floor is a floor: it tightens, never loosens.
        (None, NoOwn, None, PreApproved, Some(Ask), None, Ask, false),
        (
            Some(Ask),
            NoOwn,
            None,
            Ask,
            Some(PreApproved),
            None,
            Ask,
            false,
        ),
        // Blocked wins at every level (a preApproved worker default cannot un-block a tool).
        (
            Some(Blocked),
            NoOwn,
            None,
            Ask,
            Some(PreApproved),
            None,
            Blocked,
            false,
        ),
        (
            None,
            NoOwn,
            Some(Blocked),
            Ask,
            Some(PreApproved),
            None,
            Blocked,
            false,
        ),
        (None, NoOwn, None, Ask, Some(Blocked), None, Blocked, false),
        // The caller's floor: a called worker is at least as strict as its callers.
        (
            Some(PreApproved),
            NoOwn,
            None,
            Ask,
            None,
            Some(Blocked),
            Blocked,
            false,
        ),
        (
            None,
            NoOwn,
            None,
            PreApproved,
            Some(PreApproved),
            Some(Ask),
            Ask,
            false,
        ),
        (
            Some(Blocked),
            NoOwn,
            None,
            Ask,
            None,
            Some(PreApproved),
            Blocked,
            false,
        ),
    ];
    for (index, row) in rows.iter().enumerate() {
        let (explicit, own, toolset_default, documented, worker, caller, decision, dynamic) = *row;
        let resolved = resolve(&ApprovalInputs {
            explicit,
            own,
            toolset_default,
            documented_default: documented,
            worker_floor: worker,
            caller_floor: caller,
        });
        assert_eq!(
            (resolved.decision, resolved.dynamic),
            (decision, dynamic),
            "row {index}: {row:?}"
        );
        assert_eq!(
            resolved.path_floor,
            [explicit, worker, caller].into_iter().flatten().max(),
            "row {index}: {row:?}"
        );
    }
    assert_eq!(resolve(&inputs(Ask)).decision, Ask);
}

#[test]
fn documented_defaults_let_reads_run_and_ask_for_everything_else() {
    for tool in ["read_file", "list_files", "file_exists", "file_info"] {
        assert_eq!(Toolset::Filesystem.documented_default(tool), PreApproved);
    }
    for tool in ["write_file", "delete_file"] {
        assert_eq!(Toolset::Filesystem.documented_default(tool), Ask);
    }
    for tool in ["grep_search", "glob_search", "directory_tree", "file_read"] {
        assert_eq!(Toolset::CodeAgent.documented_default(tool), PreApproved);
    }
    for tool in ["file_write", "file_edit", "file_patch"] {
        assert_eq!(Toolset::CodeAgent.documented_default(tool), Ask);
    }
    // A read tool name in another toolset is not a read of the file toolsets.
    assert_eq!(Toolset::ToolsModule.documented_default("read_file"), Ask);
    for toolset in [
        Toolset::Shell,
        Toolset::CliExecute,
        Toolset::Executables,
        Toolset::Workers,
        Toolset::CreateCustomTool,
        Toolset::Standalone,
    ] {
        assert_eq!(toolset.documented_default("anything"), Ask);
    }
}

#[test]
fn entries_naming_no_tool_are_refused_with_the_list() {
    let config: ApprovalConfig =
        serde_json::from_str(r#"{"tools":{"delete_fiel":"blocked"}}"#).unwrap();
    let err = config
        .check_names(&["read_file", "delete_file"], "filesystem")
        .unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
    let message = err.to_string();
    assert!(message.contains("'delete_fiel'"), "{message}");
    assert!(message.contains("delete_file, read_file"), "{message}");
    config.check_names(&["delete_fiel"], "x").unwrap();
}

#[test]
fn the_caller_floor_is_handed_down_and_only_tightens() {
    let top = CallerFloor::default();
    assert_eq!(top.for_tool("write_file"), None);
    let child = top.handed_down(
        [
            ("write_file".to_string(), Blocked),
            ("read_file".to_string(), PreApproved),
        ],
        None,
    );
    assert_eq!(child.for_tool("write_file"), Some(Blocked));
    assert_eq!(child.for_tool("read_file"), Some(PreApproved));
    assert_eq!(child.for_tool("other"), None);
    // Two levels down: a looser decision on the way does not loosen the floor.
    let grandchild = child.handed_down([("write_file".to_string(), PreApproved)], Some(Ask));
    assert_eq!(grandchild.for_tool("write_file"), Some(Blocked));
    assert_eq!(grandchild.for_tool("read_file"), Some(Ask));
    assert_eq!(grandchild.for_tool("other"), Some(Ask));
    let deeper = grandchild.handed_down([], Some(PreApproved));
    assert_eq!(deeper.default, Some(Ask));
}

#[test]
fn the_blocked_error_names_the_tool_and_the_fix() {
    let err = blocked_error("delete_file");
    assert_eq!(err.code(), "TOOL_BLOCKED");
    assert!(err.to_string().contains("'delete_file'"));
    assert!(err.to_string().contains("'ask'"));
}

#[test]
fn a_toolset_is_decided_tool_by_tool_with_its_floors() {
    let config: ApprovalConfig =
        serde_json::from_str(r#"{"default":"preApproved","tools":{"delete_file":"blocked"}}"#)
            .unwrap();
    let tools = [
        Candidate::plain("read_file"),
        Candidate::plain("write_file"),
        Candidate::plain("delete_file"),
    ];
    let decided = decide_toolset(Toolset::Filesystem, &config, &tools, Floors::default());
    let decisions: Vec<Decision> = decided.iter().map(|r| r.decision).collect();
    assert_eq!(decisions, [PreApproved, PreApproved, Blocked]);

    // Issue 10 item 10: a preApproved worker default does not un-block delete_file.
    let worker: ApprovalConfig = serde_json::from_str(r#"{"default":"preApproved"}"#).unwrap();
    let decided = decide_toolset(
        Toolset::Filesystem,
        &config,
        &tools,
        Floors {
            worker: Some(&worker),
            caller: None,
        },
    );
    assert_eq!(decided[2].decision, Blocked);

    // Issue 10 item 9: the caller blocked write_file, so the called worker's write_file is
    // blocked too, whatever its own configuration says.
    let caller = CallerFloor::default().handed_down([("write_file".to_string(), Blocked)], None);
    let decided = decide_toolset(
        Toolset::Filesystem,
        &config,
        &tools,
        Floors {
            worker: None,
            caller: Some(&caller),
        },
    );
    assert_eq!(decided[1].decision, Blocked);
    assert_eq!(decided[0].decision, PreApproved);
}

#[test]
fn executable_entries_match_with_or_without_the_prefix_and_the_strictest_wins() {
    let config: ApprovalConfig = serde_json::from_str(
        r#"{"tools":{"weather":"preApproved","custom_tool_weather":"blocked","custom_tool_time":"preApproved"}}"#,
    )
    .unwrap();
    let tools = [
        Candidate::plain("custom_tool_weather"),
        Candidate::plain("custom_tool_time"),
        Candidate::plain("custom_tool_other"),
    ];
    let decided = decide_toolset(Toolset::Executables, &config, &tools, Floors::default());
    let decisions: Vec<Decision> = decided.iter().map(|r| r.decision).collect();
    assert_eq!(decisions, [Blocked, PreApproved, Ask]);
    let known = known_names(
        Toolset::Executables,
        &["custom_tool_weather", "custom_tool_time"],
    );
    config.check_names(&known, "executables").unwrap();
    let typo: ApprovalConfig = serde_json::from_str(r#"{"tools":{"wether":"blocked"}}"#).unwrap();
    assert!(typo.check_names(&known, "executables").is_err());
}

#[test]
fn the_source_is_the_input_that_reached_the_decision_first() {
    use ApprovalSource::*;
    let with = |change: &dyn Fn(&mut ApprovalInputs)| {
        let mut inputs = inputs(Ask);
        change(&mut inputs);
        let resolved = resolve(&inputs);
        (resolved.decision, resolved.source)
    };
    assert_eq!(with(&|_| {}), (Ask, DocumentedDefault));
    assert_eq!(
        with(&|i| i.toolset_default = Some(PreApproved)),
        (PreApproved, ToolsetDefault)
    );
    assert_eq!(with(&|i| i.explicit = Some(Blocked)), (Blocked, ToolEntry));
    assert_eq!(
        with(&|i| i.own = OwnApproval::Static(Ask)),
        (Ask, OwnNeedsApproval)
    );
    assert_eq!(
        with(&|i| {
            i.explicit = Some(PreApproved);
            i.own = OwnApproval::Static(Ask);
        }),
        (Ask, OwnNeedsApproval)
    );
    assert_eq!(
        with(&|i| i.own = OwnApproval::Dynamic),
        (PreApproved, OwnNeedsApproval)
    );
    // A floor names itself only when it is stricter than what was already decided.
    assert_eq!(
        with(&|i| {
            i.explicit = Some(Ask);
            i.worker_floor = Some(Ask);
        }),
        (Ask, ToolEntry)
    );
    assert_eq!(
        with(&|i| {
            i.explicit = Some(PreApproved);
            i.worker_floor = Some(Ask);
            i.caller_floor = Some(Blocked);
        }),
        (Blocked, CallerFloor)
    );
    assert_eq!(
        with(&|i| {
            i.toolset_default = Some(PreApproved);
            i.worker_floor = Some(Blocked);
            i.caller_floor = Some(Ask);
        }),
        (Blocked, WorkerFloor)
    );
    assert_eq!(CallerFloor.as_str(), "caller-floor");
}
