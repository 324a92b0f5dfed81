//! The transports: how calls and events reach a client over one port.
//!
//! - [`http`]: `POST /v1/<method>`, `GET /healthz`, `GET /v1/openapi.json`.
//! - [`stream`], over [`crate::tail`] and [`crate::frame`]: SSE
//!   (`GET /v1/runs/{runId}/events`, `GET /v1/events`), and `Follow`, the
//!   one live reader of both transports and of the OpenAI surface.
//! - [`ws`]: `GET /v1/ws`, the same calls as frames and event
//!   subscriptions.
//! - [`content`]: an artifact's bytes (`ETag`, one `Range`).
//! - [`docs`]: `GET /` (the dashboard's page for a browser, the index as
//!   JSON for a program) and `GET /docs` for a person.
//! - [`dashboard`]: the dashboard's page on its views' paths and its
//!   embedded assets; [`login`]: its sign-in routes.
//! - [`body`]: a request body within its size, deadline and rate.
//! - [`serve`]: the accept loop (hyper HTTP/1.1 with upgrades) and its
//!   socket options.
//!
//! Each handler takes the state ([`crate::state`]), its caller from
//! [`crate::auth`] and calls through [`crate::call`]; [`crate::router`]
//! puts them on their routes.

pub(crate) mod body;
pub(crate) mod content;
pub(crate) mod dashboard;
pub(crate) mod docs;
pub(crate) mod http;
pub(crate) mod login;
pub(crate) mod serve;
pub(crate) mod stream;
pub(crate) mod ws;
