//! One iterative, allocation-light scanner of cell source, shared by the
//! module-loading check and the TypeScript nesting estimate.
//!
//! It works on bytes (non-ASCII characters are decoded one at a time, never
//! copied), keeps only a stack of open `(` kinds (one byte each) and of
//! open template substitutions, and never recurses on the input's nesting.
//! It tells code from strings, template text, comments (including the
//! `<!--` and line-leading `-->` forms SWC accepts) and regular-expression
//! literals. Where a `/` could start either a division or a regular
//! expression and the context does not decide it, the literal is marked
//! [`Kind::Regex`]`{ambiguous: true}` so the estimate can count its bytes.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind<'a> {
    /// An identifier or keyword (ASCII or Unicode letters, `_`, `$`, `#`).
    Ident(&'a str),
    /// An operator or bracket, longest match (`===`, `?.`, `=>`, `(`).
    Punct(&'a str),
    /// A string literal or a whole template without substitutions.
    Str,
    /// A number.
    Number,
    /// `` `text${ ``: a template opening its first substitution.
    TemplateOpen,
    /// `}text${`: the end of one substitution and the start of the next.
    TemplateMiddle,
    /// `` }text` ``: the end of a template's last substitution.
    TemplateClose,
    /// A regular-expression literal of `len` bytes; `ambiguous` when the
    /// context could also read its `/` as a division.
    /// `separators` counts its bytes that could separate two tokens if it
    /// were code (anything but ASCII letters, digits, `_` and `$`).
    Regex {
        len: usize,
        ambiguous: bool,
        separators: usize,
    },
    /// A whole template without substitutions (`` `text` ``).
    Template,
}

/// A token, its 1-based line, and whether a line terminator precedes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub kind: Kind<'a>,
    pub line: usize,
    pub newline_before: bool,
}

/// Keywords after which `/` starts a regular expression.
const REGEX_AFTER: &[&str] = &[
    "return",
    "typeof",
    "case",
    "do",
    "else",
    "in",
    "new",
    "delete",
    "void",
    "throw",
    "instanceof",
    "await",
    "extends",
    "default",
];

/// Contextual words after which `/` may start either (`of`, `yield`).
const REGEX_MAYBE_AFTER: &[&str] = &["of", "yield", "let"];

/// Operators, longest first within each length.
const PUNCT4: &[&str] = &[">>>="];
const PUNCT3: &[&str] = &[
    "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=",
];
const PUNCT2: &[&str] = &[
    "=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=",
    "&=", "|=", "^=", "**", "<<", ">>",
];

/// How the `(` being closed was opened.
const PAREN_PLAIN: u8 = 0;
/// After `if`, `while`, `for` or `with`: a statement follows its `)`.
const PAREN_HEADER: u8 = 1;
/// After `await` (`for await (...)` or `await (x)`): either may follow.
const PAREN_MAYBE_HEADER: u8 = 2;

/// What came before, for the regex decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// Start of input, an opener, an operator, a keyword like `return`.
    Regex,
    /// A value: identifier, number, string, `]`, `)`, postfix `++`.
    Division,
    /// Either (`}`, `>`, `!`, `of`, `)` after `await (`).
    Ambiguous,
}

/// The scanner: an iterator of [`Token`]s.
pub(crate) struct Scanner<'a> {
    src: &'a str,
    bytes: &'a [u8],
    i: usize,
    line: usize,
    newline: bool,
    prev: Prev,
    /// The previous identifier, to classify a following `(`.
    prev_ident: Option<&'a str>,
    /// Kinds of the open `(` (one byte each).
    parens: Vec<u8>,
    /// Open `${` substitutions: the brace depth at which each closes.
    templates: Vec<u32>,
    depth: u32,
    /// The previous token was `.` or `?.`: a word now is a property name.
    after_dot: bool,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Self {
            src,
            bytes: src.as_bytes(),
            i: 0,
            line: 1,
            newline: false,
            prev: Prev::Regex,
            prev_ident: None,
            parens: Vec::new(),
            templates: Vec::new(),
            depth: 0,
            after_dot: false,
        }
    }

    fn at(&self, i: usize) -> u8 {
        self.bytes.get(i).copied().unwrap_or(0)
    }

    /// The character at `i` (a non-ASCII byte starts a UTF-8 sequence).
    fn char_at(&self, i: usize) -> char {
        self.src
            .get(i..)
            .and_then(|s| s.chars().next())
            .unwrap_or('\0')
    }

    /// Skips to the next line terminator (LF, CR, U+2028, U+2029), as a
    /// line comment ends there.
    fn skip_line(&mut self) {
        while self.i < self.bytes.len() && !matches!(self.bytes[self.i], b'\n' | b'\r') {
            if self.bytes[self.i..].starts_with(&[0xE2, 0x80])
                && matches!(self.at(self.i + 2), 0xA8 | 0xA9)
            {
                return;
            }
            self.i += 1;
        }
    }

    /// Skips template text from `self.i` to the closing backtick (`true`)
    /// or to a `${` (`false`, the substitution is recorded).
    fn template_text(&mut self) -> bool {
        while self.i < self.bytes.len() {
            match self.bytes[self.i] {
                b'\\' => self.i += 2,
                b'`' => {
                    self.i += 1;
                    return true;
                }
                b'$' if self.at(self.i + 1) == b'{' => {
                    self.depth += 1;
                    self.templates.push(self.depth);
                    self.i += 2;
                    return false;
                }
                b'\n' => {
                    self.line += 1;
                    self.i += 1;
                }
                _ => self.i += 1,
            }
        }
        self.i = self.bytes.len();
        true
    }

    fn token(&mut self, kind: Kind<'a>, line: usize) -> Token<'a> {
        let token = Token {
            kind,
            line,
            newline_before: self.newline,
        };
        self.newline = false;
        self.after_dot = matches!(kind, Kind::Punct("." | "?."));
        token
    }
}

impl<'a> Iterator for Scanner<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        loop {
            let start = self.i;
            let c = *self.bytes.get(start)?;
            let line = self.line;
            match c {
                b'\n' => {
                    self.line += 1;
                    self.newline = true;
                    self.i += 1;
                }
                b'\r' => {
                    self.newline = true;
                    self.i += 1;
                }
                b' ' | b'\t' | 0x0b | 0x0c => self.i += 1,
                b'/' if self.at(start + 1) == b'/' => self.skip_line(),
                b'/' if self.at(start + 1) == b'*' => {
                    self.i += 2;
                    while self.i < self.bytes.len()
                        && !(self.bytes[self.i] == b'*' && self.at(self.i + 1) == b'/')
                    {
                        if matches!(self.bytes[self.i], b'\n' | b'\r') {
                            self.newline = true;
                            if self.bytes[self.i] == b'\n' {
                                self.line += 1;
                            }
                        }
                        self.i += 1;
                    }
                    self.i = (self.i + 2).min(self.bytes.len());
                }
                b'<' if self.bytes[start..].starts_with(b"<!--") => self.skip_line(),
                b'-' if self.newline && self.bytes[start..].starts_with(b"-->") => self.skip_line(),
                b'/' if self.prev != Prev::Division => {
                    let ambiguous = self.prev == Prev::Ambiguous;
                    self.i += 1;
                    let mut class = false;
                    while self.i < self.bytes.len() && !matches!(self.bytes[self.i], b'\n' | b'\r')
                    {
                        match self.bytes[self.i] {
                            b'\\' => self.i += 1,
                            b'[' => class = true,
                            b']' => class = false,
                            b'/' if !class => break,
                            _ => {}
                        }
                        self.i += 1;
                    }
                    self.i = (self.i + 1).min(self.bytes.len());
                    while self.i < self.bytes.len() && self.bytes[self.i].is_ascii_alphanumeric() {
                        self.i += 1;
                    }
                    // A backslash before a line end may have stepped past it.
                    self.i = self.i.min(self.bytes.len());
                    self.prev = Prev::Division;
                    self.prev_ident = None;
                    let len = self.i - start;
                    let separators = self.bytes[start..self.i]
                        .iter()
                        .filter(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$')))
                        .count();
                    return Some(self.token(
                        Kind::Regex {
                            len,
                            ambiguous,
                            separators,
                        },
                        line,
                    ));
                }
                b'\'' | b'"' => {
                    self.i += 1;
                    while self.i < self.bytes.len()
                        && self.bytes[self.i] != c
                        && !matches!(self.bytes[self.i], b'\n' | b'\r')
                    {
                        if self.bytes[self.i] == b'\\' {
                            if self.at(self.i + 1) == b'\n' {
                                self.line += 1;
                            }
                            // `\` CR LF continues the string like `\` LF.
                            if self.at(self.i + 1) == b'\r' && self.at(self.i + 2) == b'\n' {
                                self.line += 1;
                                self.i += 1;
                            }
                            self.i += 1;
                        }
                        self.i += 1;
                    }
                    self.i = (self.i + 1).min(self.bytes.len());
                    self.prev = Prev::Division;
                    self.prev_ident = None;
                    return Some(self.token(Kind::Str, line));
                }
                b'`' => {
                    self.i += 1;
                    let closed = self.template_text();
                    let kind = if closed {
                        self.prev = Prev::Division;
                        Kind::Template
                    } else {
                        self.prev = Prev::Regex;
                        Kind::TemplateOpen
                    };
                    self.prev_ident = None;
                    return Some(self.token(kind, line));
                }
                b'}' if self.templates.last() == Some(&self.depth) => {
                    self.templates.pop();
                    self.depth = self.depth.saturating_sub(1);
                    self.i += 1;
                    let closed = self.template_text();
                    let kind = if closed {
                        self.prev = Prev::Division;
                        Kind::TemplateClose
                    } else {
                        self.prev = Prev::Regex;
                        Kind::TemplateMiddle
                    };
                    self.prev_ident = None;
                    return Some(self.token(kind, line));
                }
                c if c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'#') || c >= 0x80 => {
                    if c >= 0x80 {
                        let ch = self.char_at(start);
                        if ch.is_whitespace() {
                            if matches!(ch, '\u{2028}' | '\u{2029}') {
                                self.newline = true;
                            }
                            self.i += ch.len_utf8();
                            continue;
                        }
                        // Any other non-ASCII character is read as part of an
                        // identifier: whatever SWC makes of it (whitespace
                        // such as U+FEFF, an identifier part, an error), a
                        // `/` after it is then read as a division, so code is
                        // never mistaken for a regular expression.
                    }
                    while self.i < self.bytes.len() {
                        let b = self.bytes[self.i];
                        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'#') {
                            self.i += 1;
                        } else if b >= 0x80 {
                            let ch = self.char_at(self.i);
                            if ch.is_whitespace() {
                                break;
                            }
                            self.i += ch.len_utf8().max(1);
                        } else {
                            break;
                        }
                    }
                    let word = self.src.get(start..self.i).unwrap_or("");
                    let property = self.after_dot;
                    self.prev = if property {
                        // `a.return / b`: a property name, never a keyword.
                        Prev::Division
                    } else if REGEX_AFTER.contains(&word) {
                        Prev::Regex
                    } else if REGEX_MAYBE_AFTER.contains(&word) {
                        Prev::Ambiguous
                    } else {
                        Prev::Division
                    };
                    self.prev_ident = (!property).then_some(word);
                    return Some(self.token(Kind::Ident(word), line));
                }
                c if c.is_ascii_digit() => {
                    while self.i < self.bytes.len()
                        && (self.bytes[self.i].is_ascii_alphanumeric()
                            || matches!(self.bytes[self.i], b'.' | b'_'))
                    {
                        self.i += 1;
                    }
                    self.prev = Prev::Division;
                    self.prev_ident = None;
                    return Some(self.token(Kind::Number, line));
                }
                _ => {
                    let rest = &self.bytes[start..];
                    let len = [(PUNCT4, 4), (PUNCT3, 3), (PUNCT2, 2)]
                        .iter()
                        .find(|(set, n)| {
                            rest.len() >= *n && set.iter().any(|p| rest[..*n] == *p.as_bytes())
                        })
                        .map_or(1, |(_, n)| *n);
                    // `?.` before a digit is `?` and a number.
                    let len = if len == 2
                        && rest.starts_with(b"?.")
                        && rest.get(2).is_some_and(u8::is_ascii_digit)
                    {
                        1
                    } else {
                        len
                    };
                    self.i += len;
                    let text = self.src.get(start..self.i).unwrap_or("?");
                    self.prev = match text {
                        "(" => {
                            let kind = match self.prev_ident {
                                Some("if" | "while" | "for" | "with") => PAREN_HEADER,
                                Some("await") => PAREN_MAYBE_HEADER,
                                _ => PAREN_PLAIN,
                            };
                            self.parens.push(kind);
                            Prev::Regex
                        }
                        ")" => match self.parens.pop() {
                            Some(PAREN_HEADER) => Prev::Regex,
                            Some(PAREN_MAYBE_HEADER) => Prev::Ambiguous,
                            _ => Prev::Division,
                        },
                        "{" => {
                            self.depth += 1;
                            Prev::Regex
                        }
                        "}" => {
                            self.depth = self.depth.saturating_sub(1);
                            Prev::Ambiguous
                        }
                        "]" => Prev::Division,
                        "++" | "--" => Prev::Division,
                        "!" => Prev::Ambiguous,
                        t if t.ends_with('>') && t != "=>" => Prev::Ambiguous,
                        _ => Prev::Regex,
                    };
                    self.prev_ident = None;
                    return Some(self.token(Kind::Punct(text), line));
                }
            }
        }
    }
}

mod nesting;

pub(crate) use nesting::nesting_estimate;

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(code: &str) -> Vec<Kind<'_>> {
        Scanner::new(code).map(|t| t.kind).collect()
    }

    #[test]
    fn scanner_tells_code_from_text() {
        assert_eq!(
            kinds("a /* x */ // y\n'b' `c${d}e${f}g`; /re/g"),
            vec![
                Kind::Ident("a"),
                Kind::Str,
                Kind::TemplateOpen,
                Kind::Ident("d"),
                Kind::TemplateMiddle,
                Kind::Ident("f"),
                Kind::TemplateClose,
                Kind::Punct(";"),
                Kind::Regex {
                    len: 5,
                    ambiguous: false,
                    separators: 2
                },
            ]
        );
        assert_eq!(
            kinds("x++ / (y) / 2"),
            vec![
                Kind::Ident("x"),
                Kind::Punct("++"),
                Kind::Punct("/"),
                Kind::Punct("("),
                Kind::Ident("y"),
                Kind::Punct(")"),
                Kind::Punct("/"),
                Kind::Number,
            ]
        );
        assert_eq!(
            kinds("if (a) /)/.test(b)")[4],
            Kind::Regex {
                len: 3,
                ambiguous: false,
                separators: 3
            }
        );
        assert_eq!(
            kinds("{} /)/"),
            vec![
                Kind::Punct("{"),
                Kind::Punct("}"),
                Kind::Regex {
                    len: 3,
                    ambiguous: true,
                    separators: 3
                }
            ]
        );
        assert_eq!(
            kinds("a\u{a0}require"),
            vec![Kind::Ident("a"), Kind::Ident("require")]
        );
        assert_eq!(kinds("<!-- ((\n-->((\nx"), vec![Kind::Ident("x")]);
        assert_eq!(kinds("a ?.5 : b")[1], Kind::Punct("?"));
    }
}
