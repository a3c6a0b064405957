//! `http_request`: one HTTP request with the SSRF policy applied to every address, a timeout
//! over the whole exchange and a cap on the body kept.
//!
//! The policy is enforced where connections are made: reqwest resolves names through
//! [`CheckedResolver`], which refuses a name when any address it resolves to is refused, and
//! hands the checked addresses to the connector, so the connection goes to an address that was
//! checked and the name is never resolved a second time. Addresses written in the URL are
//! checked before the request. Redirects are followed here, one hop at a time, each hop
//! checked the same way. System proxies are ignored: a proxy would make the connection for us.

pub mod address;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::Method;
use serde::Deserialize;
use serde_json::{json, Value};
use url::{Host, Url};

pub use address::AllowList;

use crate::error::{Error, Result};
use crate::limits::{
    DEFAULT_HTTP_RESPONSE_BYTES, DEFAULT_HTTP_TIMEOUT, MAX_HTTP_HEADERS,
    MAX_HTTP_HEADER_VALUE_BYTES, MAX_HTTP_REDIRECTS, MAX_HTTP_REQUEST_BODY_BYTES,
    MAX_HTTP_URL_BYTES,
};

/// Headers the model may not set: they describe the connection, which is not the model's.
const REFUSED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "proxy-authorization",
    "te",
    "trailer",
];
/// Headers dropped when a redirect leaves the origin, so credentials go nowhere else.
const CREDENTIAL_HEADERS: &[&str] = &["authorization", "cookie", "proxy-authorization"];

/// How names are resolved: the system resolver, or a hook in tests.
pub type Lookup = Arc<
    dyn Fn(String) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>
        + Send
        + Sync,
>;

/// The system resolver (`getaddrinfo` through tokio).
pub fn system_lookup() -> Lookup {
    Arc::new(|host: String| {
        Box::pin(async move {
            let addresses = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addresses.map(|address| address.ip()).collect())
        })
    })
}

/// A refusal raised inside the resolver, found again in reqwest's error chain.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Resolves names and refuses those that lead to refused addresses.
struct CheckedResolver {
    allow: Arc<AllowList>,
    lookup: Lookup,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        let allow = Arc::clone(&self.allow);
        let lookup = Arc::clone(&self.lookup);
        Box::pin(async move {
            let addresses = lookup(host.clone()).await.map_err(|err| {
                Box::new(Refused(format!("'{host}' could not be resolved: {err}")))
                    as Box<dyn std::error::Error + Send + Sync>
            })?;
            if addresses.is_empty() {
                return Err(Box::new(Refused(format!("'{host}' resolves to no address"))) as _);
            }
            // One refused address refuses the name: a resolver that answers with a public and a
            // private address must not get a second chance at the private one.
            for ip in &addresses {
                allow
                    .check(&host, *ip)
                    .map_err(|err| Box::new(Refused(err.to_string())) as Box<_>)?;
            }
            let checked: Vec<SocketAddr> = addresses
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            Ok(Box::new(checked.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The `http` block of the builtins configuration, checked.
#[derive(Debug, Clone)]
pub struct HttpPolicy {
    pub allow: Arc<AllowList>,
    pub timeout: Duration,
    pub max_response_bytes: usize,
}

impl Default for HttpPolicy {
    fn default() -> Self {
        Self {
            allow: Arc::new(AllowList::default()),
            timeout: DEFAULT_HTTP_TIMEOUT,
            max_response_bytes: DEFAULT_HTTP_RESPONSE_BYTES,
        }
    }
}

/// An HTTP client bound to one policy.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    policy: HttpPolicy,
}

impl std::fmt::Debug for CheckedResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedResolver").finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client that resolves through `lookup` and applies `policy`.
    pub fn new(policy: HttpPolicy, lookup: Lookup) -> Result<Self> {
        let resolver = CheckedResolver {
            allow: Arc::clone(&policy.allow),
            lookup,
        };
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(resolver))
            .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| {
                Error::ConfigInvalid(format!("the HTTP client cannot be built: {err}"))
            })?;
        Ok(Self { client, policy })
    }

    /// The policy the client applies.
    pub fn policy(&self) -> &HttpPolicy {
        &self.policy
    }

    /// Runs `http_request` with the model's `input`.
    pub async fn request(&self, input: Value) -> Result<Value> {
        let request: HttpRequestInput = super::input::parse("http_request", input)?;
        let prepared = request.prepare(&self.policy)?;
        let timeout = prepared.timeout;
        tokio::time::timeout(timeout, self.follow(prepared))
            .await
            .map_err(|_| {
                Error::Timeout(format!(
                    "http_request took longer than {} ms and was stopped; raise timeout_ms (up to builtins.http.timeout) or ask a faster server",
                    timeout.as_millis()
                ))
            })?
    }

    /// Sends a request to a URL from configuration (web search providers): same client, no
    /// redirects, the same size cap. Its host is trusted because the operator named it.
    pub(crate) async fn post_json(
        &self,
        url: &Url,
        headers: HeaderMap,
        body: &Value,
    ) -> Result<(u16, String)> {
        let send = async {
            let response = self
                .client
                .post(url.clone())
                .headers(headers)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await
                .map_err(|err| send_error(url, &err))?;
            let status = response.status().as_u16();
            let (bytes, _) = read_capped(response, self.policy.max_response_bytes).await?;
            Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
        };
        tokio::time::timeout(self.policy.timeout, send)
            .await
            .map_err(|_| {
                Error::Timeout(format!(
                    "the search provider at '{url}' did not answer within {} ms",
                    self.policy.timeout.as_millis()
                ))
            })?
    }

    async fn follow(&self, mut request: PreparedRequest) -> Result<Value> {
        for _hop in 0..=MAX_HTTP_REDIRECTS {
            check_literal_host(&request.url, &self.policy.allow)?;
            let mut builder = self
                .client
                .request(request.method.clone(), request.url.clone())
                .headers(request.headers.clone());
            if let Some(body) = &request.body {
                builder = builder.body(body.clone());
            }
            let response = builder
                .send()
                .await
                .map_err(|err| send_error(&request.url, &err))?;
            let status = response.status();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .map(str::to_string);
            match (status.is_redirection(), location) {
                (true, Some(location)) if status.as_u16() != 304 => {
                    request = request.redirected(status.as_u16(), &location)?;
                }
                _ => return self.result(response, request.method == Method::HEAD).await,
            }
        }
        Err(Error::ToolFailed(format!(
            "http_request followed {MAX_HTTP_REDIRECTS} redirects without reaching a response; request the final URL directly"
        )))
    }

    async fn result(&self, response: reqwest::Response, head: bool) -> Result<Value> {
        let status = response.status();
        let url = response.url().to_string();
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in response.headers() {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            headers
                .entry(name.as_str().to_string())
                .and_modify(|existing| {
                    existing.push_str(", ");
                    existing.push_str(&value);
                })
                .or_insert(value);
        }
        let limit = self.policy.max_response_bytes;
        let (bytes, truncated) = if head {
            (Vec::new(), false)
        } else {
            read_capped(response, limit).await?
        };
        let mut body = String::from_utf8_lossy(&bytes).into_owned();
        if truncated {
            body.push_str(&format!(
                "\n[response truncated: the body is longer than {limit} bytes (builtins.http.max_response_bytes); the rest was not read]"
            ));
        }
        Ok(json!({
            "status": status.as_u16(),
            "status_text": status.canonical_reason().unwrap_or(""),
            "url": url,
            "headers": headers,
            "body": body,
            "bytes": bytes.len(),
            "truncated": truncated,
        }))
    }
}

/// Reads at most `limit` bytes of the body; stops reading (and drops the connection) past it.
async fn read_capped(mut response: reqwest::Response, limit: usize) -> Result<(Vec<u8>, bool)> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|err| {
        Error::ToolFailed(format!(
            "reading the response of '{}' failed: {err}",
            response.url()
        ))
    })? {
        let room = limit - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok((bytes, true));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((bytes, false))
}

/// Turns reqwest's error into toolgate's, recovering a refusal made by the resolver. The
/// connector keeps only the text of a resolver's error, so the refusal is found by the words
/// that start every refusal message (see [`AllowList::check`]).
fn send_error(url: &Url, err: &reqwest::Error) -> Error {
    let mut detail = err.to_string();
    let mut inner = std::error::Error::source(err);
    while let Some(cause) = inner {
        detail.push_str(": ");
        detail.push_str(&cause.to_string());
        inner = cause.source();
    }
    if let Some(start) = detail.find(address::REFUSAL_START) {
        let refusal = &detail[start..];
        let end = refusal
            .find(address::REFUSAL_END)
            .map(|at| at + address::REFUSAL_END.len())
            .unwrap_or(refusal.len());
        return Error::ArgumentRejected(refusal[..end].to_string());
    }
    if err.is_timeout() {
        return Error::Timeout(format!("request to '{url}' timed out: {detail}"));
    }
    Error::ToolFailed(format!("request to '{url}' failed: {detail}"))
}

/// An address written into the URL never reaches the resolver: check it here.
fn check_literal_host(url: &Url, allow: &AllowList) -> Result<()> {
    let host_text = url.host_str().unwrap_or_default().to_string();
    match url.host() {
        Some(Host::Ipv4(ip)) => allow.check(&host_text, IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => allow.check(&host_text, IpAddr::V6(ip)),
        Some(Host::Domain(_)) => Ok(()),
        None => Err(Error::InvalidInput(format!(
            "URL '{url}' has no host; give an absolute http:// or https:// URL"
        ))),
    }
}

/// The model's input to `http_request`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpRequestInput {
    url: String,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

#[derive(Debug, Clone)]
struct PreparedRequest {
    url: Url,
    method: Method,
    headers: HeaderMap,
    body: Option<String>,
    timeout: Duration,
}

impl HttpRequestInput {
    fn prepare(self, policy: &HttpPolicy) -> Result<PreparedRequest> {
        let url = parse_url(&self.url)?;
        let method = match self.method.as_deref().map(str::to_ascii_uppercase).as_deref() {
            None | Some("GET") => Method::GET,
            Some("POST") => Method::POST,
            Some("PUT") => Method::PUT,
            Some("PATCH") => Method::PATCH,
            Some("DELETE") => Method::DELETE,
            Some("HEAD") => Method::HEAD,
            Some(other) => {
                return Err(Error::InvalidInput(format!(
                    "http_request: method '{other}' is not supported; use GET, POST, PUT, PATCH, DELETE or HEAD"
                )))
            }
        };
        if self.headers.len() > MAX_HTTP_HEADERS {
            return Err(Error::InvalidInput(format!(
                "http_request: {} headers given, at most {MAX_HTTP_HEADERS} are accepted",
                self.headers.len()
            )));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let lower = name.to_ascii_lowercase();
            if REFUSED_HEADERS.contains(&lower.as_str()) {
                return Err(Error::InvalidInput(format!(
                    "http_request: header '{name}' describes the connection and is set by toolgate; leave it out"
                )));
            }
            if value.len() > MAX_HTTP_HEADER_VALUE_BYTES {
                return Err(Error::InvalidInput(format!(
                    "http_request: header '{name}' is longer than {MAX_HTTP_HEADER_VALUE_BYTES} bytes"
                )));
            }
            let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                Error::InvalidInput(format!("http_request: '{name}' is not a valid header name"))
            })?;
            let header_value = HeaderValue::from_str(value).map_err(|_| {
                Error::InvalidInput(format!(
                    "http_request: the value of header '{name}' contains characters a header cannot carry (line breaks, control characters)"
                ))
            })?;
            headers.append(header_name, header_value);
        }
        if let Some(body) = &self.body {
            if body.len() > MAX_HTTP_REQUEST_BODY_BYTES {
                return Err(Error::InvalidInput(format!(
                    "http_request: the body is {} bytes, at most {MAX_HTTP_REQUEST_BODY_BYTES} are accepted",
                    body.len()
                )));
            }
            if method == Method::GET || method == Method::HEAD {
                return Err(Error::InvalidInput(format!(
                    "http_request: a {method} request carries no body; use POST, PUT or PATCH"
                )));
            }
        }
        let timeout = match self.timeout_ms {
            None => policy.timeout,
            Some(0) => {
                return Err(Error::InvalidInput(
                    "http_request: timeout_ms must be at least 1".into(),
                ))
            }
            Some(ms) => Duration::from_millis(ms).min(policy.timeout),
        };
        Ok(PreparedRequest {
            url,
            method,
            headers,
            body: self.body,
            timeout,
        })
    }
}

fn parse_url(text: &str) -> Result<Url> {
    if text.len() > MAX_HTTP_URL_BYTES {
        return Err(Error::InvalidInput(format!(
            "http_request: the URL is longer than {MAX_HTTP_URL_BYTES} bytes"
        )));
    }
    let url = Url::parse(text).map_err(|err| {
        Error::InvalidInput(format!(
            "http_request: '{text}' is not an absolute URL ({err}); give one like https://example.com/path"
        ))
    })?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(Error::ArgumentRejected(format!(
            "http_request: scheme '{}' is refused; only http and https URLs are fetched",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Error::InvalidInput(
            "http_request: credentials in the URL are refused; send them in an Authorization header".into(),
        ));
    }
    Ok(url)
}

impl PreparedRequest {
    /// The next hop of a redirect: the method and body as browsers treat them, credentials
    /// dropped when the origin changes.
    fn redirected(mut self, status: u16, location: &str) -> Result<Self> {
        let next = self.url.join(location).map_err(|err| {
            Error::ToolFailed(format!(
                "'{}' redirected to '{location}', which is not a URL ({err})",
                self.url
            ))
        })?;
        let next = parse_url(next.as_str())?;
        if next.origin() != self.url.origin() {
            for name in CREDENTIAL_HEADERS {
                self.headers.remove(*name);
            }
        }
        let keeps_method = status == 307 || status == 308;
        if !keeps_method && (status == 303 || self.method == Method::POST) {
            if self.method != Method::HEAD {
                self.method = Method::GET;
            }
            self.body = None;
            self.headers.remove(reqwest::header::CONTENT_TYPE);
        }
        self.url = next;
        Ok(self)
    }
}

#[cfg(test)]
mod tests;
