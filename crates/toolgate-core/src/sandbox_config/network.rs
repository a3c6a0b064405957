//! The `network` part of a sandbox scope: the setting of this level and the access the levels
//! above leave it, joined by the rules of [`crate::network`].
//!
//! - A scope on its own (a TypeScript toolset, the top worker) has nothing above it: its
//!   access is its setting (default `false`).
//! - A toolset inside a worker file may widen its worker's setting
//!   ([`NetworkSetting::extended_by`]), but never past what the levels above the worker leave
//!   (a called worker's toolset only narrows its caller).
//! - A called worker only narrows its caller: its setting must not reach what the caller's
//!   access does not ([`NetworkAccess::widening`]), and both hold at once
//!   ([`NetworkAccess::narrowed_by`]).

use crate::network::{NetworkAccess, NetworkPolicy, NetworkSetting};
use crate::sandbox::NetworkMode;

/// What a scope's processes may reach on the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeNetwork {
    /// What the levels above this one leave it (`Open` at the top: nothing above).
    bound: NetworkAccess,
    /// This level's own setting, as written or extended by a toolset.
    own: NetworkSetting,
}

impl ScopeNetwork {
    /// A scope with nothing above it: `setting`, else no network.
    pub fn new(setting: Option<&NetworkSetting>) -> Self {
        ScopeNetwork {
            bound: NetworkAccess::Open,
            own: setting.cloned().unwrap_or(NetworkSetting::Off),
        }
    }

    /// The network the scope's processes get, every level applied.
    pub fn access(&self) -> NetworkAccess {
        self.bound.narrowed_by(&self.own.access())
    }

    /// Whether processes get the open network (`network: true` at every level).
    pub fn is_open(&self) -> bool {
        self.access() == NetworkAccess::Open
    }

    /// Whether processes get no network at all.
    pub fn is_off(&self) -> bool {
        self.access() == NetworkAccess::Off
    }

    /// What the launcher gives the scope's processes: nothing, the host's network, or only
    /// the egress proxy (network by host).
    pub fn mode(&self) -> NetworkMode {
        match self.access() {
            NetworkAccess::Off => NetworkMode::Off,
            NetworkAccess::Open => NetworkMode::On,
            NetworkAccess::Hosts(_) => NetworkMode::Proxy,
        }
    }

    /// The host policy, when the network is by host (through the egress proxy).
    pub fn host_policy(&self) -> Option<NetworkPolicy> {
        match self.access() {
            NetworkAccess::Hosts(policy) => Some(policy),
            _ => None,
        }
    }

    /// The scope of a called worker whose file writes `setting`: an absent setting keeps this
    /// access; a present one may only narrow it. `Err` says what it would widen.
    pub fn for_called(&self, setting: Option<&NetworkSetting>) -> Result<Self, String> {
        let outer = self.access();
        // Absent, the setting adds nothing: `true` under the caller's access is that access.
        let own = match setting {
            None => NetworkSetting::Open,
            Some(own) => {
                if let Some(widening) = outer.widening(&own.access()) {
                    return Err(widening);
                }
                own.clone()
            }
        };
        Ok(ScopeNetwork { bound: outer, own })
    }

    /// The scope of a toolset of this level's worker file whose `sandbox` writes `setting`: it
    /// may widen this level's own setting, never what the levels above leave. `Err` says what
    /// it would widen there.
    pub fn for_toolset(&self, setting: Option<&NetworkSetting>) -> Result<Self, String> {
        let Some(setting) = setting else {
            return Ok(self.clone());
        };
        let own = self.own.extended_by(setting);
        if let Some(widening) = self.bound.widening(&own.access()) {
            return Err(widening);
        }
        Ok(ScopeNetwork {
            bound: self.bound.clone(),
            own,
        })
    }

    /// No network (an executable tool's `description` run).
    pub fn off() -> Self {
        ScopeNetwork::new(Some(&NetworkSetting::Off))
    }

    /// What this scope reaches that `outer` does not, in words; `None` when it only narrows.
    pub fn widening_over(&self, outer: &ScopeNetwork) -> Option<String> {
        outer.access().widening(&self.access())
    }

    /// One line for `toolgate check --sandbox` and the plan report.
    pub fn describe(&self) -> String {
        self.access().describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(json: serde_json::Value) -> NetworkSetting {
        NetworkSetting::from_json(&json, "network").unwrap()
    }

    /// The `sandbox` option of a JavaScript caller, read as the binding reads it.
    fn option(json: serde_json::Value) -> crate::Result<super::super::SandboxOption> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Holder {
            sandbox: super::super::SandboxOption,
        }
        crate::options::parse::<Holder>(
            crate::options::OptionValue::from(serde_json::json!({ "sandbox": json })),
            false,
        )
        .map(|holder| holder.sandbox)
    }

    #[test]
    fn the_javascript_option_takes_the_object_form_strictly() {
        let fields = option(serde_json::json!({
            "network": { "allow": ["registry.npmjs.org", "10.0.0.0/8:5432"], "deny": ["x.npmjs.org"], "ask": true }
        }))
        .unwrap()
        .into_fields();
        let network = ScopeNetwork::new(fields.network.as_ref());
        assert_eq!(
            network.describe(),
            "by host through the egress proxy: allow registry.npmjs.org, 10.0.0.0/8:5432; deny x.npmjs.org; ask about other hosts"
        );
        for (bad, expected) in [
            (
                serde_json::json!({ "allow": [], "Allow": [] }),
                "unknown key 'Allow'",
            ),
            (serde_json::json!({ "allow": "a.test" }), "list of strings"),
            (
                serde_json::json!({ "allow": ["*"] }),
                "network.allow entry '*' is not valid",
            ),
            (
                serde_json::json!({ "deny": ["a.test:99999"] }),
                "network.deny entry",
            ),
            (serde_json::json!({ "ask": "yes" }), "boolean"),
            (serde_json::json!("hosts"), "true, false or an object"),
        ] {
            let err = option(serde_json::json!({ "network": bad.clone() })).unwrap_err();
            assert_eq!(err.code(), "CONFIG_INVALID", "{bad}: {err}");
            let text = err.to_string();
            assert!(text.contains(expected), "{bad}: {text}");
            assert!(text.contains("sandbox.network"), "{bad}: {text}");
        }
        assert_eq!(
            option(serde_json::json!({ "network": true }))
                .unwrap()
                .into_fields()
                .network,
            Some(NetworkSetting::Open)
        );
    }

    #[test]
    fn a_scope_on_its_own_is_its_setting_and_defaults_to_off() {
        assert!(ScopeNetwork::new(None).is_off());
        assert!(ScopeNetwork::new(Some(&NetworkSetting::Open)).is_open());
        let hosts = ScopeNetwork::new(Some(&setting(serde_json::json!({ "allow": ["a.test"] }))));
        assert!(!hosts.is_open() && !hosts.is_off());
        assert!(hosts.host_policy().is_some());
        assert!(
            hosts.describe().contains("allow a.test"),
            "{}",
            hosts.describe()
        );
    }

    #[test]
    fn a_toolset_widens_its_worker_inside_one_file() {
        let worker = ScopeNetwork::new(Some(&setting(
            serde_json::json!({ "allow": ["a.test"], "deny": ["bad.a.test"] }),
        )));
        let toolset = worker
            .for_toolset(Some(&setting(serde_json::json!({ "allow": ["b.test"] }))))
            .unwrap();
        let described = toolset.describe();
        assert!(described.contains("a.test, b.test"), "{described}");
        assert!(described.contains("deny bad.a.test"), "{described}");
        // Off at the worker, an allow list at the toolset: the toolset's own.
        let off = ScopeNetwork::new(None);
        let opened = off
            .for_toolset(Some(&setting(serde_json::json!({ "allow": ["b.test"] }))))
            .unwrap();
        assert!(opened.host_policy().is_some());
        assert!(off
            .for_toolset(Some(&NetworkSetting::Open))
            .unwrap()
            .is_open());
        assert_eq!(off.for_toolset(None).unwrap(), off);
    }

    #[test]
    fn a_called_worker_only_narrows_its_caller() {
        let caller =
            ScopeNetwork::new(Some(&setting(serde_json::json!({ "allow": ["*.a.test"] }))));
        // Absent: the caller's access.
        let called = caller.for_called(None).unwrap();
        assert_eq!(called.access(), caller.access());
        // Narrower: both hold.
        let narrower = caller
            .for_called(Some(&setting(serde_json::json!({ "allow": ["x.a.test"] }))))
            .unwrap();
        assert!(
            narrower.describe().contains("within that"),
            "{}",
            narrower.describe()
        );
        // Wider: refused, naming what.
        let wider = caller
            .for_called(Some(&setting(serde_json::json!({ "allow": ["b.test"] }))))
            .unwrap_err();
        assert!(wider.contains("b.test"), "{wider}");
        assert!(caller
            .for_called(Some(&NetworkSetting::Open))
            .unwrap_err()
            .contains("true"));
        assert!(caller
            .for_called(Some(&NetworkSetting::Off))
            .unwrap()
            .is_off());
        // Off above: nothing turns it on, not even a toolset of the called worker.
        let off = ScopeNetwork::new(None).for_called(None).unwrap();
        assert!(off
            .for_toolset(Some(&setting(serde_json::json!({ "allow": ["a.test"] }))))
            .is_err());
        assert!(off.for_toolset(Some(&NetworkSetting::Open)).is_err());
        // A called worker's toolset within the caller's hosts is fine and stays bounded.
        let toolset = called
            .for_toolset(Some(&setting(serde_json::json!({ "allow": ["y.a.test"] }))))
            .unwrap();
        assert!(toolset.widening_over(&caller).is_none());
        let far = called.for_toolset(Some(&setting(serde_json::json!({ "allow": ["c.test"] }))));
        assert!(far.unwrap_err().contains("c.test"));
    }
}
