//! Whose records a read returns: the subject and agents a bound token is
//! bound to ([`Owner`]), as one SQL condition every listing shares, so a
//! bound token's lists hold only its own.

use crate::Backend;
use crate::error::{Result, corrupt};

/// Whose records a read may return. Absent parts restrict nothing: the
/// default is every record (an unbound, unrestricted caller's view).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owner {
    /// Only this subject's records.
    pub subject: Option<String>,
    /// Only these agents' records.
    pub agents: Option<Vec<String>>,
}

impl Owner {
    /// The condition on `subject` and `agent` (SQL expressions of the
    /// row's subject and agent id) with the subject bound at `$s` and the
    /// agents, a JSON array, at `$s + 1` ([`Self::binds`]).
    pub(crate) fn condition(backend: Backend, s: u8, subject: &str, agent: &str) -> String {
        format!(
            "(${s} IS NULL OR {subject} = ${s}) AND {}",
            Self::agents_in(backend, s + 1, agent)
        )
    }

    /// The agents' half of [`Self::condition`], the agents bound at `$a`.
    pub(crate) fn agents_in(backend: Backend, a: u8, agent: &str) -> String {
        let within = match backend {
            Backend::Sqlite => format!("{agent} IN (SELECT value FROM json_each(${a}))"),
            Backend::Postgres => {
                format!("{agent} IN (SELECT json_array_elements_text(${a}::json))")
            }
        };
        format!("(${a} IS NULL OR {within})")
    }

    /// The two values [`Self::condition`] binds: the subject, then the
    /// agents as a JSON array.
    pub(crate) fn binds(&self) -> Result<(Option<String>, Option<String>)> {
        let agents = self
            .agents
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(corrupt)?;
        Ok((self.subject.clone(), agents))
    }
}
