//! How a chat request's messages meet the session's history: the one rule
//! the surface follows (documented in `docs/openai.md`).
//!
//! The request's messages, without `system`/`developer` ones (the
//! session's instructions, kept once), split into the **tail** (the
//! trailing `user` messages and the `tool` answers right before them) and
//! the **prefix** before it. Both the prefix and the stored history are seen
//! as the client sees them: user texts, and per stretch between two user
//! messages the assistant's texts joined (as the completion's `content`
//! joined them), whitespace normalised ([`Said::new`]). Tool traffic is
//! not compared.
//!
//! 1. The session is empty: the prefix is imported as the run's earlier
//!    messages, then the tail ([`Plan::Import`]).
//! 2. The prefix is empty, equal to the history, or one is a suffix of the
//!    other (the client trimmed old turns, or the session compacted them):
//!    only the tail is sent ([`Plan::Append`]).
//! 3. Otherwise the client rewound or edited: the session is forked after
//!    the longest common beginning, the rest of the prefix imported there
//!    ([`Plan::Fork`]); with nothing in common, a new session
//!    ([`Plan::Fresh`]). The call answers with the new session's key.

use crate::gateway::{Message, MessageRole};

/// Who said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One turn of the conversation as a client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// Who.
    pub speaker: Speaker,
    /// The text (trimmed).
    pub text: String,
}

impl Said {
    /// A turn, its whitespace normalised (runs of whitespace are one
    /// space; none at the ends), so a text compares equal however the two
    /// sides joined or trimmed its parts.
    pub fn new(speaker: Speaker, text: &str) -> Self {
        Self {
            speaker,
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
        }
    }

    /// Adds the text of a later part of the same turn.
    pub fn extend(&mut self, text: &str) {
        for word in text.split_whitespace() {
            if !self.text.is_empty() {
                self.text.push(' ');
            }
            self.text.push_str(word);
        }
    }
}

/// What to do with the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// A new or empty session: import the whole prefix.
    Import,
    /// The history agrees: send the tail only.
    Append,
    /// Fork the session keeping messages up to `at` (a message id), then
    /// import the prefix from `import_from`.
    Fork {
        /// The last message kept.
        at: String,
        /// The first prefix turn to import.
        import_from: usize,
    },
    /// Nothing in common: a new session, the whole prefix imported.
    Fresh,
}

/// The client's view of stored messages, each turn with the id of the
/// last stored message before the next turn begins.
pub fn view(stored: &[Message]) -> Vec<(Said, String)> {
    let mut view: Vec<(Said, String)> = Vec::new();
    for message in stored {
        let text = message.text.as_deref().unwrap_or("").trim();
        match message.role {
            MessageRole::User => {
                view.push((Said::new(Speaker::User, text), message.id.to_string()))
            }
            MessageRole::Assistant if !text.is_empty() => match view.last_mut() {
                Some((said, _)) if said.speaker == Speaker::Assistant => said.extend(text),
                _ => view.push((Said::new(Speaker::Assistant, text), message.id.to_string())),
            },
            MessageRole::Compaction => view.clear(),
            _ => {}
        }
        if let Some((_, through)) = view.last_mut() {
            *through = message.id.to_string();
        }
    }
    view
}

/// The plan for a prefix against the stored history.
pub fn plan(prefix: &[Said], stored: &[(Said, String)]) -> Plan {
    if stored.is_empty() {
        return Plan::Import;
    }
    let history: Vec<&Said> = stored.iter().map(|(said, _)| said).collect();
    let prefix: Vec<&Said> = prefix.iter().collect();
    if prefix.is_empty() || prefix.ends_with(&history) || history.ends_with(&prefix) {
        return Plan::Append;
    }
    let common = prefix
        .iter()
        .zip(&history)
        .take_while(|(a, b)| a == b)
        .count();
    if common == 0 {
        return Plan::Fresh;
    }
    Plan::Fork {
        at: stored[common - 1].1.clone(),
        import_from: common,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(text: &str) -> Said {
        Said::new(Speaker::User, text)
    }
    fn a(text: &str) -> Said {
        Said::new(Speaker::Assistant, text)
    }
    fn stored(turns: &[Said]) -> Vec<(Said, String)> {
        turns
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), format!("m{i}")))
            .collect()
    }

    #[test]
    fn the_rule() {
        let history = stored(&[u("hi"), a("hello"), u("again"), a("still here")]);
        assert_eq!(plan(&[u("hi")], &[]), Plan::Import);
        assert_eq!(plan(&[], &history), Plan::Append);
        assert_eq!(
            plan(
                &[u("hi"), a("hello "), u("again"), a("still here")],
                &history
            ),
            Plan::Append
        );
        // Trimmed by the client, or compacted by the session.
        assert_eq!(plan(&[u("again"), a("still here")], &history), Plan::Append);
        assert_eq!(
            plan(
                &[
                    u("old"),
                    a("older"),
                    u("hi"),
                    a("hello"),
                    u("again"),
                    a("still here")
                ],
                &history
            ),
            Plan::Append
        );
        // Regenerated: the client rewound to after the first answer.
        assert_eq!(
            plan(&[u("hi"), a("hello")], &history),
            Plan::Fork {
                at: "m1".into(),
                import_from: 2
            }
        );
        // Edited the second question.
        assert_eq!(
            plan(&[u("hi"), a("hello"), u("other"), a("x")], &history),
            Plan::Fork {
                at: "m1".into(),
                import_from: 2
            }
        );
        assert_eq!(plan(&[u("elsewhere")], &history), Plan::Fresh);
    }

    #[test]
    fn whitespace_does_not_tell_texts_apart() {
        // A turn stored as two parts with a trailing newline, shown to the
        // client joined by a blank line.
        let mut stored = Said::new(Speaker::Assistant, "I'll check.\n");
        stored.extend("Done.");
        assert_eq!(stored, a("I'll check.\n\n\nDone."));
        assert_eq!(a("  two\n  lines "), a("two lines"));
    }
}
