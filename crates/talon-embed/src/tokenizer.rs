//! BERT's uncased WordPiece tokenizer, as all-MiniLM-L6-v2's
//! `tokenizer.json` configures it (`BertNormalizer` with lowercasing,
//! accent stripping, control-character cleaning and spaced CJK characters;
//! `BertPreTokenizer`, which splits on whitespace and punctuation; greedy
//! longest-match-first WordPiece with the `##` continuation prefix).
//!
//! Only the vocabulary comes from the file: the rest of the pipeline is
//! this module, and [`WordPiece::from_tokenizer_json`] refuses a file that
//! configures anything else.

use std::collections::HashMap;

use serde_json::Value;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

use crate::error::{EmbedError, Result};

/// Words longer than this many characters become `[UNK]` (the file's
/// `max_input_chars_per_word`).
const MAX_CHARS_PER_WORD: usize = 100;
/// The continuation prefix of word pieces after the first.
const CONTINUATION: &str = "##";

/// A WordPiece vocabulary and the special tokens the encoder needs.
#[derive(Debug, Clone)]
pub struct WordPiece {
    ids: HashMap<String, u32>,
    tokens: Vec<String>,
    unk: u32,
    cls: u32,
    sep: u32,
}

impl WordPiece {
    /// Builds the tokenizer from a vocabulary in id order (`tokens[id]`).
    /// The vocabulary must hold `[UNK]`, `[CLS]` and `[SEP]`, and no token
    /// twice.
    pub fn from_tokens(tokens: Vec<String>) -> Result<Self> {
        let mut ids = HashMap::with_capacity(tokens.len());
        for (id, token) in tokens.iter().enumerate() {
            let id = u32::try_from(id).map_err(|_| EmbedError::invalid("vocabulary too large"))?;
            if ids.insert(token.clone(), id).is_some() {
                return Err(EmbedError::invalid(format!("token {token:?} listed twice")));
            }
        }
        let special = |name: &str| {
            ids.get(name)
                .copied()
                .ok_or_else(|| EmbedError::invalid(format!("the vocabulary has no {name}")))
        };
        Ok(Self {
            unk: special("[UNK]")?,
            cls: special("[CLS]")?,
            sep: special("[SEP]")?,
            ids,
            tokens,
        })
    }

    /// Reads a Hugging Face `tokenizer.json` that configures exactly this
    /// pipeline (uncased BERT WordPiece) and takes its vocabulary.
    pub fn from_tokenizer_json(text: &str) -> Result<Self> {
        let json: Value = serde_json::from_str(text).map_err(EmbedError::TokenizerJson)?;
        let expect = |pointer: &str, value: Value| {
            if json.pointer(pointer) == Some(&value) {
                Ok(())
            } else {
                Err(EmbedError::invalid(format!(
                    "tokenizer.json: {pointer} is {:?}, expected {value}",
                    json.pointer(pointer)
                )))
            }
        };
        expect("/model/type", "WordPiece".into())?;
        expect("/model/continuing_subword_prefix", CONTINUATION.into())?;
        expect("/model/unk_token", "[UNK]".into())?;
        expect("/normalizer/type", "BertNormalizer".into())?;
        expect("/normalizer/lowercase", true.into())?;
        expect("/pre_tokenizer/type", "BertPreTokenizer".into())?;
        let vocab = json
            .pointer("/model/vocab")
            .and_then(Value::as_object)
            .ok_or_else(|| EmbedError::invalid("tokenizer.json: no /model/vocab object"))?;
        let mut tokens = vec![None; vocab.len()];
        for (token, id) in vocab {
            let slot = id
                .as_u64()
                .and_then(|id| usize::try_from(id).ok())
                .and_then(|id| tokens.get_mut(id))
                .ok_or_else(|| {
                    EmbedError::invalid(format!("tokenizer.json: bad id {id} for {token:?}"))
                })?;
            if slot.replace(token.clone()).is_some() {
                return Err(EmbedError::invalid(format!(
                    "tokenizer.json: id {id} given twice"
                )));
            }
        }
        let tokens = tokens
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| EmbedError::invalid("tokenizer.json: vocabulary ids have gaps"))?;
        Self::from_tokens(tokens)
    }

    /// The vocabulary, by id.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// How many tokens the vocabulary has.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the vocabulary is empty (never, for a built tokenizer).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The id of `[CLS]`, which starts every encoder input.
    pub fn cls(&self) -> u32 {
        self.cls
    }

    /// The id of `[SEP]`, which ends every encoder input.
    pub fn sep(&self) -> u32 {
        self.sep
    }

    /// The id of `[UNK]`.
    pub fn unk(&self) -> u32 {
        self.unk
    }

    /// The token ids of `text`, without special tokens, at most `max`.
    pub fn encode(&self, text: &str, max: usize) -> Vec<u32> {
        let mut ids = Vec::new();
        let normalized = normalize(text);
        let mut piece = String::new();
        for word in pre_tokenize(&normalized) {
            if ids.len() >= max {
                break;
            }
            self.word_pieces(word, &mut piece, &mut ids);
        }
        ids.truncate(max);
        ids
    }

    /// Greedy longest-match-first pieces of one word; a word with a part
    /// no piece covers is one `[UNK]`.
    fn word_pieces(&self, word: &str, piece: &mut String, ids: &mut Vec<u32>) {
        if word.chars().count() > MAX_CHARS_PER_WORD {
            ids.push(self.unk);
            return;
        }
        let before = ids.len();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str(CONTINUATION);
                }
                piece.push_str(&word[start..end]);
                if let Some(&id) = self.ids.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                end = prev_boundary(word, end);
            }
            match found {
                Some(id) => {
                    ids.push(id);
                    start = end;
                }
                None => {
                    ids.truncate(before);
                    ids.push(self.unk);
                    return;
                }
            }
        }
    }
}

/// The char boundary just before `at` (`at` > 0).
fn prev_boundary(s: &str, at: usize) -> usize {
    let mut i = at - 1;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `BertNormalizer`: drops NUL, U+FFFD and control characters, turns
/// whitespace into spaces, puts spaces around CJK ideographs, lowercases
/// and strips accents (NFD, then no combining marks).
pub(crate) fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || is_control(c) {
            continue;
        }
        if is_whitespace(c) {
            cleaned.push(' ');
        } else if is_cjk(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    cleaned
        .to_lowercase()
        .nfd()
        .filter(|c| get_general_category(*c) != GeneralCategory::NonspacingMark)
        .collect()
}

/// `BertPreTokenizer`: words split on whitespace, each punctuation
/// character a word of its own.
pub(crate) fn pre_tokenize(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_whitespace)
        .filter(|w| !w.is_empty())
        .flat_map(split_punctuation)
}

fn split_punctuation(word: &str) -> impl Iterator<Item = &str> {
    let mut rest = word;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let end = if is_punctuation(first) {
            first.len_utf8()
        } else {
            rest.find(is_punctuation).unwrap_or(rest.len())
        };
        let (head, tail) = rest.split_at(end);
        rest = tail;
        Some(head)
    })
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
        || get_general_category(c) == GeneralCategory::SpaceSeparator
}

fn is_control(c: char) -> bool {
    if matches!(c, '\t' | '\n' | '\r') {
        return false;
    }
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::Surrogate
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
    )
}

/// ASCII symbols count as punctuation (as in BERT), besides Unicode's P*.
fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation();
    }
    matches!(
        get_general_category(c),
        GeneralCategory::ConnectorPunctuation
            | GeneralCategory::DashPunctuation
            | GeneralCategory::OpenPunctuation
            | GeneralCategory::ClosePunctuation
            | GeneralCategory::InitialPunctuation
            | GeneralCategory::FinalPunctuation
            | GeneralCategory::OtherPunctuation
    )
}

/// The CJK Unified Ideographs blocks BERT spaces out.
fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B820..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer() -> WordPiece {
        let tokens = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "create", "an", "issue", "git", "##hub", "un",
            "##want", "##ed", ",", "!", "cafe", "中",
        ];
        WordPiece::from_tokens(tokens.iter().map(|t| (*t).to_owned()).collect())
            .expect("a valid vocabulary")
    }

    fn words(ids: &[u32], wp: &WordPiece) -> Vec<String> {
        ids.iter()
            .map(|&i| wp.tokens()[i as usize].clone())
            .collect()
    }

    #[test]
    fn normalizes_like_bert() {
        assert_eq!(normalize("Café\tÜber\u{0}\u{200b}X"), "cafe uberx");
        assert_eq!(normalize("a中b"), "a 中 b");
    }

    #[test]
    fn splits_whitespace_and_punctuation() {
        let words: Vec<&str> = pre_tokenize("hello,  world!! a$b ¿qué?").collect();
        assert_eq!(
            words,
            [
                "hello", ",", "world", "!", "!", "a", "$", "b", "¿", "qué", "?"
            ]
        );
    }

    #[test]
    fn encodes_with_longest_match_pieces_and_unknown_words() {
        let wp = tokenizer();
        let ids = wp.encode("Create an issue on GitHub, unwanted! zzz Café 中", 64);
        assert_eq!(
            words(&ids, &wp),
            [
                "create", "an", "issue", "[UNK]", "git", "##hub", ",", "un", "##want", "##ed", "!",
                "[UNK]", "cafe", "中"
            ]
        );
        assert_eq!(wp.encode("create an issue", 2).len(), 2);
        assert_eq!(wp.encode("", 8), Vec::<u32>::new());
    }

    #[test]
    fn a_word_over_the_length_limit_is_unknown() {
        let wp = tokenizer();
        let long = "a".repeat(MAX_CHARS_PER_WORD + 1);
        assert_eq!(wp.encode(&long, 8), [wp.unk()]);
    }

    #[test]
    fn a_vocabulary_without_specials_or_with_duplicates_is_refused() {
        let owned = |t: &[&str]| t.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
        assert!(WordPiece::from_tokens(owned(&["[UNK]", "[CLS]"])).is_err());
        assert!(WordPiece::from_tokens(owned(&["[UNK]", "[CLS]", "[SEP]", "a", "a"])).is_err());
    }

    #[test]
    fn a_tokenizer_json_of_another_kind_is_refused() {
        let json = r#"{"model": {"type": "BPE", "vocab": {}}}"#;
        let error = WordPiece::from_tokenizer_json(json).unwrap_err();
        assert!(error.to_string().contains("/model/type"), "{error}");
        let good = serde_json::json!({
            "normalizer": {"type": "BertNormalizer", "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "hi": 3}}
        })
        .to_string();
        let wp = WordPiece::from_tokenizer_json(&good).unwrap();
        assert_eq!(wp.encode("Hi", 4), [3]);
        let gap = good.replace("\"hi\":3", "\"hi\":5");
        assert!(WordPiece::from_tokenizer_json(&gap).is_err());
    }
}
