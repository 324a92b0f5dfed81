//! The HTTP transport: `POST /v1/<method>` with the params as the JSON
//! body, the protocol's `{"error": ...}` shape decoded into
//! [`Error::Api`] (with `Retry-After` folded into `retryAfterMs` when the
//! body lacks it), Server-Sent Events streams and artifact downloads.

use futures::StreamExt as _;
use reqwest::header::{self, HeaderMap, HeaderValue};
use talon_protocol::gateway::{ApiError, ErrorCode};
use tokio::io::AsyncWriteExt as _;

use super::ClientConfig;
use super::sse::{EventStream, StreamQuery};
use crate::error::{Error, Result};

/// A gateway address as people write it: `127.0.0.1:7420` and
/// `localhost:7420` mean `http://...`; a URL with a scheme is kept.
pub(crate) fn with_scheme(text: &str) -> String {
    if text.contains("://") {
        text.to_owned()
    } else {
        format!("http://{text}")
    }
}

/// Requests over HTTP.
#[derive(Debug)]
pub(super) struct HttpTransport {
    base: url::Url,
    client: reqwest::Client,
}

impl HttpTransport {
    pub(super) fn new(config: &ClientConfig) -> Result<Self> {
        let mut text = with_scheme(config.url.trim());
        if !text.ends_with('/') {
            text.push('/');
        }
        let base = url::Url::parse(&text)
            .map_err(|e| Error::invalid_because(format!("gateway URL {:?}", config.url), e))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(Error::invalid(format!(
                "gateway URL {:?}: the scheme must be http or https",
                config.url
            )));
        }
        let mut headers = HeaderMap::new();
        let mut bearer = HeaderValue::from_str(&format!("Bearer {}", config.token))
            .map_err(|_| Error::invalid("the token is not a valid header value"))?;
        bearer.set_sensitive(true);
        headers.insert(header::AUTHORIZATION, bearer);
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| Error::invalid_because("the HTTP client", e))?;
        Ok(Self { base, client })
    }

    pub(super) fn base(&self) -> &url::Url {
        &self.base
    }

    /// `path` under the base URL. A path that would leave the gateway's
    /// origin (an absolute URL from a hostile answer) is refused, so the
    /// token never goes elsewhere.
    fn url(&self, path: &str) -> Result<url::Url> {
        let url = self
            .base
            .join(path)
            .map_err(|e| Error::invalid_because(path, e))?;
        if url.origin() != self.base.origin() {
            return Err(Error::invalid(format!(
                "{path:?} is not on the gateway's origin"
            )));
        }
        Ok(url)
    }

    pub(super) async fn health(&self) -> Result<()> {
        let response = self
            .client
            .get(self.url("healthz")?)
            .send()
            .await
            .map_err(|e| Error::http(&self.base, e))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(error_of(response).await)
        }
    }

    pub(super) async fn call(
        &self,
        method: &str,
        params: &serde_json::Value,
    ) -> Result<serde_json::Value> {
        let url = self.url(&format!("v1/{method}"))?;
        let response = self
            .client
            .post(url)
            .json(params)
            .send()
            .await
            .map_err(|e| Error::http(&self.base, e))?;
        if !response.status().is_success() {
            return Err(error_of(response).await);
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| Error::http(&self.base, e))?;
        serde_json::from_slice(&body)
            .map_err(|e| Error::decode(format!("the answer to {method}"), e))
    }

    pub(super) async fn stream(
        &self,
        path: &str,
        query: &StreamQuery,
        after: Option<u64>,
        ends_with_run: bool,
    ) -> Result<EventStream> {
        let mut url = self.url(path)?;
        {
            let mut pairs = url.query_pairs_mut();
            if let Some(after) = after {
                pairs.append_pair("after", &after.to_string());
            }
            if let Some(key) = &query.session_key {
                pairs.append_pair("sessionKey", key);
            }
            if let Some(agent) = &query.agent_id {
                pairs.append_pair("agentId", agent);
            }
            if !query.types.is_empty() {
                let types: Vec<&str> = query.types.iter().map(|t| t.as_str()).collect();
                pairs.append_pair("types", &types.join(","));
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        let response = self
            .client
            .get(url)
            .header(header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| Error::http(&self.base, e))?;
        if !response.status().is_success() {
            return Err(error_of(response).await);
        }
        let base = self.base.clone();
        let bytes = response
            .bytes_stream()
            .map(move |chunk| chunk.map_err(|e| Error::http(&base, e)))
            .boxed();
        Ok(EventStream::new(bytes, ends_with_run))
    }

    pub(super) async fn download<W>(&self, path: &str, writer: &mut W) -> Result<u64>
    where
        W: tokio::io::AsyncWrite + Unpin + ?Sized,
    {
        let response = self
            .client
            .get(self.url(path)?)
            .send()
            .await
            .map_err(|e| Error::http(&self.base, e))?;
        if !response.status().is_success() {
            return Err(error_of(response).await);
        }
        let expected = response.content_length();
        let mut body = response.bytes_stream();
        let mut written = 0u64;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| Error::http(&self.base, e))?;
            writer
                .write_all(&chunk)
                .await
                .map_err(|e| Error::invalid_because("writing the artifact", e))?;
            written += chunk.len() as u64;
        }
        writer
            .flush()
            .await
            .map_err(|e| Error::invalid_because("writing the artifact", e))?;
        if let Some(expected) = expected
            && expected != written
        {
            return Err(Error::transport(format!(
                "the download was cut off: {written} of {expected} bytes"
            )));
        }
        Ok(written)
    }
}

/// The error a non-success response carries: the protocol's shape when
/// the body holds it, else one made from the status.
async fn error_of(response: reqwest::Response) -> Error {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| s.saturating_mul(1000));
    let body = response.bytes().await.unwrap_or_default();
    Error::Api(api_error(status, retry_after, &body))
}

/// Decodes `{"error": ApiError}`; a body without it (a proxy's page, a
/// cut-off answer) gives the code the status stands for.
pub(super) fn api_error(status: u16, retry_after_ms: Option<u64>, body: &[u8]) -> ApiError {
    #[derive(serde::Deserialize)]
    struct Envelope {
        error: ApiError,
    }
    let mut error = match serde_json::from_slice::<Envelope>(body) {
        Ok(envelope) => envelope.error,
        Err(_) => {
            let code = code_of_status(status);
            let text = String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned();
            ApiError::new(code, format!("HTTP {status}: {}", text.trim()))
        }
    };
    if error.retry_after_ms.is_none() {
        error.retry_after_ms = retry_after_ms;
    }
    error
}

fn code_of_status(status: u16) -> ErrorCode {
    ErrorCode::ALL
        .into_iter()
        .find(|code| code.http_status() == status)
        .unwrap_or(if status >= 500 {
            ErrorCode::Unavailable
        } else {
            ErrorCode::InvalidRequest
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_shape_decodes_and_foreign_bodies_map_by_status() {
        let body = br#"{"error":{"code":"rate_limited","message":"slow","retryable":true}}"#;
        let error = api_error(429, Some(2000), body);
        assert_eq!(
            error,
            ApiError::new(ErrorCode::RateLimited, "slow").with_retry_after_ms(2000)
        );
        let proxy = api_error(502, None, b"<html>Bad Gateway</html>");
        assert_eq!(
            (proxy.code, proxy.retryable, proxy.message.as_str()),
            (
                ErrorCode::Unavailable,
                true,
                "HTTP 502: <html>Bad Gateway</html>"
            )
        );
        assert_eq!(api_error(404, None, b"").code, ErrorCode::NotFound);
    }
}
