use serde_json::json;

use super::*;
use crate::ErrorCode;

fn setting(value: serde_json::Value) -> NetworkSetting {
    NetworkSetting::from_json(&value, "sandbox.network")
        .unwrap_or_else(|err| panic!("{value}: {err}"))
}

fn policy(value: serde_json::Value) -> NetworkPolicy {
    match setting(value).access() {
        NetworkAccess::Hosts(policy) => policy,
        other => panic!("not a host policy: {other:?}"),
    }
}

fn host(text: &str) -> Host {
    Host::parse(text).unwrap()
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn verdict(policy: &NetworkPolicy, target: &str, port: u16) -> HostVerdict {
    policy.judge_host(&host(target), port)
}

fn allowed(policy: &NetworkPolicy, target: &str, port: u16) -> bool {
    matches!(verdict(policy, target, port), HostVerdict::Allow { .. })
}

fn denial(policy: &NetworkPolicy, target: &str, port: u16) -> Denial {
    match verdict(policy, target, port) {
        HostVerdict::Deny(denial) => denial,
        other => panic!("{target}:{port} is not refused: {other:?}"),
    }
}

#[test]
fn true_false_and_objects_are_read() {
    assert_eq!(setting(json!(false)), NetworkSetting::Off);
    assert_eq!(setting(json!(true)), NetworkSetting::Open);
    assert_eq!(
        setting(json!({})),
        NetworkSetting::Hosts(HostPolicy::default())
    );
    let NetworkSetting::Hosts(read) = setting(json!({
        "allow": ["Registry.npmjs.org", "*.github.com:443"],
        "deny": ["evil.github.com"],
        "ask": true
    })) else {
        panic!("an object is a host policy")
    };
    assert_eq!(read.allow.len(), 2);
    assert_eq!(read.deny.len(), 1);
    assert!(read.asks());
    // Written back in the normal spelling.
    assert_eq!(
        serde_json::to_value(NetworkSetting::Hosts(read)).unwrap(),
        json!({ "allow": ["registry.npmjs.org", "*.github.com:443"], "deny": ["evil.github.com"], "ask": true })
    );
    // YAML reads the same way.
    let yaml: NetworkSetting =
        serde_yaml::from_str("{ allow: [example.com], ask: false }").unwrap();
    assert!(matches!(
        yaml,
        NetworkSetting::Hosts(HostPolicy {
            ask: Some(false),
            ..
        })
    ));
}

#[test]
fn unknown_keys_and_bad_entries_are_config_errors_that_name_them() {
    for (value, says) in [
        (json!({ "allow": [], "alow": ["x"] }), "unknown key 'alow'"),
        (json!({ "hosts": ["x"] }), "unknown key 'hosts'"),
        (json!({ "allow": ["https://example.com/x"] }), "network.allow entry 'https://example.com/x' is not valid: it is a URL; write only its host: 'example.com'"),
        (json!({ "deny": ["10.0.0.0/40"] }), "network.deny entry '10.0.0.0/40'"),
        (json!({ "allow": "example.com" }), "list of strings"),
        (json!({ "allow": [1] }), "string"),
        (json!({ "ask": "yes" }), "boolean"),
        (json!("example.com"), "true, false or an object"),
        (json!({ "allow": ["exa\u{0}mple.com"] }), "NUL"),
    ] {
        let err = NetworkSetting::from_json(&value, "sandbox.network").unwrap_err();
        assert_eq!(err.error_code(), ErrorCode::ConfigInvalid, "{value}");
        let message = err.to_string();
        assert!(message.starts_with("sandbox.network: "), "{message}");
        assert!(message.contains(says), "{value}: {message}");
    }
    let too_many: Vec<String> = (0..=MAX_ENTRIES).map(|n| format!("h{n}.test")).collect();
    let err = NetworkSetting::from_json(&json!({ "allow": too_many }), "network").unwrap_err();
    assert!(err.to_string().contains("more than"), "{err}");
}

#[test]
fn allow_deny_and_the_default() {
    let policy = policy(json!({
        "allow": ["*.example.com", "api.test:443", "example.com"],
        "deny": ["secret.example.com", "*.internal.example.com"]
    }));
    assert!(allowed(&policy, "example.com", 80));
    assert!(allowed(&policy, "a.example.com", 443));
    assert!(allowed(&policy, "api.test", 443));
    // deny wins over allow
    let denied = denial(&policy, "secret.example.com", 443);
    assert_eq!(denied.decided_by, DecidedBy::Rule);
    assert_eq!(denied.rule.as_deref(), Some("secret.example.com"));
    assert_eq!(
        denial(&policy, "x.internal.example.com", 443).decided_by,
        DecidedBy::Rule
    );
    // a port not allowed
    let port = denial(&policy, "api.test", 80);
    assert_eq!(port.decided_by, DecidedBy::Policy);
    assert!(
        port.reason.contains("api.test:80 is not in network.allow"),
        "{}",
        port.reason
    );
    assert!(port.fix.unwrap().contains("[\"api.test:80\"]"));
    // anything else
    assert_eq!(
        denial(&policy, "other.test", 443).decided_by,
        DecidedBy::Policy
    );
    assert_eq!(
        denial(&policy, "ex\u{0430}mple.com", 443).decided_by,
        DecidedBy::Policy
    );
}

#[test]
fn ask_covers_only_what_is_neither_allowed_nor_denied() {
    let policy = policy(json!({ "allow": ["a.test"], "deny": ["b.test"], "ask": true }));
    assert!(allowed(&policy, "a.test", 443));
    assert!(matches!(
        verdict(&policy, "b.test", 443),
        HostVerdict::Deny(_)
    ));
    assert_eq!(verdict(&policy, "c.test", 443), HostVerdict::Ask);
}

#[test]
fn internal_addresses_need_the_address_itself_in_allow() {
    let by_name = policy(json!({ "allow": ["localhost", "svc.test"] }));
    assert!(allowed(&by_name, "localhost", 80));
    let refused = by_name
        .judge_address(&host("svc.test"), ip("127.0.0.1"), 80)
        .unwrap_err();
    assert_eq!(refused.decided_by, DecidedBy::Address);
    assert_eq!(
        refused.reason,
        "svc.test resolves to 127.0.0.1, a loopback address"
    );
    assert!(refused.fix.unwrap().contains("[\"127.0.0.1\"]"));
    assert!(by_name
        .judge_address(&host("svc.test"), ip("93.184.216.34"), 80)
        .is_ok());

    let by_address = policy(json!({ "allow": ["svc.test", "127.0.0.1", "10.0.0.0/8:5432"] }));
    assert!(by_address
        .judge_address(&host("svc.test"), ip("127.0.0.1"), 80)
        .is_ok());
    assert!(by_address
        .judge_address(&host("svc.test"), ip("::ffff:127.0.0.1"), 80)
        .is_ok());
    assert!(by_address
        .judge_address(&host("svc.test"), ip("127.0.0.2"), 80)
        .is_err());
    assert!(by_address
        .judge_address(&host("db.test"), ip("10.1.1.1"), 5432)
        .is_ok());
    assert!(by_address
        .judge_address(&host("db.test"), ip("10.1.1.1"), 22)
        .is_err());

    // A literal internal address is refused for what it is, in every spelling.
    let open_names = policy(json!({ "allow": ["*.example.com"], "ask": true }));
    for spelling in [
        "10.0.0.5",
        "167772165",
        "012.0.0.5",
        "0xa.0.0.5",
        "[::ffff:10.0.0.5]",
        "[::ffff:a00:5]",
    ] {
        let refused = denial(&open_names, spelling, 80);
        assert_eq!(refused.decided_by, DecidedBy::Address, "{spelling}");
    }
    let refused = denial(&open_names, "10.0.0.5", 80);
    assert_eq!(refused.reason, "a private address");
    assert_eq!(
        refused.fix.unwrap(),
        "allow it with network.allow: [\"10.0.0.5\"]"
    );
    let literal = policy(json!({ "allow": ["10.0.0.5"] }));
    assert!(allowed(&literal, "10.0.0.5", 80));
    assert!(allowed(&literal, "0xa.0.0.5", 80));
    assert!(allowed(&literal, "[::ffff:10.0.0.5]", 80));
}

#[test]
fn deny_entries_reach_every_spelling_of_an_address() {
    let policy =
        policy(json!({ "allow": ["*.example.com", "1.2.3.4"], "deny": ["1.2.3.4", "9.9.9.0/24"] }));
    for target in [
        "1.2.3.4",
        "16909060",
        "[::ffff:1.2.3.4]",
        "[64:ff9b::102:304]",
        "[2002:102:304::1]",
    ] {
        assert_eq!(
            denial(&policy, target, 443).decided_by,
            DecidedBy::Rule,
            "{target}"
        );
    }
    let resolved = policy
        .judge_address(&host("a.example.com"), ip("9.9.9.9"), 443)
        .unwrap_err();
    assert_eq!(resolved.rule.as_deref(), Some("9.9.9.0/24"));
}

#[test]
fn a_called_worker_only_narrows() {
    let caller = setting(json!({ "allow": ["*.example.com", "api.test"], "ask": true })).access();
    let callee = setting(json!({ "allow": ["a.example.com", "other.test"] })).access();
    let NetworkAccess::Hosts(both) = caller.narrowed_by(&callee) else {
        panic!("host policies combine")
    };
    assert_eq!(both.layers().len(), 2);
    assert!(allowed(&both, "a.example.com", 443), "allowed by both");
    // Allowed by the caller only: the callee refuses.
    assert!(matches!(
        verdict(&both, "api.test", 443),
        HostVerdict::Deny(_)
    ));
    // Allowed by the callee only: the caller would ask, so it is asked.
    assert_eq!(verdict(&both, "other.test", 443), HostVerdict::Ask);
    assert!(
        caller.widening(&callee).is_none(),
        "the caller asks about other.test"
    );

    let strict_caller = setting(json!({ "allow": ["*.example.com"] })).access();
    let widening = strict_caller.widening(&callee).unwrap();
    assert!(widening.contains("other.test"), "{widening}");
    assert!(matches!(
        verdict(
            match &strict_caller.narrowed_by(&callee) {
                NetworkAccess::Hosts(policy) => policy,
                _ => unreachable!(),
            },
            "other.test",
            443
        ),
        HostVerdict::Deny(_)
    ));

    // Off anywhere is off; open adds nothing; open under a host policy is a widening.
    assert_eq!(NetworkAccess::Off.narrowed_by(&caller), NetworkAccess::Off);
    assert_eq!(caller.narrowed_by(&NetworkAccess::Off), NetworkAccess::Off);
    assert_eq!(NetworkAccess::Open.narrowed_by(&caller), caller);
    assert_eq!(caller.narrowed_by(&NetworkAccess::Open), caller);
    assert!(caller.widening(&NetworkAccess::Open).is_some());
    assert!(NetworkAccess::Off.widening(&caller).is_some());
    assert!(NetworkAccess::Open.widening(&caller).is_none());
    assert!(caller.widening(&NetworkAccess::Off).is_none());
    let asking_callee = setting(json!({ "ask": true })).access();
    assert!(strict_caller
        .widening(&asking_callee)
        .unwrap()
        .contains("ask"));

    // Every layer's internal-address exemption is needed.
    let outer = setting(json!({ "allow": ["svc.test", "127.0.0.1"] })).access();
    let inner = setting(json!({ "allow": ["svc.test"] })).access();
    let NetworkAccess::Hosts(both) = outer.narrowed_by(&inner) else {
        unreachable!()
    };
    assert!(both
        .judge_address(&host("svc.test"), ip("127.0.0.1"), 80)
        .is_err());
}

#[test]
fn a_toolset_widens_inside_its_worker_file() {
    let worker =
        setting(json!({ "allow": ["registry.npmjs.org"], "deny": ["evil.test"], "ask": true }));
    let toolset = setting(json!({ "allow": ["github.com", "evil.test"] }));
    let NetworkSetting::Hosts(merged) = worker.extended_by(&toolset) else {
        panic!("objects merge")
    };
    let texts = |rules: &[Rule]| rules.iter().map(ToString::to_string).collect::<Vec<_>>();
    assert_eq!(
        texts(&merged.allow),
        ["registry.npmjs.org", "github.com", "evil.test"]
    );
    assert_eq!(
        texts(&merged.deny),
        ["evil.test"],
        "the worker's deny still holds"
    );
    assert_eq!(
        merged.ask,
        Some(true),
        "the worker's ask when the toolset writes none"
    );
    let policy = NetworkPolicy::new(merged);
    assert!(matches!(
        verdict(&policy, "evil.test", 443),
        HostVerdict::Deny(_)
    ));
    assert!(allowed(&policy, "github.com", 443));

    let quiet = setting(json!({ "ask": false }));
    let NetworkSetting::Hosts(merged) = worker.extended_by(&quiet) else {
        unreachable!()
    };
    assert_eq!(merged.ask, Some(false));
    assert_eq!(NetworkSetting::Off.extended_by(&toolset), toolset);
    assert_eq!(
        worker.extended_by(&NetworkSetting::Open),
        NetworkSetting::Open
    );
    assert_eq!(
        worker.extended_by(&NetworkSetting::Off),
        NetworkSetting::Off
    );
}

#[test]
fn policies_describe_themselves() {
    let access = setting(json!({ "allow": ["a.test"], "deny": ["b.test"], "ask": true })).access();
    assert_eq!(
        access.describe(),
        "by host through the egress proxy: allow a.test; deny b.test; ask about other hosts"
    );
    assert_eq!(NetworkAccess::Off.describe(), "off");
    let narrowed = access.narrowed_by(&setting(json!({ "allow": ["a.test"] })).access());
    assert!(narrowed
        .describe()
        .contains("and within that, allow a.test; refuse other hosts"));
}

#[test]
fn the_schema_describes_both_forms() {
    let schema = schemars::schema_for!(NetworkSetting);
    let text = serde_json::to_string(&schema).unwrap();
    assert!(
        text.contains("\"allow\"") && text.contains("\"boolean\""),
        "{text}"
    );
}
