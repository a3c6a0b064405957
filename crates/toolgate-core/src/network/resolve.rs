//! How names are resolved: by the system resolver, or by a table in tests. Only toolgate
//! resolves names for sandboxed processes (they have no DNS), so this is where a name becomes
//! the addresses that are checked and then connected to.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

/// A resolver: a name to its addresses.
pub type Lookup = Arc<
    dyn Fn(String) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>
        + Send
        + Sync,
>;

/// The system resolver (`getaddrinfo`, on tokio's blocking threads).
pub fn system_lookup() -> Lookup {
    Arc::new(|host: String| {
        Box::pin(async move {
            let addresses = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let mut ips: Vec<IpAddr> = Vec::new();
            for address in addresses {
                if !ips.contains(&address.ip()) {
                    ips.push(address.ip());
                }
            }
            Ok(ips)
        })
    })
}

/// A fixed table of names (for tests and benchmarks: no DNS is asked). A name not in the
/// table does not resolve.
pub fn table_lookup(table: HashMap<String, Vec<IpAddr>>) -> Lookup {
    let table = Arc::new(table);
    Arc::new(move |host: String| {
        let found = table.get(&host).cloned();
        Box::pin(async move {
            found.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("'{host}' is not in the resolver's table"),
                )
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_table_answers_its_names_only() {
        let lookup = table_lookup(HashMap::from([(
            "svc.test".to_string(),
            vec!["127.0.0.1".parse().unwrap()],
        )]));
        assert_eq!(
            lookup("svc.test".into()).await.unwrap(),
            vec!["127.0.0.1".parse::<IpAddr>().unwrap()]
        );
        assert!(lookup("other.test".into()).await.is_err());
    }

    #[tokio::test]
    async fn the_system_resolver_knows_localhost() {
        let ips = system_lookup()("localhost".into()).await.unwrap();
        assert!(ips.iter().all(|ip| ip.is_loopback()), "{ips:?}");
        assert!(!ips.is_empty());
    }
}
