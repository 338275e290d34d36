//! [`summarize`](super::summarize)'s fast path: a byte scanner for the text the host holds (written by a JSON
//! writer, keys without escapes), which matches each expected part by comparing bytes at the point it starts and
//! skips everything else without building or unescaping it.
//!
//! It answers only where it can answer exactly as the serde path does. Anything else (a key or captured name with
//! escapes, text that is not valid JSON, nesting past serde_json's limit) is `None`, and the caller takes the serde
//! path, which gives the answer or the error. A part whose text differs from the expected one is compared by shape
//! on its raw slice, as the serde path does.

use super::{ChildSummary, Part, Shape, Tally, contains_raw, field};

/// How deep the scanner follows nesting (it recurses); deeper text is left to the serde path.
const MAX_DEPTH: usize = 100;

/// The summary of the JSON object `text`, or `None` to take the serde path.
pub(super) fn summarize(text: &str, expected: Option<&[(String, Part)]>) -> Option<ChildSummary> {
    let mut scan = Scan { text, pos: 0 };
    scan.eat(b'{')?;
    let mut tally = Tally::default();
    let mut summary = ChildSummary::default();
    let mut first = true;
    while let Some(key) = scan.next_key(&mut first)? {
        match key {
            "apiVersion" => summary.api_version = scan.captured(&mut tally, key, expected)?.to_owned(),
            "kind" => summary.kind = scan.captured(&mut tally, key, expected)?.to_owned(),
            "metadata" => {
                let wanted = expected.and_then(|expected| field(expected, key));
                let fields = wanted.and_then(|part| match &part.shape {
                    Shape::Object(fields) => Some(fields.as_slice()),
                    Shape::Other => None,
                });
                let (name, contains) = scan.metadata(fields)?;
                summary.name = name.to_owned();
                if wanted.is_some() {
                    tally.record(fields.is_some() && contains);
                }
            }
            _ => scan.other(&mut tally, key, expected, 1)?,
        }
    }
    scan.whitespace();
    if scan.pos != text.len() {
        return None;
    }
    summary.contains = tally.contains(expected);
    Some(summary)
}

/// A position in the text. Every method returns `None` where the text is not what it reads (or is beyond the fast
/// path), leaving the position anywhere.
struct Scan<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Scan<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes().get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.whitespace();
        self.bytes().get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// The next key of the object being read (its `{` consumed), its `:` consumed; `None` inside at its `}`.
    fn next_key(&mut self, first: &mut bool) -> Option<Option<&'a str>> {
        if !self.more_fields(first)? {
            return Some(None);
        }
        let key = self.plain_string()?;
        self.eat(b':')?;
        Some(Some(key))
    }

    /// Whether the object being read has another field: past its `}` when not, past the `,` before it when so.
    fn more_fields(&mut self, first: &mut bool) -> Option<bool> {
        match self.peek()? {
            b'}' => {
                self.pos += 1;
                return Some(false);
            }
            b',' if !*first => self.pos += 1,
            _ if *first => {}
            _ => return None,
        }
        *first = false;
        Some(true)
    }

    /// A string without escapes, its content borrowed; `None` for anything else.
    fn plain_string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.pos;
        let length = self.bytes()[start..]
            .iter()
            .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
        self.pos = start + length;
        self.eat_raw(b'"')?;
        Some(&self.text[start..start + length])
    }

    /// `byte` exactly here, no whitespace first.
    fn eat_raw(&mut self, byte: u8) -> Option<()> {
        (self.bytes().get(self.pos) == Some(&byte)).then(|| self.pos += 1)
    }

    /// A field the caller keeps (`apiVersion`, `kind`, `metadata.name`): a string without escapes, compared when
    /// expected.
    fn captured(&mut self, tally: &mut Tally, key: &str, expected: Option<&[(String, Part)]>) -> Option<&'a str> {
        self.whitespace();
        let start = self.pos;
        let value = self.plain_string()?;
        if let Some(part) = expected.and_then(|expected| field(expected, key)) {
            tally.record(part.text == self.text[start..self.pos] || part.is_str(value));
        }
        Some(value)
    }

    /// `metadata`: its `name`, and whether it contains the expected fields (false without them).
    fn metadata(&mut self, expected: Option<&[(String, Part)]>) -> Option<(&'a str, bool)> {
        self.eat(b'{')?;
        let mut tally = Tally::default();
        let mut name = "";
        let mut first = true;
        while let Some(key) = self.next_key(&mut first)? {
            if key == "name" {
                name = self.captured(&mut tally, key, expected)?;
            } else {
                self.other(&mut tally, key, expected, 2)?;
            }
        }
        Some((name, tally.contains(expected)))
    }

    /// A field the caller does not keep: matched or compared when expected, skipped otherwise.
    fn other(&mut self, tally: &mut Tally, key: &str, expected: Option<&[(String, Part)]>, depth: usize) -> Option<()> {
        match expected.and_then(|expected| field(expected, key)) {
            Some(part) if self.written_as(&part.text) => tally.record(true),
            Some(part) => {
                self.whitespace();
                let start = self.pos;
                self.skip_value(depth)?;
                tally.record(contains_raw(&self.text[start..self.pos], part));
            }
            None => self.skip_value(depth)?,
        }
        Some(())
    }

    /// Whether the value here is written exactly as `text` (a JSON value), and if so moves past it. A string, object
    /// or array ends where its text does; a number or literal must not go on past it.
    fn written_as(&mut self, text: &str) -> bool {
        self.whitespace();
        let rest = &self.bytes()[self.pos..];
        if !rest.starts_with(text.as_bytes()) {
            return false;
        }
        let complete = match text.as_bytes().last() {
            Some(b'"' | b'}' | b']') => true,
            Some(_) => !rest
                .get(text.len())
                .is_some_and(|next| next.is_ascii_alphanumeric() || matches!(next, b'.' | b'+' | b'-')),
            None => false,
        };
        if complete {
            self.pos += text.len();
        }
        complete
    }

    /// Moves past one JSON value, checking it as serde_json would.
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => {
                self.pos += 1;
                let mut first = true;
                while self.next_key_any(&mut first)? {
                    self.skip_value(depth + 1)?;
                }
                Some(())
            }
            b'[' => {
                self.pos += 1;
                if self.peek()? == b']' {
                    self.pos += 1;
                    return Some(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b']' => {
                            self.pos += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.number(),
        }
    }

    /// As [`Self::next_key`], for a key with any content: whether there is one.
    fn next_key_any(&mut self, first: &mut bool) -> Option<bool> {
        if !self.more_fields(first)? {
            return Some(false);
        }
        if self.peek()? != b'"' {
            return None;
        }
        self.skip_string()?;
        self.eat(b':')?;
        Some(true)
    }

    /// Moves past a string (at its `"`), checking its escapes and that it holds no control character.
    fn skip_string(&mut self) -> Option<()> {
        self.pos += 1;
        loop {
            let rest = &self.bytes()[self.pos..];
            let length = rest
                .iter()
                .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
            self.pos += length + 1;
            match rest[length] {
                b'"' => return Some(()),
                b'\\' => match self.bytes().get(self.pos)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.pos += 1,
                    b'u' => {
                        let hex = self.bytes().get(self.pos + 1..self.pos + 5)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        self.pos += 5;
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.bytes()[self.pos..]
            .starts_with(word.as_bytes())
            .then(|| self.pos += word.len())
    }

    /// Moves past a number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        let _ = self.eat_raw(b'-');
        match self.bytes().get(self.pos)? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat_raw(b'.').is_some() {
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.bytes().get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes().get(self.pos) {
                self.pos += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.bytes().get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.pos;
        self.digits();
        (self.pos > start).then_some(())
    }
}
