//! The scope matrix: every method with a token holding each single scope
//! is refused with `forbidden` (naming the scope) exactly when the method
//! table says the scope does not cover it.

use serde_json::json;
use talon_gateway::tokens;
use talon_protocol::gateway::{Method, Scope};

use super::TestGateway;

#[tokio::test]
async fn every_method_with_every_single_scope() {
    let g = TestGateway::start().await;
    let now = talon_store::now_ms();
    let mut checked = 0;
    for scope in Scope::ALL {
        let token = tokens::create(&g.running.store, None, vec![scope], None, now)
            .await
            .unwrap();
        for &method in Method::ALL {
            let spec = method.spec();
            let (status, body) = g.call(&token.secret, spec.name, json!({})).await;
            let allowed = spec.scope.satisfied_by(&[scope]);
            if allowed {
                assert!(
                    status != 403 && status != 401,
                    "{} with {scope}: {status} {body}",
                    spec.name
                );
            } else {
                assert_eq!(status, 403, "{} with {scope}: {body}", spec.name);
                assert_eq!(body["error"]["code"], "forbidden");
                assert!(
                    body["error"]["message"]
                        .as_str()
                        .unwrap()
                        .contains(spec.scope.as_str()),
                    "{body}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, Scope::ALL.len() * Method::ALL.len());
}
