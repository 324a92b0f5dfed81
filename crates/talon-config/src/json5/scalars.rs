//! The scalars of JSON5: strings with their escapes, and numbers.

use serde_json::{Number, Value};

use super::{Parser, is_identifier_part, line_column};
use crate::Json5Error;

impl Parser<'_> {
    pub(super) fn hex_digits(&mut self, n: usize, at: usize) -> Result<u32, Json5Error> {
        let digits = self
            .text
            .get(self.pos..self.pos + n)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
        let Some(digits) = digits else {
            return Err(self.error_at(at, format!("this escape needs {n} hexadecimal digits")));
        };
        self.pos += n;
        u32::from_str_radix(digits, 16).map_err(|_| self.error_at(at, "bad hexadecimal escape"))
    }

    /// `\uXXXX` (its digits), joining a surrogate pair.
    pub(super) fn hex_char(&mut self, n: usize, at: usize) -> Result<char, Json5Error> {
        let unit = self.hex_digits(n, at)?;
        if (0xD800..0xDC00).contains(&unit) && n == 4 {
            if self.text[self.pos..].starts_with("\\u") {
                let save = self.pos;
                self.pos += 2;
                let low = self.hex_digits(4, at)?;
                if (0xDC00..0xE000).contains(&low) {
                    let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    return char::from_u32(code)
                        .ok_or_else(|| self.error_at(at, "bad surrogate pair"));
                }
                self.pos = save;
            }
            return Err(self.error_at(
                at,
                "a lone surrogate (`\\uD800`–`\\uDBFF` without its pair) is not text",
            ));
        }
        char::from_u32(unit).ok_or_else(|| self.error_at(at, "a lone surrogate is not text"))
    }

    pub(super) fn string(&mut self, quote: char, open: usize) -> Result<String, Json5Error> {
        let mut out = String::new();
        loop {
            let at = self.pos;
            let Some(c) = self.bump() else {
                let (line, column) = line_column(self.text, open);
                return Err(self.error_at(
                    at,
                    format!("the string opened at line {line} column {column} is not closed: the file ends first"),
                ));
            };
            match c {
                c if c == quote => return Ok(out),
                '\n' | '\r' => {
                    let (line, column) = line_column(self.text, open);
                    return Err(self.error_at(
                        at,
                        format!(
                            "the string opened at line {line} column {column} is not closed on its line (end a line inside a string with `\\`)"
                        ),
                    ));
                }
                '\\' => self.escape(at, &mut out)?,
                c => out.push(c),
            }
        }
    }

    pub(super) fn escape(&mut self, at: usize, out: &mut String) -> Result<(), Json5Error> {
        let Some(c) = self.bump() else {
            return Err(self.error_at(at, "the file ends inside an escape"));
        };
        match c {
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => {
                out.push('\r');
            }
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => out.push('\0'),
            '0'..='9' => {
                return Err(self.error_at(at, "a digit escape other than `\\0` is not JSON5"));
            }
            'x' => {
                let code = self.hex_digits(2, at)?;
                out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            'u' => out.push(self.hex_char(4, at)?),
            // A line continuation: the backslash and the line end vanish.
            '\n' | '\u{2028}' | '\u{2029}' => {}
            '\r' => {
                if self.peek() == Some('\n') {
                    self.bump();
                }
            }
            other => out.push(other),
        }
        Ok(())
    }

    pub(super) fn number(&mut self) -> Result<Value, Json5Error> {
        let start = self.pos;
        let negative = match self.peek() {
            Some('-') => {
                self.bump();
                true
            }
            Some('+') => {
                self.bump();
                false
            }
            _ => false,
        };
        let body = self.pos;
        let rest = &self.text[body..];
        if rest.starts_with("Infinity") || rest.starts_with("NaN") {
            return Err(self.error_at(start, NOT_FINITE));
        }
        let bad = |p: &Self| {
            p.error_at(
                start,
                format!("`{}` is not a number", p.text[start..p.pos].trim()),
            )
        };
        if rest.starts_with("0x") || rest.starts_with("0X") {
            self.pos += 2;
            let digits_at = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                self.bump();
            }
            self.end_of_number(start)?;
            let digits = &self.text[digits_at..self.pos];
            let magnitude = u64::from_str_radix(digits, 16).map_err(|_| bad(self))?;
            return integer(negative, magnitude).ok_or_else(|| bad(self));
        }
        let mut integral = true;
        let int_at = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
        let int_digits = &self.text[int_at..self.pos];
        if int_digits.len() > 1 && int_digits.starts_with('0') {
            return Err(self.error_at(
                start,
                "a number may not start with `0` (write `0x...` for hexadecimal)",
            ));
        }
        let mut fraction_digits = 0;
        if self.peek() == Some('.') {
            integral = false;
            self.bump();
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.bump();
                fraction_digits += 1;
            }
        }
        if int_digits.is_empty() && fraction_digits == 0 {
            self.end_of_number(start)?;
            return Err(bad(self));
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            integral = false;
            self.bump();
            if matches!(self.peek(), Some('+' | '-')) {
                self.bump();
            }
            let exp_at = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.bump();
            }
            if self.pos == exp_at {
                self.end_of_number(start)?;
                return Err(bad(self));
            }
        }
        self.end_of_number(start)?;
        let literal = &self.text[body..self.pos];
        if integral
            && let Some(v) = literal
                .parse::<u64>()
                .ok()
                .and_then(|m| integer(negative, m))
        {
            return Ok(v);
        }
        let magnitude: f64 = literal.parse().map_err(|_| bad(self))?;
        let value = if negative { -magnitude } else { magnitude };
        Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| self.error_at(start, "this number is too large for a JSON value"))
    }

    /// A number must not run into a name (`12px`).
    pub(super) fn end_of_number(&mut self, start: usize) -> Result<(), Json5Error> {
        if self.peek().is_some_and(is_identifier_part) {
            self.word();
            return Err(self.error_at(
                start,
                format!("`{}` is not a number", &self.text[start..self.pos]),
            ));
        }
        Ok(())
    }
}

pub(super) const NOT_FINITE: &str =
    "`Infinity` and `NaN` are JSON5 but have no JSON value; write a finite number";

fn integer(negative: bool, magnitude: u64) -> Option<Value> {
    if !negative {
        return Some(Value::Number(Number::from(magnitude)));
    }
    if magnitude == 0 {
        return Some(Value::Number(Number::from(0)));
    }
    let signed = i64::try_from(magnitude)
        .ok()
        .map(|m| -m)
        .or((magnitude == 1 << 63).then_some(i64::MIN));
    signed.map(|s| Value::Number(Number::from(s)))
}
