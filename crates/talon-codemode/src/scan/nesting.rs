//! The TypeScript nesting estimate: an upper bound on the syntax-tree
//! depth SWC will build for a cell, computed from the scanner's tokens.

use super::{Kind, Scanner};

/// Words that add a level (operators, statements that nest) and never end
/// a statement before a line break.
const NESTING_WORDS: &[&str] = &[
    "abstract",
    "as",
    "asserts",
    "async",
    "await",
    "case",
    "catch",
    "class",
    "const",
    "declare",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "finally",
    "for",
    "function",
    "get",
    "if",
    "implements",
    "import",
    "in",
    "infer",
    "instanceof",
    "interface",
    "is",
    "keyof",
    "let",
    "module",
    "namespace",
    "new",
    "of",
    "readonly",
    "return",
    "satisfies",
    "set",
    "static",
    "switch",
    "throw",
    "try",
    "type",
    "typeof",
    "unique",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// Words that nest statements (`if (a) if (b) ...`): counted apart from
/// expression tokens, because a `,` in the innermost statement's expression
/// ends an expression, not the statements around it.
const STATEMENT_WORDS: &[&str] = &["if", "else", "while", "for", "do", "with"];

/// Words that continue the statement before a line break (`} else`,
/// `a\ninstanceof B`): no statement boundary is assumed before them.
const CONTINUING_WORDS: &[&str] = &[
    "as",
    "asserts",
    "catch",
    "else",
    "extends",
    "finally",
    "from",
    "implements",
    "in",
    "instanceof",
    "is",
    "of",
    "satisfies",
    "while",
];

/// A bracket level of the estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Paren,
    Bracket,
    Brace,
    Template,
    Angle,
}

#[derive(Debug, Clone, Copy)]
struct Level {
    open: Open,
    /// A `(` after `if`, `while`, `for`, `with` or `await`: a statement
    /// may follow its `)`.
    header: bool,
    count: usize,
    /// Statement nesting at this level (statement words, and label colons:
    /// every `:` after the first in a `,`-separated segment). A `,` keeps it;
    /// a statement boundary clears it.
    stmt: usize,
    /// `:` seen in the current `,`-separated segment (an object property
    /// has one; `a: b: c:` are labels).
    colons: usize,
    /// A `;` was seen: the count resets at the next token unless it
    /// continues the statement (`else`, `while`, `catch`, `finally`).
    after_semicolon: bool,
}

impl Level {
    fn new(open: Open, header: bool) -> Self {
        Self {
            open,
            header,
            count: 0,
            stmt: 0,
            colons: 0,
            after_semicolon: false,
        }
    }

    /// What this level adds to the estimate: its tokens and itself.
    fn weight(&self) -> usize {
        self.count + self.stmt + 1
    }

    /// A statement ended at this level.
    fn clear_statement(&mut self, total: &mut usize) {
        *total -= self.count + self.stmt;
        self.count = 0;
        self.stmt = 0;
        self.colons = 0;
    }
}

/// Where the estimate first went past the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooDeep {
    /// The estimate when it was refused.
    pub estimate: usize,
    /// 1-based line.
    pub line: usize,
}

/// An upper-bound estimate of the syntax-tree depth of `code`, refused as
/// soon as it exceeds `limit`.
///
/// The estimate is the number of open brackets (`(`, `[`, `{`, `${`, and
/// `<` until a `>` closes it) plus, for each open bracket and the top
/// level, the depth-adding tokens seen since the last sibling boundary:
/// every operator and `.`/`?.`/`=>`/`?`/`:` punctuator, every opening
/// bracket (a call `f()()` or index `a[0][1]` nests), operator and
/// statement keywords (`typeof`, `new`, `await`, `if`, `else`, `keyof`,
/// ...), and the bytes of a regular expression whose `/` could have been a
/// division. Sibling boundaries: `,`; `;` (unless `else`, `while`,
/// `catch` or `finally` follows); a line break between a value and an
/// identifier or literal that cannot continue it (automatic semicolon
/// insertion). Overcounting is the safe direction everywhere.
pub(crate) fn nesting_estimate(code: &str, limit: usize) -> Result<usize, TooDeep> {
    let mut levels: Vec<Level> = vec![Level::new(Open::Brace, false)];
    let mut prev_word: Option<&str> = None;
    // Sum of counts plus the number of open brackets.
    let mut total = 0usize;
    let mut deepest = 0usize;
    // Whether the previous token ends a value (for the line-break rule).
    let mut prev_value = false;
    for token in Scanner::new(code) {
        // Line-break statement boundary.
        if token.newline_before && prev_value {
            let starts = match token.kind {
                Kind::Ident(word) => !CONTINUING_WORDS.contains(&word),
                Kind::Number | Kind::Str => true,
                _ => false,
            };
            if starts {
                end_statement(&mut levels, &mut total);
                if let Some(top) = levels.last_mut() {
                    top.clear_statement(&mut total);
                }
            }
        }
        if let Some(top) = levels.last_mut()
            && top.after_semicolon
        {
            top.after_semicolon = false;
            let continues = matches!(token.kind,
                Kind::Ident(w) if matches!(w, "else" | "while" | "catch" | "finally"));
            if !continues {
                top.clear_statement(&mut total);
            }
        }
        let mut add = 0usize;
        let mut add_stmt = 0usize;
        let mut push = None;
        let after_value = prev_value;
        prev_value = false;
        match token.kind {
            Kind::Ident(word) => {
                if STATEMENT_WORDS.contains(&word) {
                    add_stmt = 1;
                } else if NESTING_WORDS.contains(&word) {
                    add = 1;
                } else {
                    prev_value = true;
                }
            }
            Kind::Number | Kind::Str => prev_value = true,
            // A template after a value is a tagged template: `` f`a``b` ``
            // nests one level per template.
            Kind::Template => {
                add = usize::from(after_value);
                prev_value = true;
            }
            // Whatever the scanner took for a regular expression may be
            // code to SWC (a `/` misread): every byte that could separate
            // two tokens counts, so no misreading can hide nesting.
            Kind::Regex { separators, .. } => {
                add = separators;
                prev_value = true;
            }
            Kind::TemplateOpen => {
                add = 1;
                push = Some(Open::Template);
            }
            Kind::TemplateMiddle => {
                let _ = close(&mut levels, &mut total, Open::Template);
                add = 1;
                push = Some(Open::Template);
            }
            Kind::TemplateClose => {
                let _ = close(&mut levels, &mut total, Open::Template);
                prev_value = true;
            }
            Kind::Punct(p) => match p {
                "," => {
                    if let Some(top) = levels.last_mut() {
                        total -= top.count;
                        top.count = 0;
                        top.colons = 0;
                    }
                }
                ":" => {
                    if let Some(top) = levels.last_mut() {
                        top.colons += 1;
                        if top.colons > 1 {
                            add_stmt = 1;
                        } else {
                            add = 1;
                        }
                    }
                }
                ";" => {
                    end_statement(&mut levels, &mut total);
                    if let Some(top) = levels.last_mut() {
                        top.after_semicolon = true;
                    }
                }
                ")" => {
                    prev_value = !close(&mut levels, &mut total, Open::Paren);
                }
                "]" => {
                    let _ = close(&mut levels, &mut total, Open::Bracket);
                    prev_value = true;
                }
                "}" => {
                    let _ = close(&mut levels, &mut total, Open::Brace);
                    prev_value = true;
                }
                "(" | "[" | "{" | "<" => {
                    add = 1;
                    push = Some(match p {
                        "(" => Open::Paren,
                        "[" => Open::Bracket,
                        "{" => Open::Brace,
                        _ => Open::Angle,
                    });
                }
                ">" | ">>" | ">>>" | ">=" | ">>=" | ">>>=" => {
                    let closes = p.bytes().take_while(|b| *b == b'>').count();
                    for _ in 0..closes {
                        if levels.last().is_some_and(|l| l.open == Open::Angle) && levels.len() > 1
                        {
                            if let Some(level) = levels.pop() {
                                total -= level.weight();
                            }
                        } else {
                            break;
                        }
                    }
                    add = 1;
                }
                _ => add = 1,
            },
        }
        if let Some(top) = levels.last_mut() {
            top.count += add;
            top.stmt += add_stmt;
            total += add + add_stmt;
        }
        if let Some(open) = push {
            levels.push(Level::new(
                open,
                open == Open::Paren
                    && matches!(prev_word, Some("if" | "while" | "for" | "with" | "await")),
            ));
            total += 1;
        }
        prev_word = match token.kind {
            Kind::Ident(word) => Some(word),
            _ => None,
        };
        deepest = deepest.max(total);
        if total > limit {
            return Err(TooDeep {
                estimate: total,
                line: token.line,
            });
        }
    }
    Ok(deepest)
}

/// A statement ended: unclosed `<` levels (comparisons) end with it.
fn end_statement(levels: &mut Vec<Level>, total: &mut usize) {
    while levels.len() > 1 && levels.last().is_some_and(|l| l.open == Open::Angle) {
        if let Some(level) = levels.pop() {
            *total -= level.weight();
        }
    }
}

/// Closes the innermost `open` level, with any `<` levels inside it; a
/// closer that matches nothing open is ignored (overcounting is safe).
/// Returns whether the level closed was a statement header's `(` (or
/// nothing was closed: a statement may follow either way).
fn close(levels: &mut Vec<Level>, total: &mut usize, open: Open) -> bool {
    let Some(at) = levels.iter().rposition(|l| l.open != Open::Angle) else {
        return true;
    };
    if at == 0 || levels[at].open != open {
        return true;
    }
    let header = levels[at].header;
    for level in levels.drain(at..) {
        *total -= level.weight();
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(code: &str) -> usize {
        nesting_estimate(code, usize::MAX).unwrap()
    }

    #[test]
    fn estimate_bounds_every_shape() {
        let n = 50;
        let shapes = [
            "(".repeat(n) + "1" + &")".repeat(n),
            "1".to_owned() + &"+1".repeat(n),
            "a".to_owned() + &"&&a".repeat(n),
            "!".repeat(n) + "x",
            "typeof ".repeat(n) + "x",
            "a".to_owned() + &".b".repeat(n),
            "f".to_owned() + &"()".repeat(n),
            "a".to_owned() + &"?a:a".repeat(n),
            "a".to_owned() + &"=a".repeat(n),
            "x=>".repeat(n) + "x",
            "new ".repeat(n) + "X",
            "`${".repeat(n) + &"}`".repeat(n),
            "let x: ".to_owned() + &"A<".repeat(n) + "B" + &">".repeat(n),
            "if(a)x;else ".repeat(n) + "x",
            "if(a)\n".repeat(n) + "x",
            "a:".repeat(n) + "x",
        ];
        for shape in shapes {
            assert!(estimate(&shape) >= n, "{shape}: {}", estimate(&shape));
        }
        let siblings = [
            "f(1);\n".repeat(2000),
            "f(1)\n".repeat(2000),
            "const x = 1\n".repeat(2000),
            "if (a) { b() }\n".repeat(2000),
            "if (a < b) { c() }\n".repeat(2000),
            "f(a < b, c < d)\n".repeat(2000),
            "[".to_owned() + &"1, ".repeat(5000) + "]",
        ];
        for code in siblings {
            assert!(estimate(&code) < 10, "{}: {}", &code[..30], estimate(&code));
        }
    }
}
