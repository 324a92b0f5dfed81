mod http;
mod limits;
mod scopes;
mod stream;
mod ws;

use serde_json::Value;
use talon_gateway::{GatewayConfig, Running};

/// A gateway on a free loopback port over a fresh state directory.
pub struct TestGateway {
    pub running: Running,
    pub admin: String,
    pub client: reqwest::Client,
    pub dir: tempfile::TempDir,
}

impl TestGateway {
    pub async fn start() -> Self {
        Self::start_with(talon_gateway::Limits::default()).await
    }

    pub async fn start_with(limits: talon_gateway::Limits) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = GatewayConfig {
            limits,
            ..GatewayConfig::local(dir.path(), 0)
        };
        let running = talon_gateway::start(config).await.unwrap();
        let admin = running
            .admin_token
            .clone()
            .expect("a first start mints an admin token");
        Self {
            running,
            admin,
            client: reqwest::Client::new(),
            dir,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.running.addr)
    }

    /// `POST /v1/<method>` with `token`: the status and the JSON body.
    pub async fn call(&self, token: &str, method: &str, params: Value) -> (u16, Value) {
        let response = self
            .client
            .post(self.url(&format!("/v1/{method}")))
            .bearer_auth(token)
            .json(&params)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }
}
