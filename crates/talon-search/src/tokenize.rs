//! Turns names, ids and prose into search terms: splits snake_case,
//! camelCase, kebab-case, dotted and `__` names, lowercases, drops
//! stopwords, and stems lightly (the same way for documents and queries).

/// Words too common to say anything about a tool.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "for", "from", "i", "in",
    "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please", "so", "some", "that",
    "the", "their", "them", "these", "this", "those", "to", "up", "us", "was", "we", "what",
    "which", "with", "you", "your",
];

/// Splits `text` into lowercase words: non-alphanumerics separate words,
/// and so do camelCase humps (`createIssue`, `HTTPFetch` → `http`, `fetch`)
/// and letter/digit boundaries.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_owned()));
    out
}

/// Calls `f` with each lowercase word of `text`, reusing one buffer.
pub fn for_each_word(text: &str, f: impl FnMut(&str)) {
    if text.is_ascii() {
        ascii_words(text.as_bytes(), f);
    } else {
        unicode_words(text, f);
    }
}

/// The ASCII fast path of [`for_each_word`]: same rules, on bytes.
fn ascii_words(text: &[u8], mut f: impl FnMut(&str)) {
    let mut word = String::with_capacity(32);
    let mut prev: Option<u8> = None;
    for (i, &c) in text.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                f(&word);
                word.clear();
            }
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let next = text.get(i + 1).copied();
            let hump = c.is_ascii_uppercase()
                && (p.is_ascii_lowercase()
                    || (p.is_ascii_uppercase() && next.is_some_and(|n| n.is_ascii_lowercase())));
            let digit_edge = p.is_ascii_alphabetic() != c.is_ascii_alphabetic();
            if (hump || digit_edge) && !word.is_empty() {
                f(&word);
                word.clear();
            }
        }
        word.push(char::from(c.to_ascii_lowercase()));
        prev = Some(c);
    }
    if !word.is_empty() {
        f(&word);
    }
}

fn unicode_words(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    let mut prev: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                f(&word);
                word.clear();
            }
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let next = chars.peek().copied();
            let hump = c.is_uppercase()
                && (p.is_lowercase() || (p.is_uppercase() && next.is_some_and(char::is_lowercase)));
            let digit_edge = p.is_alphabetic() != c.is_alphabetic();
            if (hump || digit_edge) && !word.is_empty() {
                f(&word);
                word.clear();
            }
        }
        if c.is_ascii() {
            word.push(c.to_ascii_lowercase());
        } else {
            word.extend(c.to_lowercase());
        }
        prev = Some(c);
    }
    if !word.is_empty() {
        f(&word);
    }
}

/// Search terms of `text`: words without stopwords, stemmed.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |t| out.push(t.to_owned()));
    out
}

/// Calls `f` with each search term of `text`, reusing buffers.
pub fn for_each_term(text: &str, mut f: impl FnMut(&str)) {
    let mut stemmed = String::new();
    for_each_word(text, |w| {
        // Single letters (the `s` of `what's`) say nothing.
        let single_letter = w.len() == 1 && w.as_bytes()[0].is_ascii_alphabetic();
        if !single_letter && !is_stopword(w) {
            stem_into(w, &mut stemmed);
            f(&stemmed);
        }
    });
}

/// `true` for words that carry no meaning for search.
pub fn is_stopword(word: &str) -> bool {
    // No stopword is longer than six letters.
    word.len() <= 6 && STOPWORDS.binary_search(&word).is_ok()
}

/// A light, deterministic suffix stripper: plural and verb endings, then a
/// final `e` and a doubled consonant, so that `save`, `saves`, `saved` and
/// `saving` meet, as do `entry` and `entries`.
pub fn stem(word: &str) -> String {
    let mut out = String::new();
    stem_into(word, &mut out);
    out
}

/// [`stem`] into a reused buffer.
pub fn stem_into(word: &str, w: &mut String) {
    w.clear();
    w.push_str(word);
    if w.len() <= 3 || !w.is_ascii() {
        return;
    }
    if w.ends_with("ies") && w.len() >= 5 {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.ends_with("sses") {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.pop();
    }
    for suffix in ["ing", "ed"] {
        if w.ends_with(suffix) {
            let base = &w[..w.len() - suffix.len()];
            if base.len() >= 3 && base.chars().any(is_vowel) {
                let keep = base.len();
                w.truncate(keep);
                let bytes = w.as_bytes();
                let n = bytes.len();
                if n >= 2
                    && bytes[n - 1] == bytes[n - 2]
                    && !matches!(bytes[n - 1], b'l' | b's' | b'z')
                {
                    w.pop();
                }
                break;
            }
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
}

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u' | 'y')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOPWORDS);
    }

    #[test]
    fn splits_every_naming_style() {
        assert_eq!(
            words("github__add_issue_assignees"),
            ["github", "add", "issue", "assignees"]
        );
        assert_eq!(
            words("google-calendar.create_event"),
            ["google", "calendar", "create", "event"]
        );
        assert_eq!(
            words("createIssue HTTPFetch getV2Items"),
            ["create", "issue", "http", "fetch", "get", "v", "2", "items"]
        );
        assert_eq!(
            words("mcp:github:list_issues"),
            ["mcp", "github", "list", "issues"]
        );
        assert_eq!(words("  "), Vec::<String>::new());
        // The Unicode path splits the same way.
        assert_eq!(
            words("créerIssue über_Straße"),
            ["créer", "issue", "über", "straße"]
        );
    }

    #[test]
    fn stems_meet() {
        for group in [
            &["save", "saves", "saved", "saving"][..],
            &["create", "creates", "created", "creating"],
            &["entry", "entries"],
            &["message", "messages"],
            &["file", "files"],
            &["run", "running", "runs"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.iter().all(|s| *s == stems[0]),
                "{group:?} -> {stems:?}"
            );
        }
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("address"), "address");
    }

    #[test]
    fn terms_drop_stopwords() {
        assert_eq!(
            terms("Send an email to the team"),
            ["send", "email", "team"]
        );
    }
}
