//! The bounded buffer that collects what a cell prints.

use talon_protocol::{ConsoleOutput, OutputStream};

/// Output of one VM, capped at a byte budget. Once the budget is spent,
/// further output is refused and the refusal is remembered.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    items: Vec<ConsoleOutput>,
    bytes: usize,
    cap: usize,
    exceeded: bool,
}

impl Output {
    pub fn new(cap: usize) -> Self {
        Self {
            items: Vec::new(),
            bytes: 0,
            cap,
            exceeded: false,
        }
    }

    /// Appends `text`; consecutive console writes to one stream are merged
    /// (`text()` and `json()` items never are).
    /// Returns the cap when it is (or was already) exceeded.
    pub fn push(&mut self, stream: OutputStream, text: &str) -> Result<(), usize> {
        if self.exceeded || self.bytes + text.len() > self.cap {
            self.exceeded = true;
            return Err(self.cap);
        }
        self.bytes += text.len();
        match self.items.last_mut() {
            Some(last)
                if last.stream == stream
                    && matches!(stream, OutputStream::Stdout | OutputStream::Stderr) =>
            {
                last.text.push_str(text)
            }
            _ => self.items.push(ConsoleOutput {
                stream,
                text: text.to_owned(),
            }),
        }
        Ok(())
    }

    /// Bytes still allowed.
    pub fn room(&self) -> usize {
        self.cap.saturating_sub(self.bytes)
    }

    pub fn exceeded(&self) -> bool {
        self.exceeded
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Takes what was printed so far, keeping the byte count (the budget is
    /// per VM, not per take).
    pub fn take(&mut self) -> Vec<ConsoleOutput> {
        std::mem::take(&mut self.items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_caps() {
        let mut out = Output::new(8);
        assert_eq!(out.push(OutputStream::Stdout, "abc"), Ok(()));
        assert_eq!(out.push(OutputStream::Stdout, "de"), Ok(()));
        assert_eq!(out.push(OutputStream::Stderr, "fgh"), Ok(()));
        assert_eq!(out.push(OutputStream::Stderr, "i"), Err(8));
        assert!(out.exceeded());
        assert_eq!(out.push(OutputStream::Stderr, ""), Err(8));
        assert_eq!(
            out.take(),
            vec![
                ConsoleOutput {
                    stream: OutputStream::Stdout,
                    text: "abcde".into()
                },
                ConsoleOutput {
                    stream: OutputStream::Stderr,
                    text: "fgh".into()
                },
            ]
        );
    }
}
