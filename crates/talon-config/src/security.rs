//! What an admin lets callers and browsers reach: `gateway.security`
//! (the hosts the gateway answers to, the browser origins it serves, the
//! stream tickets' lifetime) and `gateway.environments` (where
//! workspaces come from, the secrets runs may be given). Everything is
//! absent by default: loopback only, no browser origin, no workspace
//! source, no secret.
//!
//! ```json5
//! gateway: {
//!   security: {
//!     allowedHosts: ["talon.example.com", "*.internal.example"],
//!     allowedOrigins: ["https://app.example.com"],
//!     streamTicketTtlMs: 60000,
//!   },
//!   environments: {
//!     sourceRoots: ["/srv/projects"],
//!     repositories: { app: "/srv/git/app.git" },
//!     secrets: { DEPLOY_TOKEN: { env: "TALON_DEPLOY_TOKEN" },
//!                NPM_TOKEN: { file: "/run/secrets/npm" } },
//!   },
//! }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::gateway::invalid;
use crate::{Config, Result};

/// `gateway.security`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecuritySettings {
    /// `allowedHosts`: names beyond loopback the gateway answers to.
    pub allowed_hosts: Vec<String>,
    /// `allowedOrigins`: browser origins allowed to call it.
    pub allowed_origins: Vec<String>,
    /// `streamTicketTtlMs`: how long a stream ticket may wait to be used.
    pub stream_ticket_ttl: Option<Duration>,
}

/// `gateway.environments`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvironmentSettings {
    /// `sourceRoots`: directories whose trees may become workspaces.
    pub source_roots: Vec<PathBuf>,
    /// `repositories`: local git repositories by name.
    pub repositories: BTreeMap<String, PathBuf>,
    /// `secrets`: what a run may be given, by name.
    pub secrets: BTreeMap<String, SecretRef>,
    /// `forges`: where environments' changes become pull requests, by name.
    pub forges: BTreeMap<String, ForgeSettings>,
}

/// `gateway.environments.forges.<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgeSettings {
    /// `api`: the REST API's base URL.
    pub api: String,
    /// `remote`: the git URL pushes go to.
    pub remote: String,
    /// `repository`: `owner/repo`.
    pub repository: String,
    /// `token`: the name of the secret holding its token.
    pub token: String,
}

/// Where a secret's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretRef {
    /// `{env: "VAR"}`: a variable of the gateway's environment.
    Env(String),
    /// `{file: "/abs/path"}`: a file's content.
    File(PathBuf),
}

/// Whether `file` is `tree` or under it: as written, and as resolved
/// when both exist (a link cannot hide it).
fn inside(file: &std::path::Path, tree: &std::path::Path) -> bool {
    let lexical = |p: &std::path::Path| {
        p.components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect::<PathBuf>()
    };
    if lexical(file).starts_with(lexical(tree)) {
        return true;
    }
    match (std::fs::canonicalize(file), std::fs::canonicalize(tree)) {
        (Ok(file), Ok(tree)) => file.starts_with(tree),
        _ => false,
    }
}

impl Config {
    /// The `gateway.security` section.
    pub fn security(&self) -> Result<SecuritySettings> {
        let security = &self.document()?.gateway.security;
        let hosts = texts(&security.allowed_hosts);
        for host in &hosts {
            let name = host.strip_prefix("*.").unwrap_or(host);
            let valid = !name.is_empty()
                && name.len() <= 253
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':' | b'_'));
            if !valid {
                return Err(invalid(
                    "gateway.security.allowedHosts",
                    &format!(
                        "{host:?} is not a host name (no scheme, port or path; `*.example.com` for subdomains)"
                    ),
                ));
            }
        }
        let origins = texts(&security.allowed_origins);
        for origin in &origins {
            let valid = origin
                .split_once("://")
                .filter(|(scheme, _)| matches!(*scheme, "http" | "https"))
                .is_some_and(|(_, authority)| {
                    !authority.is_empty() && !authority.contains(['/', '?', '#', '*', ' '])
                });
            if !valid {
                return Err(invalid(
                    "gateway.security.allowedOrigins",
                    &format!(
                        "{origin:?} is not an origin: scheme://host[:port], no path and no wildcard"
                    ),
                ));
            }
        }
        Ok(SecuritySettings {
            allowed_hosts: hosts,
            allowed_origins: origins,
            stream_ticket_ttl: security.stream_ticket_ttl_ms.map(Duration::from_millis),
        })
    }

    /// The `gateway.environments` section.
    pub fn environments(&self) -> Result<EnvironmentSettings> {
        let absolute = |key: &str, text: &str| {
            let path = PathBuf::from(text);
            if path.is_absolute() {
                Ok(path)
            } else {
                Err(invalid(key, &format!("{text:?} is not an absolute path")))
            }
        };
        let environments = &self.document()?.gateway.environments;
        let mut settings = EnvironmentSettings::default();
        for root in texts(&environments.source_roots) {
            settings
                .source_roots
                .push(absolute("gateway.environments.sourceRoots", &root)?);
        }
        let key = "gateway.environments.repositories";
        for (name, path) in &environments.repositories {
            let valid = (1..=64).contains(&name.len())
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
            let path = path.0.as_str();
            if !valid {
                return Err(invalid(
                    key,
                    &format!("{name:?}: a name is 1 to 64 letters, digits, `-`, `.` or `_`"),
                ));
            }
            settings
                .repositories
                .insert(name.clone(), absolute(&format!("{key}.{name}"), path)?);
        }
        let key = "gateway.environments.secrets";
        for (name, source) in &environments.secrets {
            let variable = |s: &str| {
                !s.is_empty()
                    && s.len() <= 128
                    && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    && !s.as_bytes()[0].is_ascii_digit()
            };
            let at = format!("{key}.{name}");
            if !variable(name) {
                return Err(invalid(
                    key,
                    &format!("{name:?}: a secret's name is a shell variable name"),
                ));
            }
            let source = match (source.env.as_deref(), source.file.as_deref()) {
                (Some(var), None) if variable(var) => SecretRef::Env(var.to_owned()),
                (None, Some(file)) => SecretRef::File(absolute(&at, file)?),
                _ => {
                    return Err(invalid(
                        &at,
                        "expected {env: \"VARIABLE\"} or {file: \"/absolute/path\"}",
                    ));
                }
            };
            settings.secrets.insert(name.clone(), source);
        }
        // A secret file inside a tree a workspace is copied from would be
        // copied into the workspace, unredacted.
        for (name, source) in &settings.secrets {
            let SecretRef::File(file) = source else {
                continue;
            };
            let trees = settings
                .source_roots
                .iter()
                .chain(settings.repositories.values());
            for tree in trees {
                if inside(file, tree) {
                    return Err(invalid(
                        &format!("{key}.{name}"),
                        &format!(
                            "{} is inside {}, which workspaces are copied from: move the secret out of it",
                            file.display(),
                            tree.display()
                        ),
                    ));
                }
            }
        }
        let key = "gateway.environments.forges";
        for (name, forge) in &environments.forges {
            let at = format!("{key}.{name}");
            let text = |field: &str| {
                match field {
                    "api" => forge.api.clone(),
                    "remote" => forge.remote.clone(),
                    "repository" => forge.repository.clone(),
                    _ => forge.token.clone(),
                }
                .ok_or_else(|| invalid(&format!("{at}.{field}"), "expected a string"))
            };
            let http = |field: &str| {
                let url = text(field)?;
                if url.starts_with("https://") || url.starts_with("http://") {
                    Ok(url)
                } else {
                    Err(invalid(&format!("{at}.{field}"), "expected an http(s) URL"))
                }
            };
            let repository = text("repository")?;
            let plain = |part: &str| {
                !part.is_empty()
                    && part.len() <= 100
                    && !part.starts_with('.')
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
            };
            if !matches!(repository.split_once('/'), Some((owner, repo)) if plain(owner) && plain(repo))
            {
                return Err(invalid(&format!("{at}.repository"), "expected owner/repo"));
            }
            let token = text("token")?;
            if !settings.secrets.contains_key(&token) {
                return Err(invalid(
                    &format!("{at}.token"),
                    &format!("{token:?} is not a secret of gateway.environments.secrets"),
                ));
            }
            settings.forges.insert(
                name.clone(),
                ForgeSettings {
                    api: http("api")?,
                    remote: http("remote")?,
                    repository,
                    token,
                },
            );
        }
        Ok(settings)
    }
}

/// The strings of a list.
fn texts(items: &[crate::model::NonEmpty]) -> Vec<String> {
    items.iter().map(|item| item.0.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ConfigError;

    fn parse(text: &str) -> Result<(SecuritySettings, EnvironmentSettings)> {
        let config = Config::parse(text, None)?;
        Ok((config.security()?, config.environments()?))
    }

    #[test]
    fn everything_is_read_and_absent_means_nothing_allowed() {
        let (security, environments) = parse(
            "{gateway: {security: {allowedHosts: ['talon.example.com', '*.corp'],
                                   allowedOrigins: ['https://app.example.com'],
                                   streamTicketTtlMs: 5000},
                        environments: {sourceRoots: ['/srv/projects'],
                                       repositories: {app: '/srv/git/app.git'},
                                       secrets: {DEPLOY: {env: 'HOST_DEPLOY'}, NPM: {file: '/run/npm'}},
                                       forges: {github: {api: 'https://api.github.com', remote: 'https://github.com/acme/app.git',
                                                         repository: 'acme/app', token: 'DEPLOY'}}}}}",
        )
        .unwrap();
        assert_eq!(
            security,
            SecuritySettings {
                allowed_hosts: vec!["talon.example.com".into(), "*.corp".into()],
                allowed_origins: vec!["https://app.example.com".into()],
                stream_ticket_ttl: Some(Duration::from_secs(5)),
            }
        );
        assert_eq!(
            environments,
            EnvironmentSettings {
                source_roots: vec![PathBuf::from("/srv/projects")],
                repositories: [("app".to_owned(), PathBuf::from("/srv/git/app.git"))].into(),
                secrets: [
                    ("DEPLOY".to_owned(), SecretRef::Env("HOST_DEPLOY".into())),
                    ("NPM".to_owned(), SecretRef::File(PathBuf::from("/run/npm"))),
                ]
                .into(),
                forges: [(
                    "github".to_owned(),
                    ForgeSettings {
                        api: "https://api.github.com".into(),
                        remote: "https://github.com/acme/app.git".into(),
                        repository: "acme/app".into(),
                        token: "DEPLOY".into(),
                    },
                )]
                .into(),
            }
        );
        // A forge's token must be an admin's secret; its URLs http(s).
        for (forge, why) in [
            (
                "{api: 'https://h', remote: 'https://h/r.git', repository: 'a/b', token: 'NOPE'}",
                "gateway.environments.forges.f.token: \"NOPE\" is not a secret of gateway.environments.secrets",
            ),
            (
                "{api: 'file:///etc', remote: 'https://h/r.git', repository: 'a/b', token: 'S'}",
                "gateway.environments.forges.f.api: expected an http(s) URL",
            ),
            (
                "{api: 'https://h', remote: 'https://h/r.git', repository: '../b', token: 'S'}",
                "gateway.environments.forges.f.repository: expected owner/repo",
            ),
        ] {
            let text = format!(
                "{{gateway: {{environments: {{secrets: {{S: {{env: 'V'}}}}, forges: {{f: {forge}}}}}}}}}"
            );
            let error = parse(&text).unwrap_err().to_string();
            assert!(error.contains(why), "{error}");
        }
        assert_eq!(
            parse("{}").unwrap(),
            (SecuritySettings::default(), EnvironmentSettings::default())
        );
    }

    #[test]
    fn a_secret_file_inside_a_tree_workspaces_come_from_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("projects");
        std::fs::create_dir_all(root.join("app")).unwrap();
        std::fs::write(root.join("app/.env"), "TOKEN=x").unwrap();
        // Reached through a link outside the root: resolved, refused too.
        let link = dir.path().join("secrets");
        std::os::unix::fs::symlink(root.join("app"), &link).unwrap();
        let outside = dir.path().join("elsewhere");
        std::fs::write(&outside, "x").unwrap();
        for (file, refused) in [
            (root.join("app/.env"), true),
            (root.join("./app/../app/.env"), true),
            (link.join(".env"), true),
            (outside.clone(), false),
        ] {
            let text = format!(
                "{{gateway: {{environments: {{sourceRoots: [{root:?}], repositories: {{r: {repo:?}}}, secrets: {{S: {{file: {file:?}}}}}}}}}}}",
                root = root.display().to_string(),
                repo = dir.path().join("repo.git").display().to_string(),
                file = file.display().to_string(),
            );
            let outcome = parse(&text).map(|_| ()).map_err(|e| e.to_string());
            match refused {
                true => {
                    let error = outcome.unwrap_err();
                    assert!(
                        error.contains("gateway.environments.secrets.S")
                            && error.contains("move the secret out of it"),
                        "{file:?}: {error}"
                    );
                }
                false => assert_eq!(outcome, Ok(()), "{file:?}"),
            }
        }
        // Inside a repository too.
        let text = format!(
            "{{gateway: {{environments: {{repositories: {{r: {repo:?}}}, secrets: {{S: {{file: {file:?}}}}}}}}}}}",
            repo = "/srv/git/app.git",
            file = "/srv/git/app.git/config",
        );
        assert!(parse(&text).is_err());
    }

    #[test]
    fn bad_values_name_their_key() {
        for (text, key) in [
            (
                "{gateway: {security: {allowedHosts: ['https://x']}}}",
                "gateway.security.allowedHosts",
            ),
            (
                "{gateway: {security: {allowedOrigins: ['*']}}}",
                "gateway.security.allowedOrigins",
            ),
            (
                "{gateway: {security: {allowedOrigins: ['https://a/b']}}}",
                "gateway.security.allowedOrigins",
            ),
            (
                "{gateway: {environments: {sourceRoots: ['relative']}}}",
                "gateway.environments.sourceRoots",
            ),
            (
                "{gateway: {environments: {repositories: {'a b': '/x'}}}}",
                "gateway.environments.repositories",
            ),
            (
                "{gateway: {environments: {secrets: {X: {env: 'A', file: '/b'}}}}}",
                "gateway.environments.secrets.X",
            ),
            (
                "{gateway: {environments: {secrets: {X: 'VALUE'}}}}",
                "gateway.environments.secrets.X",
            ),
        ] {
            match parse(text) {
                Err(ConfigError::Invalid { key: got, .. }) => assert_eq!(got, key, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
