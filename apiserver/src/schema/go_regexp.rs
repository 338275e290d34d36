//! Go `regexp` patterns (a CRD schema's `pattern`, and the strfmt formats) matched with the `regex` crate.
//!
//! kube-apiserver v1.33 compiles `pattern` with Go 1.24's `regexp.Compile` and matches with `MatchString`,
//! an unanchored search. The `regex` crate implements nearly the same language, but reads part of Go's
//! syntax differently or refuses it, and words its errors its own way. So a pattern is first read with Go's
//! grammar, in Go's order — refusing what Go refuses, with Go's error text — and rewritten into a `regex`
//! pattern that spells each construct out:
//!
//! * `\d`, `\s`, `\w`, `\b` and `\B` are ASCII in Go (and its `\s` leaves out `\v`), Unicode in `regex`;
//! * `\Q…\E`, octal escapes (`\101`), `\<` and `\>` (literal in Go, word boundaries in `regex`), a `{`
//!   that starts no repetition (`a{`, `a{,5}`, `a{01}`), and `[`, `&&`, `--`, `~~` inside a class (literal
//!   in Go, nested classes and set operations in `regex`);
//! * Unicode classes: Go 1.24 knows exactly the names of `unicode.Categories`, `unicode.Scripts` and
//!   `Any` (no aliases, no loose matching), its `\p{Greek}` is the Script property where `regex` uses
//!   Script_Extensions, and its `\p{C}` leaves out unassigned code points;
//! * flags are `i`, `m`, `s` and `U` only; capture names are `[A-Za-z0-9_]+`; counted repetitions stop at
//!   1000, also as a product through nested repetitions (`(a{500}){3}`); nesting depth and program size
//!   have Go's limits, measured on Go's parse tree except that Go also factors common prefixes out of
//!   alternations, so a pattern right at a limit can be refused here and accepted by Go.
//!
//! Other differences remain: `regex`'s Unicode tables are of a newer Unicode version than Go 1.24's 15.0
//! (characters assigned since then are letters, digits … here and unassigned in Go), and a pattern whose
//! `regex` automaton exceeds 64 MiB is refused as `expression too large` although Go accepts it — about one
//! `\p{L}{1000}` fits.

use std::fmt::Write as _;

/// Why a pattern was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RegexError {
    /// Go refuses the pattern: `code` is the text of Go's `syntax.ErrorCode`, `expr` the offending part.
    #[error("error parsing regexp: {code}: `{expr}`")]
    Syntax { code: &'static str, expr: String },
    /// The `regex` crate refused the rewritten form of a pattern Go accepts.
    #[error("the valid pattern {pattern:?} could not be compiled")]
    Engine {
        pattern: String,
        #[source]
        source: regex::Error,
    },
    /// No thread could be started to compile a deeply nested pattern.
    #[error("no thread could be started to compile the pattern {pattern:?}")]
    Thread {
        pattern: String,
        #[source]
        source: std::io::Error,
    },
}

type Result<T, E = RegexError> = std::result::Result<T, E>;

const MISSING_PAREN: &str = "missing closing )";
const UNEXPECTED_PAREN: &str = "unexpected )";
const MISSING_BRACKET: &str = "missing closing ]";
const MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
const INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const INVALID_ESCAPE: &str = "invalid escape sequence";
const INVALID_CHAR_RANGE: &str = "invalid character class range";
const INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
const INVALID_NAMED_CAPTURE: &str = "invalid named capture";
const TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
const NESTING_DEPTH: &str = "expression nests too deeply";
const TOO_LARGE: &str = "expression too large";

/// Go refuses counted repetitions above this, alone or multiplied through nested counted repetitions.
const MAX_REPEAT: u64 = 1000;
/// Go's `maxHeight`: the tallest parse tree it accepts.
const MAX_HEIGHT: u32 = 1000;
/// Go's `maxSize`: 128 MiB of 40-byte program instructions.
const MAX_SIZE: u64 = (128 << 20) / 40;
/// The `regex` crate's limit on one compiled pattern (its default of 10 MiB refuses `\p{L}{300}`).
const COMPILED_SIZE_LIMIT: usize = 64 << 20;
/// Go's height limit keeps rewritten patterns far below this; it only guards against a rewriting mistake.
const NEST_LIMIT: u32 = 10_000;
/// The `regex` compiler recurses once per nesting level: patterns nested deeper than this compile on a
/// thread of their own with a `DEEP_STACK`-byte stack (the deepest ones Go accepts need ~2 MiB in a debug
/// build, more than a 2 MiB async worker or test thread has left).
const INLINE_NEST: u32 = 64;
const DEEP_STACK: usize = 64 << 20;

/// A class that matches no character.
const NOTHING: &str = r"[^\x{0}-\x{10FFFF}]";

fn syntax(code: &'static str, expr: &str) -> RegexError {
    RegexError::Syntax {
        code,
        expr: expr.to_string(),
    }
}

/// A compiled Go regular expression.
#[derive(Debug, Clone)]
pub(crate) struct Regex(regex::Regex);

impl Regex {
    /// Go's `regexp.Compile`: the pattern with Go's default (Perl) flags, or Go's error.
    pub(crate) fn new(pattern: &str) -> Result<Self> {
        let rewritten = Parser::new(pattern).parse()?;
        let build = || {
            regex::RegexBuilder::new(&rewritten.text)
                .size_limit(COMPILED_SIZE_LIMIT)
                .nest_limit(NEST_LIMIT)
                .build()
        };
        let compiled = if rewritten.nest <= INLINE_NEST {
            build()
        } else {
            on_deep_stack(build).map_err(|source| RegexError::Thread {
                pattern: pattern.to_string(),
                source,
            })?
        };
        compiled.map(Self).map_err(|error| match error {
            regex::Error::CompiledTooBig(_) => syntax(TOO_LARGE, pattern),
            source => RegexError::Engine {
                pattern: pattern.to_string(),
                source,
            },
        })
    }

    /// Go's `MatchString`: whether the pattern matches anywhere in `text`.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

fn on_deep_stack<T: Send>(work: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("go-regexp-compile".to_string())
            .stack_size(DEEP_STACK)
            .spawn_scoped(scope, work)?;
        Ok(worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

/// The flags that change what a pattern matches (`U` changes only which match is preferred).
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    fold: bool,
    multiline: bool,
    dot_newline: bool,
}

/// A parsed part of the pattern: its `regex` rewriting and what Go's limits measure on its parse tree.
#[derive(Debug)]
struct Fragment {
    text: String,
    /// Whether a repetition operator may follow `text` directly.
    atomic: bool,
    shape: Shape,
    /// Height of Go's parse tree.
    height: u32,
    /// Go's estimate of the instructions it compiles to.
    size: u64,
    /// The largest product of counted repetitions along a path through it.
    repeats: u64,
    /// How deeply groups, classes and repetitions nest in `text`.
    nest: u32,
}

/// What Go's parser makes of a fragment, as far as its tree's height depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// One character (`fold` under `(?i)`): Go joins neighbouring ones of the same case mode into one node.
    Literal {
        fold: bool,
    },
    /// A class or `.`: Go merges an alternation of these and single characters into one class.
    Class,
    /// Go flattens a concatenation inside a concatenation, and an alternation inside an alternation.
    Concatenation,
    Alternation,
    Other,
}

impl Shape {
    fn is_char(self) -> bool {
        matches!(self, Self::Literal { .. } | Self::Class)
    }
}

impl Fragment {
    fn leaf(text: String, shape: Shape, nest: u32) -> Self {
        Self {
            text,
            atomic: true,
            shape,
            height: 1,
            size: 1,
            repeats: 1,
            nest,
        }
    }

    fn empty() -> Self {
        Self {
            atomic: false,
            ..Self::leaf(String::new(), Shape::Other, 0)
        }
    }

    /// Height below a new `shape` node, which absorbs a child of the same shape.
    fn height_under(&self, shape: Shape) -> u32 {
        if self.shape == shape {
            self.height - 1
        } else {
            self.height
        }
    }

    fn concatenation(mut items: Vec<Fragment>) -> Self {
        if items.len() <= 1 {
            return items.pop().unwrap_or_else(Self::empty);
        }
        let one_string =
            matches!(items[0].shape, Shape::Literal { .. }) && items.iter().all(|i| i.shape == items[0].shape);
        Self {
            text: items.iter().map(|item| item.text.as_str()).collect(),
            atomic: false,
            shape: if one_string { Shape::Other } else { Shape::Concatenation },
            height: if one_string {
                1
            } else {
                1 + max_of(&items, |item| item.height_under(Shape::Concatenation))
            },
            size: items.iter().fold(0, |sum, item| sum.saturating_add(item.size)),
            repeats: max_of(&items, |item| item.repeats),
            nest: max_of(&items, |item| item.nest),
        }
    }

    fn alternation(mut alternatives: Vec<Fragment>) -> Self {
        if alternatives.len() <= 1 {
            return alternatives.pop().unwrap_or_else(Self::empty);
        }
        let texts: Vec<&str> = alternatives.iter().map(|a| a.text.as_str()).collect();
        let one_class = alternatives.iter().all(|a| a.shape.is_char());
        Self {
            text: format!("(?:{})", texts.join("|")),
            atomic: true,
            shape: if one_class { Shape::Class } else { Shape::Alternation },
            height: if one_class {
                1
            } else {
                1 + max_of(&alternatives, |a| a.height_under(Shape::Alternation))
            },
            size: if one_class {
                1
            } else {
                alternatives
                    .iter()
                    .fold(alternatives.len() as u64 - 1, |sum, a| sum.saturating_add(a.size))
            },
            repeats: max_of(&alternatives, |a| a.repeats),
            nest: 1 + max_of(&alternatives, |a| a.nest),
        }
    }

    fn repeated(self, repeat: Repeat) -> Self {
        let body = if self.atomic {
            self.text
        } else {
            format!("(?:{})", self.text)
        };
        // Go's `calcSize` and the factor `repeatIsValid` divides by.
        let (size, factor) = match repeat {
            Repeat::Star => (self.size.saturating_add(2), 1),
            Repeat::Plus | Repeat::Quest => (self.size.saturating_add(1), 1),
            Repeat::Counted { min: 0, max: None } => (self.size.saturating_add(2), 1),
            Repeat::Counted { min, max: None } => (u64::from(min).saturating_mul(self.size).saturating_add(1), min),
            // A subtree repeated zero times is never checked.
            Repeat::Counted { max: Some(0), .. } => (1, 0),
            Repeat::Counted { min, max: Some(max) } => (
                u64::from(max)
                    .saturating_mul(self.size)
                    .saturating_add(u64::from(max - min)),
                max,
            ),
        };
        Self {
            text: format!("{body}{}", repeat.operator()),
            atomic: false,
            shape: Shape::Other,
            height: self.height + 1,
            size: size.max(1),
            repeats: if factor == 0 {
                1
            } else {
                self.repeats.saturating_mul(u64::from(factor))
            },
            nest: self.nest + 2,
        }
    }
}

fn max_of<T: Ord + Default>(items: &[Fragment], measure: impl Fn(&Fragment) -> T) -> T {
    items.iter().map(measure).max().unwrap_or_default()
}

#[derive(Debug, Clone, Copy)]
enum Repeat {
    Star,
    Plus,
    Quest,
    /// `{min}`, `{min,}` (no `max`) or `{min,max}`.
    Counted {
        min: u32,
        max: Option<u32>,
    },
}

impl Repeat {
    fn operator(self) -> String {
        match self {
            Self::Star => "*".to_string(),
            Self::Plus => "+".to_string(),
            Self::Quest => "?".to_string(),
            Self::Counted { min, max: None } => format!("{{{min},}}"),
            Self::Counted { min, max: Some(max) } if max == min => format!("{{{min}}}"),
            Self::Counted { min, max: Some(max) } => format!("{{{min},{max}}}"),
        }
    }
}

/// A group being parsed.
#[derive(Debug)]
struct Frame {
    /// The flags before the group, in force again after its `)`.
    outer_flags: Flags,
    capture: bool,
    alternatives: Vec<Fragment>,
    items: Vec<Fragment>,
}

/// Go's `regexp/syntax` parser, in the order it reads and refuses, writing `regex` syntax.
#[derive(Debug)]
struct Parser<'a> {
    pattern: &'a str,
    pos: usize,
    flags: Flags,
    /// Open groups; the first is the whole pattern.
    frames: Vec<Frame>,
}

impl<'a> Parser<'a> {
    fn new(pattern: &'a str) -> Self {
        let mut parser = Self {
            pattern,
            pos: 0,
            flags: Flags::default(),
            frames: Vec::new(),
        };
        parser.open(false);
        parser
    }

    fn rest(&self) -> &'a str {
        &self.pattern[self.pos..]
    }

    fn frame(&mut self) -> &mut Frame {
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    fn parse(mut self) -> Result<Fragment> {
        // Where the repetition operator just read began: a second one right after it is refused.
        let mut last_repeat: Option<usize> = None;
        while let Some(c) = self.rest().chars().next() {
            let mut repeat = None;
            match c {
                '(' if self.rest().starts_with("(?") => self.parse_flags_or_name()?,
                '(' => {
                    self.pos += 1;
                    self.open(true);
                }
                '|' => {
                    self.pos += 1;
                    self.end_alternative()?;
                }
                ')' => {
                    self.pos += 1;
                    self.close()?;
                }
                '^' | '$' | '.' => {
                    self.pos += 1;
                    let text = match (c, self.flags) {
                        ('^', Flags { multiline: true, .. }) => "(?m:^)",
                        ('^', _) => r"\A",
                        ('$', Flags { multiline: true, .. }) => "(?m:$)",
                        ('$', _) => r"\z",
                        (_, Flags { dot_newline: true, .. }) => "(?s:.)",
                        _ => ".",
                    };
                    let shape = if c == '.' { Shape::Class } else { Shape::Other };
                    self.push(Fragment::leaf(text.to_string(), shape, 1))?;
                }
                '[' => self.parse_class()?,
                '*' | '+' | '?' => {
                    let start = self.pos;
                    self.pos += 1;
                    let operator = match c {
                        '*' => Repeat::Star,
                        '+' => Repeat::Plus,
                        _ => Repeat::Quest,
                    };
                    self.repeat(operator, start, last_repeat)?;
                    repeat = Some(start);
                }
                '{' => match counted_repeat(self.rest()) {
                    // A `{` that starts no repetition is a literal.
                    None => {
                        self.pos += 1;
                        self.literal(u32::from('{'))?;
                    }
                    Some((min, max, length)) => {
                        let start = self.pos;
                        self.pos += length;
                        if !(0..=1000).contains(&min) || max > 1000 || (max >= 0 && min > max) {
                            return Err(syntax(INVALID_REPEAT_SIZE, &self.pattern[start..self.pos]));
                        }
                        let counted = Repeat::Counted {
                            min: min as u32,
                            max: u32::try_from(max).ok(),
                        };
                        self.repeat(counted, start, last_repeat)?;
                        repeat = Some(start);
                    }
                },
                '\\' => self.parse_backslash()?,
                _ => {
                    self.pos += c.len_utf8();
                    self.literal(u32::from(c))?;
                }
            }
            last_repeat = repeat;
        }
        if self.frames.len() > 1 {
            return Err(syntax(MISSING_PAREN, self.pattern));
        }
        let Some(top) = self.frames.pop() else {
            return Err(syntax(MISSING_PAREN, self.pattern));
        };
        self.group(top)
    }

    /// Checks Go's size and height limits on a new part of the parse tree.
    fn check_limits(&self, fragment: &Fragment) -> Result<()> {
        if fragment.size > MAX_SIZE {
            return Err(syntax(TOO_LARGE, self.pattern));
        }
        if fragment.height > MAX_HEIGHT {
            return Err(syntax(NESTING_DEPTH, self.pattern));
        }
        Ok(())
    }

    fn push(&mut self, fragment: Fragment) -> Result<()> {
        self.check_limits(&fragment)?;
        self.frame().items.push(fragment);
        Ok(())
    }

    /// One character (a code point: `\x{D800}` is a surrogate, which Go accepts and no text contains).
    fn literal(&mut self, code: u32) -> Result<()> {
        let fold = self.flags.fold;
        let (text, nest) = match char::from_u32(code) {
            Some(c) if fold => (format!("(?i:{})", regex::escape(c.encode_utf8(&mut [0; 4]))), 1),
            Some(c) => (regex::escape(c.encode_utf8(&mut [0; 4])), 0),
            None => (NOTHING.to_string(), 1),
        };
        self.push(Fragment::leaf(text, Shape::Literal { fold }, nest))
    }

    /// A character class, as `regex` class text (`[…]`), case-folded under `(?i)` as Go folds it.
    fn class(&mut self, class: String) -> Result<()> {
        if self.flags.fold {
            self.push(Fragment::leaf(format!("(?i:{class})"), Shape::Class, 4))
        } else {
            self.push(Fragment::leaf(class, Shape::Class, 3))
        }
    }

    fn open(&mut self, capture: bool) {
        self.frames.push(Frame {
            outer_flags: self.flags,
            capture,
            alternatives: Vec::new(),
            items: Vec::new(),
        });
    }

    fn end_alternative(&mut self) -> Result<()> {
        let items = std::mem::take(&mut self.frame().items);
        let concatenation = Fragment::concatenation(items);
        self.check_limits(&concatenation)?;
        self.frame().alternatives.push(concatenation);
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        if self.frames.len() < 2 {
            return Err(syntax(UNEXPECTED_PAREN, self.pattern));
        }
        let Some(frame) = self.frames.pop() else {
            return Err(syntax(UNEXPECTED_PAREN, self.pattern));
        };
        self.flags = frame.outer_flags;
        let group = self.group(frame)?;
        self.push(group)
    }

    /// The fragment of a finished group: a non-capturing group is its contents, as in Go's tree.
    fn group(&self, mut frame: Frame) -> Result<Fragment> {
        let concatenation = Fragment::concatenation(frame.items);
        self.check_limits(&concatenation)?;
        frame.alternatives.push(concatenation);
        let mut group = Fragment::alternation(frame.alternatives);
        self.check_limits(&group)?;
        if frame.capture {
            group.height += 1;
            group.size = group.size.saturating_add(2);
            group.shape = Shape::Other;
        }
        Ok(group)
    }

    /// `*`, `+`, `?` or a counted repetition, read from `start` to `self.pos`, applied to the last item.
    fn repeat(&mut self, repeat: Repeat, start: usize, last_repeat: Option<usize>) -> Result<()> {
        // A `?` making it non-greedy changes which match is found, not whether there is one.
        if self.rest().starts_with('?') {
            self.pos += 1;
        }
        let written = &self.pattern[start..self.pos];
        if let Some(previous) = last_repeat {
            return Err(syntax(INVALID_REPEAT_OP, &self.pattern[previous..self.pos]));
        }
        let Some(item) = self.frame().items.pop() else {
            return Err(syntax(MISSING_REPEAT_ARGUMENT, written));
        };
        let repeated = item.repeated(repeat);
        self.check_limits(&repeated)?;
        if let Repeat::Counted { min, max } = repeat
            && (min >= 2 || max.is_some_and(|max| max >= 2))
            && repeated.repeats > MAX_REPEAT
        {
            return Err(syntax(INVALID_REPEAT_SIZE, written));
        }
        self.frame().items.push(repeated);
        Ok(())
    }

    /// `(?flags)`, `(?flags:`, `(?P<name>` or `(?<name>` (Go's `parsePerlFlags`).
    fn parse_flags_or_name(&mut self) -> Result<()> {
        let rest = self.rest();
        let bytes = rest.as_bytes();
        let name_start = if rest.len() > 4 && bytes[2] == b'P' && bytes[3] == b'<' {
            Some(4)
        } else if rest.len() > 3 && bytes[2] == b'<' {
            Some(3)
        } else {
            None
        };
        if let Some(name_start) = name_start {
            let Some(end) = rest.find('>') else {
                return Err(syntax(INVALID_NAMED_CAPTURE, rest));
            };
            let name = &rest[name_start..end];
            if name.is_empty() || !name.bytes().all(|b| b == b'_' || b.is_ascii_alphanumeric()) {
                return Err(syntax(INVALID_NAMED_CAPTURE, &rest[..=end]));
            }
            self.pos += end + 1;
            self.open(true);
            return Ok(());
        }
        let mut flags = self.flags;
        let mut negated = false;
        let mut saw_flag = false;
        let mut read = 2;
        for c in rest[2..].chars() {
            read += c.len_utf8();
            match c {
                'i' | 'm' | 's' | 'U' => {
                    match c {
                        'i' => flags.fold = !negated,
                        'm' => flags.multiline = !negated,
                        's' => flags.dot_newline = !negated,
                        _ => {}
                    }
                    saw_flag = true;
                }
                '-' if !negated => {
                    negated = true;
                    saw_flag = false;
                }
                ':' | ')' if !negated || saw_flag => {
                    self.pos += read;
                    if c == ':' {
                        self.open(false);
                    }
                    self.flags = flags;
                    return Ok(());
                }
                _ => break,
            }
        }
        Err(syntax(INVALID_PERL_OP, &rest[..read]))
    }

    /// A backslash outside a class: an assertion, `\Q…\E`, a class or one escaped character.
    fn parse_backslash(&mut self) -> Result<()> {
        let rest = self.rest();
        let assertion = match rest.as_bytes().get(1) {
            Some(b'A') => r"\A",
            Some(b'z') => r"\z",
            Some(b'b') => r"(?-u:\b)",
            Some(b'B') => r"(?-u:\B)",
            Some(b'C') => return Err(syntax(INVALID_ESCAPE, r"\C")),
            Some(b'Q') => {
                let quoted = &rest[2..];
                let (literal, read) = match quoted.find(r"\E") {
                    Some(end) => (&quoted[..end], end + 4),
                    None => (quoted, rest.len()),
                };
                self.pos += read;
                for c in literal.chars() {
                    self.literal(u32::from(c))?;
                }
                return Ok(());
            }
            _ => "",
        };
        if !assertion.is_empty() {
            self.pos += 2;
            return self.push(Fragment::leaf(assertion.to_string(), Shape::Other, 1));
        }
        if rest.starts_with(r"\p") || rest.starts_with(r"\P") {
            let (class, read) = unicode_class(rest)?;
            self.pos += read;
            return self.class(format!("[{class}]"));
        }
        if let Some((ranges, negated)) = perl_class(rest) {
            self.pos += 2;
            return self.class(ascii_class(ranges, negated));
        }
        let (code, read) = escape(rest)?;
        self.pos += read;
        self.literal(code)
    }

    /// `[…]` (Go's `parseClass`): `]` first is literal, and so are `[`, `&&`, `--` and `~~`.
    fn parse_class(&mut self) -> Result<()> {
        let whole = self.rest();
        let mut rest = &whole[1..];
        let negated = rest.starts_with('^');
        if negated {
            rest = &rest[1..];
        }
        let mut body = String::new();
        let mut first = true;
        while first || !rest.starts_with(']') {
            first = false;
            if rest.len() > 2
                && rest.starts_with("[:")
                && let Some(end) = rest[2..].find(":]")
            {
                let name = &rest[..end + 4];
                let (ranges, negated) = posix_class(name).ok_or_else(|| syntax(INVALID_CHAR_RANGE, name))?;
                body.push_str(&ascii_class(ranges, negated));
                rest = &rest[name.len()..];
                continue;
            }
            if rest.starts_with(r"\p") || rest.starts_with(r"\P") {
                let (class, read) = unicode_class(rest)?;
                body.push_str(&class);
                rest = &rest[read..];
                continue;
            }
            if let Some((ranges, negated)) = perl_class(rest) {
                body.push_str(&ascii_class(ranges, negated));
                rest = &rest[2..];
                continue;
            }
            let range = rest;
            let (lo, read) = class_char(rest, whole)?;
            rest = &rest[read..];
            let mut hi = lo;
            if rest.len() >= 2 && rest.starts_with('-') && !rest[1..].starts_with(']') {
                let (end, read) = class_char(&rest[1..], whole)?;
                rest = &rest[1 + read..];
                hi = end;
                if hi < lo {
                    return Err(syntax(INVALID_CHAR_RANGE, &range[..range.len() - rest.len()]));
                }
            }
            push_range(&mut body, lo, hi);
        }
        self.pos = self.pattern.len() - rest.len() + 1;
        let class = match (body.is_empty(), negated) {
            // Only surrogates, which no text contains.
            (true, false) => NOTHING.to_string(),
            (true, true) => r"[\x{0}-\x{10FFFF}]".to_string(),
            (false, false) => format!("[{body}]"),
            (false, true) => format!("[^{body}]"),
        };
        self.class(class)
    }
}

/// Go's `parseRepeat` on text starting with `{`: `{n}`, `{n,}` or `{n,m}` as (min, max, length), with
/// max -1 for `{n,}` and min -1 for a count too large to read; `None` when no repetition starts there.
fn counted_repeat(text: &str) -> Option<(i64, i64, usize)> {
    let bytes = text.as_bytes();
    let (mut min, digits) = decimal(&text[1..])?;
    let mut i = 1 + digits;
    let max = if *bytes.get(i)? == b',' {
        i += 1;
        if *bytes.get(i)? == b'}' {
            -1
        } else {
            let (max, digits) = decimal(&text[i..])?;
            i += digits;
            if max < 0 {
                min = -1;
            }
            max
        }
    } else {
        min
    };
    (bytes.get(i) == Some(&b'}')).then_some((min, max, i + 1))
}

/// Go's `parseInt`: a decimal number without leading zeros, -1 once it reaches 10^8, and its length.
fn decimal(text: &str) -> Option<(i64, usize)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || (digits > 1 && text.starts_with('0')) {
        return None;
    }
    let mut value: i64 = 0;
    for digit in text[..digits].bytes() {
        if value >= 100_000_000 {
            return Some((-1, digits));
        }
        value = value * 10 + i64::from(digit - b'0');
    }
    Some((value, digits))
}

/// One character of a class, `text` being what follows in the class and `whole_class` the class from `[`.
fn class_char(text: &str, whole_class: &str) -> Result<(u32, usize)> {
    match text.chars().next() {
        None => Err(syntax(MISSING_BRACKET, whole_class)),
        Some('\\') => escape(text),
        Some(c) => Ok((u32::from(c), c.len_utf8())),
    }
}

/// Go's `parseEscape` on text starting with `\`: the code point and how many bytes it took.
fn escape(text: &str) -> Result<(u32, usize)> {
    let invalid = |end: usize| syntax(INVALID_ESCAPE, &text[..end]);
    let next = |at: usize| text.get(at..).and_then(|rest| rest.chars().next());
    let octal = |at: usize| {
        text.as_bytes()
            .get(at)
            .filter(|b| (b'0'..=b'7').contains(*b))
            .map(|b| u32::from(b - b'0'))
    };
    let Some(c) = next(1) else {
        return Err(syntax(TRAILING_BACKSLASH, ""));
    };
    let mut end = 1 + c.len_utf8();
    match c {
        // A lone digit would be a backreference, which Go does not support.
        '1'..='7' if octal(end).is_none() => Err(invalid(end)),
        '0'..='7' => {
            let mut value = u32::from(c) - u32::from('0');
            while end < 4
                && let Some(digit) = octal(end)
            {
                value = value * 8 + digit;
                end += 1;
            }
            Ok((value, end))
        }
        'x' => {
            let Some(first) = next(end) else {
                return Err(invalid(end));
            };
            end += first.len_utf8();
            if first != '{' {
                let second = next(end);
                end += second.map_or(0, char::len_utf8);
                return match (first.to_digit(16), second.and_then(|c| c.to_digit(16))) {
                    (Some(high), Some(low)) => Ok((high * 16 + low, end)),
                    _ => Err(invalid(end)),
                };
            }
            let mut value = 0;
            let mut digits = 0;
            loop {
                let Some(c) = next(end) else {
                    return Err(invalid(end));
                };
                end += c.len_utf8();
                if c == '}' {
                    break;
                }
                let Some(digit) = c.to_digit(16) else {
                    return Err(invalid(end));
                };
                value = value * 16 + digit;
                if value > 0x10FFFF {
                    return Err(invalid(end));
                }
                digits += 1;
            }
            if digits == 0 {
                return Err(invalid(end));
            }
            Ok((value, end))
        }
        'a' => Ok((0x07, end)),
        'f' => Ok((0x0C, end)),
        'n' => Ok((0x0A, end)),
        'r' => Ok((0x0D, end)),
        't' => Ok((0x09, end)),
        'v' => Ok((0x0B, end)),
        // Any other ASCII punctuation or symbol stands for itself; `\<` is not a word boundary.
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok((u32::from(c), end)),
        _ => Err(invalid(end)),
    }
}

/// Adds `lo-hi` to a class body, without surrogates (`regex` refuses them and no text contains them).
fn push_range(body: &mut String, lo: u32, hi: u32) {
    for (lo, hi) in [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi)] {
        if lo <= hi {
            let _ = write!(body, r"\x{{{lo:X}}}-\x{{{hi:X}}}");
        }
    }
}

/// An ASCII class (Perl or POSIX) as a `regex` class, spelled out so that it stays ASCII.
fn ascii_class(ranges: &[(u32, u32)], negated: bool) -> String {
    let mut class = String::from(if negated { "[^" } else { "[" });
    for &(lo, hi) in ranges {
        push_range(&mut class, lo, hi);
    }
    class.push(']');
    class
}

const DIGIT: &[(u32, u32)] = &[(0x30, 0x39)];
const SPACE: &[(u32, u32)] = &[(0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)];
const WORD: &[(u32, u32)] = &[(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)];

/// `\d \D \s \S \w \W` at the start of `text`, as (ranges, negated).
fn perl_class(text: &str) -> Option<(&'static [(u32, u32)], bool)> {
    let rest = text.strip_prefix('\\')?;
    Some(match rest.as_bytes().first()? {
        b'd' => (DIGIT, false),
        b'D' => (DIGIT, true),
        b's' => (SPACE, false),
        b'S' => (SPACE, true),
        b'w' => (WORD, false),
        b'W' => (WORD, true),
        _ => return None,
    })
}

/// `[:name:]` or `[:^name:]`, as (ranges, negated).
fn posix_class(name: &str) -> Option<(&'static [(u32, u32)], bool)> {
    let inner = name.strip_prefix("[:")?.strip_suffix(":]")?;
    let (inner, negated) = match inner.strip_prefix('^') {
        Some(inner) => (inner, true),
        None => (inner, false),
    };
    let ranges: &'static [(u32, u32)] = match inner {
        "alnum" => &[(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)],
        "alpha" => &[(0x41, 0x5A), (0x61, 0x7A)],
        "ascii" => &[(0x00, 0x7F)],
        "blank" => &[(0x09, 0x09), (0x20, 0x20)],
        "cntrl" => &[(0x00, 0x1F), (0x7F, 0x7F)],
        "digit" => DIGIT,
        "graph" => &[(0x21, 0x7E)],
        "lower" => &[(0x61, 0x7A)],
        "print" => &[(0x20, 0x7E)],
        "punct" => &[(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
        "space" => &[(0x09, 0x0D), (0x20, 0x20)],
        "upper" => &[(0x41, 0x5A)],
        "word" => WORD,
        "xdigit" => &[(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
        _ => return None,
    };
    Some((ranges, negated))
}

/// Go 1.24's `unicode.Categories`.
const CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N", "Nd", "Nl", "No", "P",
    "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So", "Z", "Zl", "Zp", "Zs",
];

/// Go 1.24's `unicode.Scripts` (Unicode 15.0).
#[rustfmt::skip]
const SCRIPTS: &[&str] = &[
    "Adlam", "Ahom", "Anatolian_Hieroglyphs", "Arabic", "Armenian", "Avestan", "Balinese", "Bamum",
    "Bassa_Vah", "Batak", "Bengali", "Bhaiksuki", "Bopomofo", "Brahmi", "Braille", "Buginese", "Buhid",
    "Canadian_Aboriginal", "Carian", "Caucasian_Albanian", "Chakma", "Cham", "Cherokee", "Chorasmian", "Common",
    "Coptic", "Cuneiform", "Cypriot", "Cypro_Minoan", "Cyrillic", "Deseret", "Devanagari", "Dives_Akuru",
    "Dogra", "Duployan", "Egyptian_Hieroglyphs", "Elbasan", "Elymaic", "Ethiopic", "Georgian", "Glagolitic",
    "Gothic", "Grantha", "Greek", "Gujarati", "Gunjala_Gondi", "Gurmukhi", "Han", "Hangul", "Hanifi_Rohingya",
    "Hanunoo", "Hatran", "Hebrew", "Hiragana", "Imperial_Aramaic", "Inherited", "Inscriptional_Pahlavi",
    "Inscriptional_Parthian", "Javanese", "Kaithi", "Kannada", "Katakana", "Kawi", "Kayah_Li", "Kharoshthi",
    "Khitan_Small_Script", "Khmer", "Khojki", "Khudawadi", "Lao", "Latin", "Lepcha", "Limbu", "Linear_A",
    "Linear_B", "Lisu", "Lycian", "Lydian", "Mahajani", "Makasar", "Malayalam", "Mandaic", "Manichaean",
    "Marchen", "Masaram_Gondi", "Medefaidrin", "Meetei_Mayek", "Mende_Kikakui", "Meroitic_Cursive",
    "Meroitic_Hieroglyphs", "Miao", "Modi", "Mongolian", "Mro", "Multani", "Myanmar", "Nabataean",
    "Nag_Mundari", "Nandinagari", "New_Tai_Lue", "Newa", "Nko", "Nushu", "Nyiakeng_Puachue_Hmong", "Ogham",
    "Ol_Chiki", "Old_Hungarian", "Old_Italic", "Old_North_Arabian", "Old_Permic", "Old_Persian", "Old_Sogdian",
    "Old_South_Arabian", "Old_Turkic", "Old_Uyghur", "Oriya", "Osage", "Osmanya", "Pahawh_Hmong", "Palmyrene",
    "Pau_Cin_Hau", "Phags_Pa", "Phoenician", "Psalter_Pahlavi", "Rejang", "Runic", "Samaritan", "Saurashtra",
    "Sharada", "Shavian", "Siddham", "SignWriting", "Sinhala", "Sogdian", "Sora_Sompeng", "Soyombo",
    "Sundanese", "Syloti_Nagri", "Syriac", "Tagalog", "Tagbanwa", "Tai_Le", "Tai_Tham", "Tai_Viet", "Takri",
    "Tamil", "Tangsa", "Tangut", "Telugu", "Thaana", "Thai", "Tibetan", "Tifinagh", "Tirhuta", "Toto",
    "Ugaritic", "Vai", "Vithkuqi", "Wancho", "Warang_Citi", "Yezidi", "Yi", "Zanabazar_Square",
];

/// `\pN`, `\p{Name}`, `\PN` or `\P{Name}` at the start of `text` (Go's `parseUnicodeClass`), as text for
/// inside a `regex` class, and how many bytes it took.
fn unicode_class(text: &str) -> Result<(String, usize)> {
    let mut negated = text.as_bytes()[1] == b'P';
    let (sequence, name) = match text[2..].chars().next() {
        Some('{') => {
            let Some(end) = text.find('}') else {
                return Err(syntax(INVALID_CHAR_RANGE, text));
            };
            (&text[..=end], &text[3..end])
        }
        Some(letter) => (&text[..2 + letter.len_utf8()], &text[2..2 + letter.len_utf8()]),
        None => (&text[..2], ""),
    };
    let name = match name.strip_prefix('^') {
        Some(name) => {
            negated = !negated;
            name
        }
        None => name,
    };
    let (positive, negative) = match name {
        "Any" => (r"\p{Any}".to_string(), r"\P{Any}".to_string()),
        // Go's C is Cc, Cf, Co and Cs: its tables have no Cn. No text contains a surrogate (Cs).
        "C" => (
            r"\p{gc=Cc}\p{gc=Cf}\p{gc=Co}".to_string(),
            r"[^\p{gc=Cc}\p{gc=Cf}\p{gc=Co}]".to_string(),
        ),
        "Cs" => (r"\P{Any}".to_string(), r"\p{Any}".to_string()),
        _ if CATEGORIES.contains(&name) => (format!(r"\p{{gc={name}}}"), format!(r"\P{{gc={name}}}")),
        // `sc=`: Go's script tables are the Script property, not Script_Extensions.
        _ if SCRIPTS.contains(&name) => (format!(r"\p{{sc={name}}}"), format!(r"\P{{sc={name}}}")),
        _ => return Err(syntax(INVALID_CHAR_RANGE, sequence)),
    };
    Ok((if negated { negative } else { positive }, sequence.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// What Go's `regexp` does with each pattern, recorded by `apiserver/tools/go-regexp-cases`.
    #[derive(Debug, Deserialize)]
    struct Recorded {
        categories: Vec<String>,
        scripts: Vec<String>,
        cases: Vec<Case>,
    }

    #[derive(Debug, Deserialize)]
    struct Case {
        pattern: String,
        #[serde(default)]
        error: Option<String>,
        #[serde(default)]
        texts: Vec<String>,
        #[serde(default)]
        matches: Vec<bool>,
    }

    fn recorded() -> Recorded {
        serde_json::from_str(include_str!("testdata/go_regexp_cases.json")).expect("go_regexp_cases.json parses")
    }

    fn shorten(text: &str) -> String {
        if text.chars().count() > 60 {
            format!("{}… ({} bytes)", text.chars().take(40).collect::<String>(), text.len())
        } else {
            text.to_string()
        }
    }

    fn matches(pattern: &str, text: &str) -> bool {
        Regex::new(pattern)
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
            .is_match(text)
    }

    fn error(pattern: &str) -> String {
        Regex::new(pattern).err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn compiles_matches_and_refuses_as_go_does() {
        let cases = recorded().cases;
        assert!(cases.len() > 250, "{} recorded cases", cases.len());
        let mut differences = Vec::new();
        for case in &cases {
            let pattern = shorten(&case.pattern);
            match (Regex::new(&case.pattern), &case.error) {
                (Ok(_), Some(expected)) => differences.push(format!("{pattern:?}: compiled, Go says {expected}")),
                (Err(got), None) => differences.push(format!("{pattern:?}: {got}, Go compiles it")),
                (Err(got), Some(expected)) if got.to_string() != *expected => {
                    differences.push(format!(
                        "{pattern:?}: {}, Go says {}",
                        shorten(&got.to_string()),
                        shorten(expected)
                    ));
                }
                (Err(_), Some(_)) => {}
                (Ok(regex), None) => {
                    for (text, expected) in case.texts.iter().zip(&case.matches) {
                        if regex.is_match(text) != *expected {
                            differences.push(format!("{pattern:?} on {:?}: Go says {expected}", shorten(text)));
                        }
                    }
                }
            }
        }
        assert!(
            differences.is_empty(),
            "{} differences from Go:\n{}",
            differences.len(),
            differences.join("\n")
        );
    }

    #[test]
    fn knows_go_1_24_unicode_names() {
        let recorded = recorded();
        // Go 1.25 added Cn and LC to unicode.Categories.
        let mut expected: Vec<&str> = CATEGORIES.to_vec();
        expected.extend(["Cn", "LC"]);
        expected.sort_unstable();
        assert_eq!(recorded.categories, expected);
        assert_eq!(recorded.scripts, SCRIPTS);
        for name in CATEGORIES.iter().chain(SCRIPTS) {
            for pattern in [format!(r"\p{{{name}}}"), format!(r"(?i)[^\P{{^{name}}}]")] {
                assert!(Regex::new(&pattern).is_ok(), "{pattern}");
            }
        }
    }

    #[test]
    fn unicode_names_are_go_1_24s() {
        // Go 1.25 accepts aliases, loose names, Cn, LC, ASCII and Assigned; kube-apiserver v1.33 (Go 1.24) does not.
        for name in [
            "Letter",
            "greek",
            "lu",
            "Cn",
            "LC",
            "ASCII",
            "Assigned",
            "Script=Greek",
            "Is_Greek",
        ] {
            assert_eq!(
                error(&format!(r"\p{{{name}}}")),
                format!("error parsing regexp: invalid character class range: `\\p{{{name}}}`")
            );
        }
        // Go 1.24 finds multi-word scripts, which go1.26.8 does not.
        assert!(matches(r"^\p{Old_Italic}+$", "𐌀𐌁"));
        assert!(matches(r"^\p{Canadian_Aboriginal}$", "ᐁ"));
        // Go 1.24's C has no unassigned code points (U+0378 is unassigned in every Unicode version).
        assert!(matches(r"\p{C}", "\u{1}"));
        assert!(matches(r"\p{C}", "\u{200b}"));
        assert!(!matches(r"\p{C}", "\u{378}"));
        assert!(matches(r"\P{C}", "\u{378}"));
        assert!(!matches(r"[^\P{C}]", "\u{378}"));
    }

    #[test]
    fn letters_of_scripts_and_categories() {
        assert!(matches(r"^\p{Thai}+$", "ภาษาไทย"));
        assert!(!matches(r"\p{Thai}", "thai"));
        assert!(matches(r"^\p{Lu}$", "Σ"));
        assert!(!matches(r"\p{Lu}", "σ"));
        assert!(!matches(r"\p{Lu}", "ǅ"), "titlecase is Lt");
        assert!(matches(r"(?i)^\p{Lu}$", "σ"));
        assert!(matches("(?i)straße", "STRAẞE"));
        assert!(!matches("(?i)straße", "STRASSE"), "simple case folding only, as Go");
        assert!(matches("(?i)σ", "ς"));
    }

    #[test]
    fn errors_use_go_wording() {
        assert_eq!(error("(abc"), "error parsing regexp: missing closing ): `(abc`");
        assert_eq!(error("abc)"), "error parsing regexp: unexpected ): `abc)`");
        assert_eq!(error("[abc"), "error parsing regexp: missing closing ]: `[abc`");
        assert_eq!(
            error("+"),
            "error parsing regexp: missing argument to repetition operator: `+`"
        );
        assert_eq!(
            error("a**"),
            "error parsing regexp: invalid nested repetition operator: `**`"
        );
        assert_eq!(error(r"\q"), r"error parsing regexp: invalid escape sequence: `\q`");
        assert_eq!(
            error("[z-a]"),
            "error parsing regexp: invalid character class range: `z-a`"
        );
        assert_eq!(
            error("(?=a)"),
            "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
        );
        assert_eq!(
            error("(?P<a-b>x)"),
            "error parsing regexp: invalid named capture: `(?P<a-b>`"
        );
        assert_eq!(error("a{1001}"), "error parsing regexp: invalid repeat count: `{1001}`");
        assert_eq!(
            error("a\\"),
            "error parsing regexp: trailing backslash at end of expression: ``"
        );
    }

    #[test]
    fn deep_nesting_compiles_on_a_stack_of_its_own() {
        // Go's height limit: 499 nested `(…)*` are 999 levels. The regex compiler recurses per level.
        let pattern = format!("{}a{}", "(".repeat(499), ")*".repeat(499));
        let regex = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || Regex::new(&pattern).map(|regex| regex.is_match("aaa")))
            .expect("thread starts")
            .join()
            .expect("no stack overflow");
        assert!(regex.expect("compiles"));
    }

    #[test]
    fn large_unicode_repetitions_compile() {
        // Beyond the regex crate's default 10 MiB, within Go's limits.
        assert!(matches(r"^\p{L}{1,300}$", &"ж".repeat(300)));
        assert!(!matches(r"^\p{L}{1,300}$", &"ж".repeat(301)));
    }
}
