//! The `ssh` provider's admin config, declared once as typed structs
//! (serde, camelCase, and a JSON Schema): the hosts an admin names
//! ([`SshHosts`]), each with its pinned host key, the admin secret holding
//! the client key, the remote directory workspaces go under, the remote
//! sandbox and the lease; and the checks [`super::Ssh::new`] applies to
//! them ([`SshConfigError`]).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::EnvironmentPolicy;

/// The hosts environments may run on, by the name callers give as
/// `settings.host`.
pub type SshHosts = BTreeMap<String, SshHost>;

/// One host an admin lets environments use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SshHost {
    /// Its address: a DNS name or an IP address.
    pub host: String,
    /// Its SSH port.
    #[serde(default = "default_port")]
    #[schemars(range(min = 1))]
    pub port: u16,
    /// The user commands run as there.
    pub user: String,
    /// Its host key, `ssh-ed25519 AAAA...` (a trailing comment is
    /// ignored): pinned, so a server presenting any other key is refused
    /// (there is no trust on first use).
    pub host_key: String,
    /// The client key it lets in.
    pub identity: SshIdentity,
    /// The absolute remote directory under which workspaces go (one
    /// directory per environment).
    #[serde(default = "default_workdir")]
    pub workdir: String,
    /// How commands are confined there.
    #[serde(default)]
    pub sandbox: RemoteSandbox,
    /// How long a remote workspace outlives the last sign of its gateway
    /// (each command and upload renews it); past it any gateway's
    /// [`super::Ssh::sweep`] removes it.
    #[serde(default = "default_lease_seconds")]
    #[schemars(range(min = 10, max = 604_800))]
    pub lease_seconds: u64,
}

/// Where the client's private key comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SshIdentity {
    /// The admin secret (`gateway.environments.secrets`) whose value is
    /// the private key (OpenSSH format, no passphrase). It can never be
    /// bound to a run.
    pub secret: String,
}

/// How commands are confined on the remote host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RemoteSandbox {
    /// In bubblewrap, as the gateway confines its own commands (the
    /// default; an environment is refused where the host has none).
    #[default]
    Bubblewrap,
    /// Unconfined, as the remote user: only an admin's explicit choice.
    #[serde(rename = "none")]
    Off,
}

fn default_port() -> u16 {
    22
}

fn default_workdir() -> String {
    "/var/tmp/talon".to_owned()
}

fn default_lease_seconds() -> u64 {
    600
}

/// The key types a pinned host key may have.
const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

/// Why the admin's hosts cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SshConfigError {
    /// A field is out of shape.
    #[error("sshHosts.{host}.{field}: {message}")]
    Invalid {
        /// The host's name.
        host: String,
        /// The field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A host's name is not one the provider can use.
    #[error("sshHosts: {0:?} is not a host name (1 to 64 of A-Z a-z 0-9 . _ -)")]
    Name(String),
}

/// Whether `name` is a host's name: it goes into file names and the
/// pinned key's alias.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['-', '.'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl SshHost {
    /// The pinned key as `type base64` (comment dropped).
    pub(crate) fn pinned_key(&self) -> Option<(&str, &str)> {
        let mut parts = self.host_key.split_whitespace();
        let (kind, key) = (parts.next()?, parts.next()?);
        let base64 = !key.is_empty()
            && key.len() <= 16 << 10
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
        (KEY_TYPES.contains(&kind) && base64).then_some((kind, key))
    }

    /// Checks one host's fields (`name` is its key in [`SshHosts`]).
    pub(crate) fn validate(
        &self,
        name: &str,
        policy: &EnvironmentPolicy,
    ) -> Result<(), SshConfigError> {
        if !is_name(name) {
            return Err(SshConfigError::Name(name.to_owned()));
        }
        let invalid = |field, message: String| SshConfigError::Invalid {
            host: name.to_owned(),
            field,
            message,
        };
        let address = !self.host.is_empty()
            && self.host.len() <= 253
            && !self.host.starts_with('-')
            && self
                .host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':'));
        if !address {
            return Err(invalid(
                "host",
                format!("{:?} is not a host name or IP address", self.host),
            ));
        }
        if self.port == 0 {
            return Err(invalid("port", "0 is not a port".to_owned()));
        }
        let user = !self.user.is_empty()
            && self.user.len() <= 64
            && !self.user.starts_with('-')
            && self
                .user
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
        if !user {
            return Err(invalid(
                "user",
                format!("{:?} is not a user name", self.user),
            ));
        }
        if self.pinned_key().is_none() {
            return Err(invalid(
                "hostKey",
                format!(
                    "expected the host's public key as \"ssh-ed25519 AAAA...\" (one of {KEY_TYPES:?}), as ssh-keyscan or the host's /etc/ssh/ssh_host_*_key.pub shows it"
                ),
            ));
        }
        if !policy.secrets.contains_key(&self.identity.secret) {
            return Err(invalid(
                "identity.secret",
                format!(
                    "{:?} is not one of the admin's secrets (gateway.environments.secrets)",
                    self.identity.secret
                ),
            ));
        }
        let parts_ok = self
            .workdir
            .split('/')
            .skip(1)
            .all(|part| !part.is_empty() && part != "." && part != "..");
        let workdir = self.workdir.starts_with('/')
            && self.workdir.len() > 1
            && self.workdir.len() <= 1024
            && parts_ok
            && !self.workdir.chars().any(char::is_control);
        if !workdir {
            return Err(invalid(
                "workdir",
                format!(
                    "{:?} is not an absolute directory (no trailing slash, no . or .., not /)",
                    self.workdir
                ),
            ));
        }
        if !(10..=604_800).contains(&self.lease_seconds) {
            return Err(invalid(
                "leaseSeconds",
                format!("{} is not within 10 to 604800", self.lease_seconds),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SecretSource;

    fn host() -> SshHost {
        serde_json::from_value(serde_json::json!({
            "host": "build.example.com",
            "user": "talon",
            "hostKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB5 build",
            "identity": {"secret": "BUILD_KEY"}
        }))
        .unwrap()
    }

    #[test]
    fn defaults_and_checks() {
        let policy = EnvironmentPolicy {
            secrets: [("BUILD_KEY".to_owned(), SecretSource::Env("K".into()))].into(),
            ..EnvironmentPolicy::default()
        };
        let host = host();
        assert_eq!(
            (
                host.port,
                host.workdir.as_str(),
                host.sandbox,
                host.lease_seconds
            ),
            (22, "/var/tmp/talon", RemoteSandbox::Bubblewrap, 600)
        );
        host.validate("build", &policy).unwrap();
        assert_eq!(
            host.pinned_key(),
            Some(("ssh-ed25519", "AAAAC3NzaC1lZDI1NTE5AAAAIB5"))
        );
        for (name, change, field) in [
            (
                "build",
                &(|h: &mut SshHost| h.host = "-oProxyCommand=x".into()) as &dyn Fn(&mut SshHost),
                "host",
            ),
            ("build", &|h: &mut SshHost| h.user = "a b".into(), "user"),
            (
                "build",
                &|h: &mut SshHost| h.host_key = "AAAA".into(),
                "hostKey",
            ),
            (
                "build",
                &|h: &mut SshHost| h.identity.secret = "NOPE".into(),
                "identity.secret",
            ),
            (
                "build",
                &|h: &mut SshHost| h.workdir = "/var/../etc".into(),
                "workdir",
            ),
            (
                "build",
                &|h: &mut SshHost| h.workdir = "relative".into(),
                "workdir",
            ),
            (
                "build",
                &|h: &mut SshHost| h.workdir = "/".into(),
                "workdir",
            ),
            (
                "build",
                &|h: &mut SshHost| h.lease_seconds = 1,
                "leaseSeconds",
            ),
        ] {
            let mut changed = host.clone();
            change(&mut changed);
            match changed.validate(name, &policy) {
                Err(SshConfigError::Invalid { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
        assert!(matches!(
            host.validate("../x", &policy),
            Err(SshConfigError::Name(_))
        ));
        let sandbox: RemoteSandbox = serde_json::from_str("\"none\"").unwrap();
        assert_eq!(sandbox, RemoteSandbox::Off);
        let schema = serde_json::to_value(schemars::schema_for!(SshHosts)).unwrap();
        let text = schema.to_string();
        for key in ["hostKey", "leaseSeconds", "bubblewrap", "none", "identity"] {
            assert!(text.contains(key), "{key} in {text}");
        }
    }
}
