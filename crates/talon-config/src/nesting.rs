//! A nesting-depth check for JSON and JSON5 text, run before the
//! recursive parser.
//!
//! `json5` (a pest grammar) and `serde_json::Value`'s own drop recurse once
//! per nesting level on the caller's stack; 20,000 levels abort the process.
//! This scan is iterative, allocation-free and linear: it walks the text
//! once, skipping strings and comments, and stops at the first bracket past
//! the limit with its line and column.

/// The deepest nesting accepted, the same as `serde_json`'s own limit.
pub const MAX_NESTING: usize = 128;

use crate::Json5Error;

/// Fails when `text` opens more than `limit` arrays or objects inside one
/// another. Brackets inside strings and comments do not count; malformed
/// text is left for the parser to report.
pub fn check_nesting(text: &str, limit: usize) -> Result<(), Json5Error> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    let (line, column) = position(text, i);
                    return Err(Json5Error::TooDeep {
                        limit,
                        line,
                        column,
                    });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            quote @ (b'"' | b'\'') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    // An escape covers the next byte (a quote, a backslash or
                    // a line continuation).
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                // JSON5 ends a line comment at LF, CR, U+2028 or U+2029.
                while i < bytes.len()
                    && bytes[i] != b'\n'
                    && bytes[i] != b'\r'
                    && !(bytes[i..].starts_with(&[0xE2, 0x80])
                        && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9)))
                {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The 1-based line and column (in characters) of byte `offset`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_brackets_outside_strings_and_comments() {
        assert_eq!(check_nesting("{a: [1, {b: 2}]}", 3), Ok(()));
        assert_eq!(
            check_nesting("{a: [1, {b: 2}]}", 2),
            Err(Json5Error::TooDeep {
                limit: 2,
                line: 1,
                column: 9
            })
        );
        let quoted = "{a: '[[[[', b: \"{{{{\\\"[[[\", // [[[[\n /* {{{{ */ c: 1}";
        assert_eq!(check_nesting(quoted, 1), Ok(()));
        assert_eq!(check_nesting("[[]][[]][[]]", 2), Ok(()));
    }

    #[test]
    fn deep_documents_of_every_shape_are_refused() {
        for open in ["[", "{a:", "{\"a\":", "[{a:"] {
            let text = open.repeat(20_000);
            let error = check_nesting(&text, MAX_NESTING).unwrap_err();
            assert!(
                matches!(error, Json5Error::TooDeep { limit: 128, .. }),
                "{error}"
            );
        }
        let lines = "[\n".repeat(200);
        assert_eq!(
            check_nesting(&lines, MAX_NESTING),
            Err(Json5Error::TooDeep {
                limit: 128,
                line: 129,
                column: 1
            })
        );
    }

    #[test]
    fn line_comments_end_at_every_json5_line_terminator() {
        for end in ["\n", "\r", "\u{2028}", "\u{2029}"] {
            let text = format!("//x{end}{}", "[".repeat(200));
            assert!(check_nesting(&text, MAX_NESTING).is_err(), "{end:?}");
            let parsed = crate::parse_json5(&text);
            assert!(
                parsed.is_err_and(|e| e.to_string().starts_with("nested deeper")),
                "{end:?}"
            );
        }
    }

    #[test]
    fn unterminated_strings_and_comments_end_the_scan() {
        assert_eq!(check_nesting("['[[[", 1), Ok(()));
        assert_eq!(check_nesting("[/* [[[", 1), Ok(()));
        assert_eq!(check_nesting("[\"\\", 1), Ok(()));
    }
}
