//! `web_search`: Tavily or Perplexity, chosen like Forge does — `WEB_SEARCH_PROVIDER`, else the
//! first provider whose key is set (Tavily first). The provider's URL comes from configuration
//! (`builtins.web_search.base_url`, for a proxy or a test server), never from the model; it is
//! trusted like any configured endpoint and redirects are not followed.

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{json, Value};
use url::Url;

use super::http::HttpClient;
use super::input;
use crate::error::{Error, Result};
use crate::limits::{DEFAULT_SEARCH_RESULTS, MAX_SEARCH_QUERY_CHARS, MAX_SEARCH_RESULTS_PER_CALL};

/// The search providers.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Tavily,
    Perplexity,
}

impl Provider {
    fn key_variable(self) -> &'static str {
        match self {
            Provider::Tavily => "TAVILY_API_KEY",
            Provider::Perplexity => "PERPLEXITY_API_KEY",
        }
    }

    fn default_base(self) -> &'static str {
        match self {
            Provider::Tavily => "https://api.tavily.com",
            Provider::Perplexity => "https://api.perplexity.ai",
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Provider::Tavily => "tavily",
            Provider::Perplexity => "perplexity",
        }
    }
}

/// Where `web_search` sends queries; read from the configuration and the environment.
#[derive(Debug, Clone)]
pub struct SearchEndpoint {
    pub provider: Provider,
    pub key: String,
    pub url: Url,
}

/// Picks the provider and its key: `configured` (the worker's `web_search.provider`), else
/// `WEB_SEARCH_PROVIDER`, else the first key that is set. A missing key is `CONFIG_INVALID`
/// naming the variable to set.
pub fn endpoint(
    configured: Option<Provider>,
    base_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<SearchEndpoint> {
    let set = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let provider = match configured {
        Some(provider) => provider,
        None => match set("WEB_SEARCH_PROVIDER").map(|p| p.trim().to_ascii_lowercase()) {
            Some(name) if name == "tavily" => Provider::Tavily,
            Some(name) if name == "perplexity" => Provider::Perplexity,
            Some(other) => {
                return Err(Error::ConfigInvalid(format!(
                    "web_search: WEB_SEARCH_PROVIDER is '{other}'; set it to 'tavily' or 'perplexity'"
                )))
            }
            None if set("TAVILY_API_KEY").is_some() => Provider::Tavily,
            None if set("PERPLEXITY_API_KEY").is_some() => Provider::Perplexity,
            None => {
                return Err(Error::ConfigInvalid(
                    "web_search: no search provider key is set; set TAVILY_API_KEY (Tavily) or PERPLEXITY_API_KEY (Perplexity)".into(),
                ))
            }
        },
    };
    let key = set(provider.key_variable()).ok_or_else(|| {
        Error::ConfigInvalid(format!(
            "web_search: the {} provider needs an API key; set {}",
            provider.as_str(),
            provider.key_variable()
        ))
    })?;
    let base = base_url
        .unwrap_or(provider.default_base())
        .trim_end_matches('/');
    let path = match provider {
        Provider::Tavily => "search",
        Provider::Perplexity => "chat/completions",
    };
    let url = Url::parse(&format!("{base}/{path}")).map_err(|err| {
        Error::ConfigInvalid(format!(
            "builtins.web_search.base_url '{base}' is not a URL: {err}"
        ))
    })?;
    Ok(SearchEndpoint { provider, key, url })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchInput {
    query: String,
    #[serde(default)]
    max_results: Option<u32>,
}

/// `web_search`: the provider's answer and results as `{ provider, query, answer?, results }`,
/// each result `{ title, url, content? }`.
pub async fn web_search(
    client: &HttpClient,
    endpoint: &SearchEndpoint,
    value: Value,
) -> Result<Value> {
    let request: SearchInput = input::parse("web_search", value)?;
    let query = request.query.trim();
    if query.is_empty() || query.chars().count() > MAX_SEARCH_QUERY_CHARS {
        return Err(Error::InvalidInput(format!(
            "web_search: the query must have 1 to {MAX_SEARCH_QUERY_CHARS} characters"
        )));
    }
    let max_results = request.max_results.unwrap_or(DEFAULT_SEARCH_RESULTS);
    if max_results == 0 || max_results > MAX_SEARCH_RESULTS_PER_CALL {
        return Err(Error::InvalidInput(format!(
            "web_search: max_results must be between 1 and {MAX_SEARCH_RESULTS_PER_CALL}"
        )));
    }
    let body = match endpoint.provider {
        Provider::Tavily => {
            json!({ "query": query, "max_results": max_results, "include_answer": true })
        }
        Provider::Perplexity => json!({
            "model": "sonar",
            "messages": [{ "role": "user", "content": query }],
        }),
    };
    let mut headers = HeaderMap::new();
    let bearer =
        HeaderValue::from_str(&format!("Bearer {}", endpoint.key.trim())).map_err(|_| {
            Error::ConfigInvalid(format!(
                "web_search: {} contains characters an HTTP header cannot carry",
                endpoint.provider.key_variable()
            ))
        })?;
    headers.insert(reqwest::header::AUTHORIZATION, bearer);
    let (status, text) = client.post_json(&endpoint.url, headers, &body).await?;
    if !(200..300).contains(&status) {
        let snippet: String = text.chars().take(500).collect();
        return Err(Error::ToolFailed(format!(
            "web_search: {} answered HTTP {status}: {snippet}",
            endpoint.provider.as_str()
        )));
    }
    let answer: Value = serde_json::from_str(&text).map_err(|err| {
        Error::ToolFailed(format!(
            "web_search: {} answered with something that is not JSON ({err})",
            endpoint.provider.as_str()
        ))
    })?;
    let (summary, results) = match endpoint.provider {
        Provider::Tavily => tavily_results(&answer),
        Provider::Perplexity => perplexity_results(&answer),
    };
    let results: Vec<Value> = results.into_iter().take(max_results as usize).collect();
    Ok(json!({
        "provider": endpoint.provider.as_str(),
        "query": query,
        "answer": summary,
        "results": results,
    }))
}

fn text_of(value: &Value, key: &str) -> Value {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(Value::from)
        .unwrap_or(Value::Null)
}

fn tavily_results(answer: &Value) -> (Value, Vec<Value>) {
    let results = answer
        .get("results")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    json!({
                        "title": text_of(item, "title"),
                        "url": text_of(item, "url"),
                        "content": text_of(item, "content"),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    (text_of(answer, "answer"), results)
}

fn perplexity_results(answer: &Value) -> (Value, Vec<Value>) {
    let content = answer
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .map(Value::from)
        .unwrap_or(Value::Null);
    let from_search = answer
        .get("search_results")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| json!({ "title": text_of(item, "title"), "url": text_of(item, "url") }))
                .collect::<Vec<_>>()
        });
    let from_citations = || {
        answer
            .get("citations")
            .and_then(Value::as_array)
            .map(|urls| {
                urls.iter()
                    .filter_map(Value::as_str)
                    .map(|url| json!({ "title": Value::Null, "url": url }))
                    .collect()
            })
            .unwrap_or_default()
    };
    (content, from_search.unwrap_or_else(from_citations))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        }
    }

    #[test]
    fn picks_the_provider_like_forge() {
        let both = env_of(&[("TAVILY_API_KEY", "t"), ("PERPLEXITY_API_KEY", "p")]);
        assert_eq!(
            endpoint(None, None, &both).unwrap().provider,
            Provider::Tavily
        );
        let chosen = env_of(&[
            ("WEB_SEARCH_PROVIDER", "Perplexity"),
            ("PERPLEXITY_API_KEY", "p"),
        ]);
        let picked = endpoint(None, None, &chosen).unwrap();
        assert_eq!(picked.provider, Provider::Perplexity);
        assert_eq!(
            picked.url.as_str(),
            "https://api.perplexity.ai/chat/completions"
        );
        let only = env_of(&[("PERPLEXITY_API_KEY", "p")]);
        assert_eq!(
            endpoint(None, None, &only).unwrap().provider,
            Provider::Perplexity
        );
        let local = endpoint(None, Some("http://127.0.0.1:9/v1/"), &both).unwrap();
        assert_eq!(local.url.as_str(), "http://127.0.0.1:9/v1/search");
    }

    #[test]
    fn a_missing_key_names_the_variable() {
        let none = env_of(&[]);
        let err = endpoint(None, None, &none).unwrap_err();
        assert!(err.to_string().contains("TAVILY_API_KEY"), "{err}");
        let chosen = env_of(&[
            ("WEB_SEARCH_PROVIDER", "perplexity"),
            ("TAVILY_API_KEY", "t"),
        ]);
        let err = endpoint(None, None, &chosen).unwrap_err();
        assert!(err.to_string().contains("set PERPLEXITY_API_KEY"), "{err}");
        let err = endpoint(
            Some(Provider::Tavily),
            None,
            &env_of(&[("TAVILY_API_KEY", " ")]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("set TAVILY_API_KEY"), "{err}");
        let bad = env_of(&[("WEB_SEARCH_PROVIDER", "bing")]);
        assert!(endpoint(None, None, &bad)
            .unwrap_err()
            .to_string()
            .contains("'bing'"));
    }
}
