//! A linear-time matcher for Go (RE2) regular expressions, as used by schema `pattern` and formats.
//!
//! Go's `regexp` is RE2: no backreferences or lookaround, `$` is end of text unless `(?m)`,
//! `\s` is `[\t\n\f\r ]`, negated classes match newlines. Patterns are compiled to a Pike VM,
//! so matching never backtracks. Parse errors carry Go's wording
//! (`error parsing regexp: missing closing ): `(abc``). Unicode classes (`\p{L}` …) are
//! approximated with Rust's character predicates and a few script ranges.

/// Why a pattern failed to compile, worded as Go's `regexp/syntax.Error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RegexError {
    /// A syntax error: `code` is Go's `ErrorCode` text, `expr` the offending fragment.
    #[error("error parsing regexp: {code}: `{expr}`")]
    Syntax { code: &'static str, expr: String },
}

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

const MAX_REPEAT: u32 = 1000;
const MAX_DEPTH: usize = 1000;
const MAX_PROGRAM: usize = 200_000;

fn syntax(code: &'static str, expr: impl Into<String>) -> RegexError {
    RegexError::Syntax {
        code,
        expr: expr.into(),
    }
}

/// A compiled Go regular expression.
#[derive(Debug, Clone)]
pub(crate) struct Regex {
    program: Vec<Inst>,
}

impl Regex {
    /// Compiles `pattern` with Go's default (Perl) flags.
    pub(crate) fn new(pattern: &str) -> Result<Self, RegexError> {
        let mut parser = Parser {
            chars: pattern.chars().collect(),
            pos: 0,
            source: pattern,
        };
        let node = parser.parse_alternation(Flags::default(), 0)?;
        if parser.pos < parser.chars.len() {
            // Only an unmatched ')' stops the top level early.
            return Err(syntax(UNEXPECTED_PAREN, pattern));
        }
        let mut program = Vec::new();
        compile(&node, &mut program)?;
        program.push(Inst::Match);
        Ok(Self { program })
    }

    /// Go's `MatchString`: whether the pattern matches anywhere in `text`.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let mut current = ThreadList::new(self.program.len());
        let mut next = ThreadList::new(self.program.len());
        for pos in 0..=chars.len() {
            if self.add_thread(&mut current, 0, &chars, pos) {
                return true;
            }
            if pos == chars.len() {
                break;
            }
            let c = chars[pos];
            next.clear();
            for index in 0..current.dense.len() {
                let pc = current.dense[index];
                let advances = match &self.program[pc] {
                    Inst::Char(matcher) => matcher.matches(c),
                    Inst::Any { newline } => *newline || c != '\n',
                    _ => false,
                };
                if advances && self.add_thread(&mut next, pc + 1, &chars, pos + 1) {
                    return true;
                }
            }
            std::mem::swap(&mut current, &mut next);
        }
        false
    }

    /// Follows empty transitions from `pc` at `pos`; returns true when a match state is reached.
    fn add_thread(&self, list: &mut ThreadList, pc: usize, chars: &[char], pos: usize) -> bool {
        let mut stack = vec![pc];
        while let Some(pc) = stack.pop() {
            if !list.insert(pc) {
                continue;
            }
            match &self.program[pc] {
                Inst::Match => return true,
                Inst::Jmp(target) => stack.push(*target),
                Inst::Split(first, second) => {
                    stack.push(*second);
                    stack.push(*first);
                }
                Inst::Assert(assertion) => {
                    if assertion.holds(chars, pos) {
                        stack.push(pc + 1);
                    }
                }
                Inst::Char(_) | Inst::Any { .. } => list.dense.push(pc),
            }
        }
        false
    }
}

#[derive(Debug)]
struct ThreadList {
    seen: Vec<bool>,
    touched: Vec<usize>,
    dense: Vec<usize>,
}

impl ThreadList {
    fn new(size: usize) -> Self {
        Self {
            seen: vec![false; size],
            touched: Vec::new(),
            dense: Vec::new(),
        }
    }

    fn insert(&mut self, pc: usize) -> bool {
        if self.seen[pc] {
            return false;
        }
        self.seen[pc] = true;
        self.touched.push(pc);
        true
    }

    fn clear(&mut self) {
        for pc in self.touched.drain(..) {
            self.seen[pc] = false;
        }
        self.dense.clear();
    }
}

#[derive(Debug, Clone)]
enum Inst {
    Char(CharMatcher),
    Any { newline: bool },
    Split(usize, usize),
    Jmp(usize),
    Assert(Assertion),
    Match,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Assertion {
    BeginText,
    EndText,
    BeginLine,
    EndLine,
    WordBoundary,
    NotWordBoundary,
}

impl Assertion {
    fn holds(self, chars: &[char], pos: usize) -> bool {
        let before = pos.checked_sub(1).map(|i| chars[i]);
        let after = chars.get(pos).copied();
        match self {
            Self::BeginText => pos == 0,
            Self::EndText => pos == chars.len(),
            Self::BeginLine => before.is_none_or(|c| c == '\n'),
            Self::EndLine => after.is_none_or(|c| c == '\n'),
            Self::WordBoundary => is_word(before) != is_word(after),
            Self::NotWordBoundary => is_word(before) == is_word(after),
        }
    }
}

fn is_word(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnicodeClass {
    Any,
    Letter,
    Upper,
    Lower,
    TitleOrModifierLetter,
    OtherLetter,
    Mark,
    Number,
    DecimalNumber,
    Punctuation,
    Symbol,
    Separator,
    Control,
    Script(&'static [(u32, u32)]),
}

const LATIN: &[(u32, u32)] = &[
    (0x41, 0x5A),
    (0x61, 0x7A),
    (0xAA, 0xAA),
    (0xBA, 0xBA),
    (0xC0, 0xD6),
    (0xD8, 0xF6),
    (0xF8, 0x24F),
    (0x1E00, 0x1EFF),
];
const GREEK: &[(u32, u32)] = &[(0x370, 0x3FF), (0x1F00, 0x1FFF)];
const CYRILLIC: &[(u32, u32)] = &[(0x400, 0x52F)];
const HAN: &[(u32, u32)] = &[
    (0x2E80, 0x2FDF),
    (0x3005, 0x3007),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2FA1F),
];
const HIRAGANA: &[(u32, u32)] = &[(0x3041, 0x309F)];
const KATAKANA: &[(u32, u32)] = &[(0x30A0, 0x30FF), (0x31F0, 0x31FF)];
const ARABIC: &[(u32, u32)] = &[(0x600, 0x6FF), (0x750, 0x77F)];
const HEBREW: &[(u32, u32)] = &[(0x591, 0x5F4)];

impl UnicodeClass {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "Any" => Self::Any,
            "L" => Self::Letter,
            "Lu" => Self::Upper,
            "Ll" => Self::Lower,
            "Lt" | "Lm" => Self::TitleOrModifierLetter,
            "Lo" => Self::OtherLetter,
            "M" | "Mn" | "Mc" | "Me" => Self::Mark,
            "N" | "Nl" | "No" => Self::Number,
            "Nd" => Self::DecimalNumber,
            "P" | "Pc" | "Pd" | "Ps" | "Pe" | "Pi" | "Pf" | "Po" => Self::Punctuation,
            "S" | "Sm" | "Sc" | "Sk" | "So" => Self::Symbol,
            "Z" | "Zs" | "Zl" | "Zp" => Self::Separator,
            "C" | "Cc" | "Cf" | "Co" | "Cs" => Self::Control,
            "Latin" => Self::Script(LATIN),
            "Greek" => Self::Script(GREEK),
            "Cyrillic" => Self::Script(CYRILLIC),
            "Han" => Self::Script(HAN),
            "Hiragana" => Self::Script(HIRAGANA),
            "Katakana" => Self::Script(KATAKANA),
            "Arabic" => Self::Script(ARABIC),
            "Hebrew" => Self::Script(HEBREW),
            _ => return None,
        })
    }

    fn contains(self, c: char) -> bool {
        match self {
            Self::Any => true,
            Self::Letter => c.is_alphabetic() && !c.is_numeric() && !is_mark(c),
            Self::Upper => c.is_uppercase(),
            Self::Lower => c.is_lowercase(),
            Self::TitleOrModifierLetter => {
                c.is_alphabetic() && !c.is_uppercase() && !c.is_lowercase() && !is_cjk_like(c)
            }
            Self::OtherLetter => c.is_alphabetic() && !c.is_uppercase() && !c.is_lowercase() && !c.is_numeric(),
            Self::Mark => is_mark(c),
            Self::Number => c.is_numeric(),
            Self::DecimalNumber => {
                c.is_numeric() && c.is_ascii_digit() || (c.is_numeric() && !c.is_ascii() && !c.is_alphabetic())
            }
            Self::Punctuation => is_punctuation(c),
            Self::Symbol => is_symbol(c),
            Self::Separator => c.is_whitespace() && !c.is_control(),
            Self::Control => c.is_control(),
            Self::Script(ranges) => ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&(c as u32))),
        }
    }
}

fn is_mark(c: char) -> bool {
    matches!(c as u32, 0x300..=0x36F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

fn is_cjk_like(c: char) -> bool {
    HAN.iter()
        .chain(HIRAGANA)
        .chain(KATAKANA)
        .any(|&(lo, hi)| (lo..=hi).contains(&(c as u32)))
}

fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation() && !"$+<=>^`|~".contains(c);
    }
    matches!(c as u32, 0xA1 | 0xA7 | 0xAB | 0xB6 | 0xB7 | 0xBB | 0xBF | 0x2010..=0x2027 | 0x2030..=0x205E | 0x3001..=0x3003 | 0x3008..=0x3011 | 0xFF01..=0xFF0F)
}

fn is_symbol(c: char) -> bool {
    if c.is_ascii() {
        return "$+<=>^`|~".contains(c);
    }
    matches!(c as u32,
        0xA2..=0xA6 | 0xA8 | 0xA9 | 0xAC | 0xAE..=0xB1 | 0xB4 | 0xD7 | 0xF7
        | 0x20A0..=0x20CF | 0x2100..=0x214F | 0x2190..=0x23FF | 0x2500..=0x27BF
        | 0x2900..=0x2BFF | 0x1F000..=0x1FAFF)
}

#[derive(Debug, Clone)]
enum ClassItem {
    Range(char, char),
    Unicode(UnicodeClass, bool),
}

#[derive(Debug, Clone)]
struct CharMatcher {
    items: Vec<ClassItem>,
    negated: bool,
    fold: bool,
}

impl CharMatcher {
    fn literal(c: char, fold: bool) -> Self {
        Self {
            items: vec![ClassItem::Range(c, c)],
            negated: false,
            fold,
        }
    }

    fn matches(&self, c: char) -> bool {
        let hit = self.contains(c)
            || (self.fold
                && (fold_variants(c)
                    .into_iter()
                    .flatten()
                    .any(|variant| self.contains(variant))));
        hit != self.negated
    }

    fn contains(&self, c: char) -> bool {
        self.items.iter().any(|item| match item {
            ClassItem::Range(lo, hi) => (*lo..=*hi).contains(&c),
            ClassItem::Unicode(class, negated) => class.contains(c) != *negated,
        })
    }
}

/// Simple case variants of `c` (lower and upper when they are single characters).
fn fold_variants(c: char) -> [Option<char>; 2] {
    let single = |mut it: std::iter::Peekable<std::vec::IntoIter<char>>| {
        let first = it.next();
        if it.peek().is_some() { None } else { first }
    };
    let lower = single(c.to_lowercase().collect::<Vec<_>>().into_iter().peekable());
    let upper = single(c.to_uppercase().collect::<Vec<_>>().into_iter().peekable());
    [lower, upper]
}

#[derive(Debug, Clone)]
enum Node {
    Empty,
    Char(CharMatcher),
    Any {
        newline: bool,
    },
    Assert(Assertion),
    Concat(Vec<Node>),
    Alternate(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    fold: bool,
    multiline: bool,
    dotall: bool,
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    source: &'a str,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.chars[from..to.min(self.chars.len())].iter().collect()
    }

    /// Parses alternatives until an unconsumed `)` or the end of the pattern.
    fn parse_alternation(&mut self, flags: Flags, depth: usize) -> Result<Node, RegexError> {
        if depth > MAX_DEPTH {
            return Err(syntax(NESTING_DEPTH, self.source));
        }
        let mut flags = flags;
        let mut alternatives = Vec::new();
        let mut current: Vec<Node> = Vec::new();
        // The text of the repetition operator just applied, to reject `a**`.
        let mut last_repeat: Option<String> = None;
        while let Some(c) = self.peek() {
            match c {
                ')' => break,
                '|' => {
                    self.pos += 1;
                    alternatives.push(Node::Concat(std::mem::take(&mut current)));
                    last_repeat = None;
                }
                '*' | '+' | '?' | '{' => {
                    let start = self.pos;
                    let Some((min, max)) = self.parse_repeat_operator()? else {
                        // A `{` that does not start a valid repeat is a literal.
                        self.pos += 1;
                        current.push(Node::Char(CharMatcher::literal('{', flags.fold)));
                        last_repeat = None;
                        continue;
                    };
                    let op_end = self.pos;
                    if self.peek() == Some('?') {
                        self.pos += 1; // non-greedy marker: irrelevant for matching
                    }
                    let op = self.text(start, op_end);
                    if let Some(previous) = &last_repeat {
                        return Err(syntax(INVALID_REPEAT_OP, format!("{previous}{op}")));
                    }
                    let Some(node) = current.pop() else {
                        return Err(syntax(MISSING_REPEAT_ARGUMENT, op));
                    };
                    if matches!(node, Node::Empty) {
                        return Err(syntax(MISSING_REPEAT_ARGUMENT, op));
                    }
                    current.push(Node::Repeat {
                        node: Box::new(node),
                        min,
                        max,
                    });
                    last_repeat = Some(self.text(start, self.pos));
                }
                '(' => {
                    last_repeat = None;
                    if let Some(node) = self.parse_group(&mut flags, depth)? {
                        current.push(node);
                    }
                }
                _ => {
                    last_repeat = None;
                    let node = self.parse_atom(flags)?;
                    current.push(node);
                }
            }
        }
        alternatives.push(Node::Concat(current));
        Ok(if alternatives.len() == 1 {
            alternatives.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alternate(alternatives)
        })
    }

    /// Parses `*`, `+`, `?` or a well-formed `{n}`, `{n,}`, `{n,m}`; `None` for a literal `{`.
    fn parse_repeat_operator(&mut self) -> Result<Option<(u32, Option<u32>)>, RegexError> {
        let start = self.pos;
        let c = self.chars[self.pos];
        match c {
            '*' => {
                self.pos += 1;
                Ok(Some((0, None)))
            }
            '+' => {
                self.pos += 1;
                Ok(Some((1, None)))
            }
            '?' => {
                self.pos += 1;
                Ok(Some((0, Some(1))))
            }
            _ => {
                let mut i = self.pos + 1;
                let digits = |i: &mut usize, chars: &[char]| {
                    let from = *i;
                    while *i < chars.len() && chars[*i].is_ascii_digit() {
                        *i += 1;
                    }
                    chars[from..*i].iter().collect::<String>()
                };
                let min_text = digits(&mut i, &self.chars);
                if min_text.is_empty() {
                    return Ok(None);
                }
                let mut max_text = Some(min_text.clone());
                if self.chars.get(i) == Some(&',') {
                    i += 1;
                    let text = digits(&mut i, &self.chars);
                    max_text = if text.is_empty() { None } else { Some(text) };
                }
                if self.chars.get(i) != Some(&'}') {
                    return Ok(None);
                }
                i += 1;
                let op = self.text(start, i);
                let parse = |t: &str| t.parse::<u32>().ok().filter(|n| *n <= MAX_REPEAT);
                let min = parse(&min_text).ok_or_else(|| syntax(INVALID_REPEAT_SIZE, op.clone()))?;
                let max = match max_text {
                    Some(t) => Some(parse(&t).ok_or_else(|| syntax(INVALID_REPEAT_SIZE, op.clone()))?),
                    None => None,
                };
                if max.is_some_and(|m| m < min) {
                    return Err(syntax(INVALID_REPEAT_SIZE, op));
                }
                self.pos = i;
                Ok(Some((min, max)))
            }
        }
    }

    /// Parses a group starting at `(`; flag-only groups update `flags` and yield no node.
    fn parse_group(&mut self, flags: &mut Flags, depth: usize) -> Result<Option<Node>, RegexError> {
        let start = self.pos;
        self.pos += 1;
        let mut inner_flags = *flags;
        if self.peek() == Some('?') {
            let named = match (self.peek_at(1), self.peek_at(2)) {
                (Some('P'), Some('<')) => Some(3),
                (Some('<'), _) => Some(2),
                _ => None,
            };
            if let Some(skip) = named {
                let name_start = self.pos + skip;
                let Some(close) = self.chars[name_start..].iter().position(|&c| c == '>') else {
                    return Err(syntax(INVALID_NAMED_CAPTURE, self.text(start, self.chars.len())));
                };
                let name = self.text(name_start, name_start + close);
                self.pos = name_start + close + 1;
                if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    return Err(syntax(INVALID_NAMED_CAPTURE, self.text(start, self.pos)));
                }
            } else {
                self.pos += 1;
                let mut negate = false;
                let mut new_flags = *flags;
                loop {
                    let Some(c) = self.peek() else {
                        return Err(syntax(MISSING_PAREN, self.source));
                    };
                    self.pos += 1;
                    match c {
                        'i' => new_flags.fold = !negate,
                        'm' => new_flags.multiline = !negate,
                        's' => new_flags.dotall = !negate,
                        'U' => {}
                        '-' if !negate => negate = true,
                        ')' => {
                            *flags = new_flags;
                            return Ok(None);
                        }
                        ':' => {
                            inner_flags = new_flags;
                            break;
                        }
                        _ => return Err(syntax(INVALID_PERL_OP, self.text(start, self.pos))),
                    }
                }
            }
        }
        let node = self.parse_alternation(inner_flags, depth + 1)?;
        if self.peek() != Some(')') {
            return Err(syntax(MISSING_PAREN, self.source));
        }
        self.pos += 1;
        Ok(Some(node))
    }

    fn parse_atom(&mut self, flags: Flags) -> Result<Node, RegexError> {
        let c = self.chars[self.pos];
        match c {
            '.' => {
                self.pos += 1;
                Ok(Node::Any { newline: flags.dotall })
            }
            '^' => {
                self.pos += 1;
                Ok(Node::Assert(if flags.multiline {
                    Assertion::BeginLine
                } else {
                    Assertion::BeginText
                }))
            }
            '$' => {
                self.pos += 1;
                Ok(Node::Assert(if flags.multiline {
                    Assertion::EndLine
                } else {
                    Assertion::EndText
                }))
            }
            '[' => self.parse_class(flags),
            '\\' => self.parse_escape_atom(flags),
            _ => {
                self.pos += 1;
                Ok(Node::Char(CharMatcher::literal(c, flags.fold)))
            }
        }
    }

    fn parse_escape_atom(&mut self, flags: Flags) -> Result<Node, RegexError> {
        let start = self.pos;
        let Some(c) = self.peek_at(1) else {
            return Err(syntax(TRAILING_BACKSLASH, ""));
        };
        let assertion = match c {
            'A' => Some(Assertion::BeginText),
            'z' => Some(Assertion::EndText),
            'b' => Some(Assertion::WordBoundary),
            'B' => Some(Assertion::NotWordBoundary),
            _ => None,
        };
        if let Some(assertion) = assertion {
            self.pos += 2;
            return Ok(Node::Assert(assertion));
        }
        if c == 'Q' {
            self.pos += 2;
            let rest: String = self.text(self.pos, self.chars.len());
            let literal = match rest.find("\\E") {
                Some(end) => &rest[..end],
                None => rest.as_str(),
            };
            let consumed = literal.chars().count() + if rest.contains("\\E") { 2 } else { 0 };
            self.pos += consumed;
            let nodes = literal
                .chars()
                .map(|c| Node::Char(CharMatcher::literal(c, flags.fold)))
                .collect();
            return Ok(Node::Concat(nodes));
        }
        if let Some(items) = self.parse_class_escape()? {
            let (items, negated) = items;
            return Ok(Node::Char(CharMatcher {
                items,
                negated,
                fold: flags.fold,
            }));
        }
        self.pos = start;
        let c = self.parse_escape_char()?;
        Ok(Node::Char(CharMatcher::literal(c, flags.fold)))
    }

    /// Parses `\d \s \w \D \S \W \pX \p{..} \PX \P{..}` at `self.pos`; `None` if it is not one.
    fn parse_class_escape(&mut self) -> Result<Option<(Vec<ClassItem>, bool)>, RegexError> {
        let start = self.pos;
        let Some(c) = self.peek_at(1) else { return Ok(None) };
        let perl = |ranges: &[(char, char)]| ranges.iter().map(|&(a, b)| ClassItem::Range(a, b)).collect::<Vec<_>>();
        let result = match c {
            'd' => (perl(&[('0', '9')]), false),
            'D' => (perl(&[('0', '9')]), true),
            's' => (perl(&[('\t', '\n'), ('\u{c}', '\r'), (' ', ' ')]), false),
            'S' => (perl(&[('\t', '\n'), ('\u{c}', '\r'), (' ', ' ')]), true),
            'w' => (perl(&[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')]), false),
            'W' => (perl(&[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')]), true),
            'p' | 'P' => {
                let mut negated = c == 'P';
                self.pos += 2;
                let name = match self.peek() {
                    Some('{') => {
                        let Some(close) = self.chars[self.pos..].iter().position(|&c| c == '}') else {
                            return Err(syntax(INVALID_CHAR_RANGE, self.text(start, self.chars.len())));
                        };
                        let name = self.text(self.pos + 1, self.pos + close);
                        self.pos += close + 1;
                        name
                    }
                    Some(letter) => {
                        self.pos += 1;
                        letter.to_string()
                    }
                    None => return Err(syntax(INVALID_CHAR_RANGE, self.text(start, self.pos))),
                };
                let name = match name.strip_prefix('^') {
                    Some(stripped) => {
                        negated = !negated;
                        stripped.to_string()
                    }
                    None => name,
                };
                let class = UnicodeClass::from_name(&name)
                    .ok_or_else(|| syntax(INVALID_CHAR_RANGE, self.text(start, self.pos)))?;
                return Ok(Some((vec![ClassItem::Unicode(class, false)], negated)));
            }
            _ => return Ok(None),
        };
        self.pos += 2;
        Ok(Some(result))
    }

    /// Parses a single escaped character (`\n`, `\x41`, `\.`, octal …) at `self.pos`.
    fn parse_escape_char(&mut self) -> Result<char, RegexError> {
        let start = self.pos;
        self.pos += 1;
        let Some(c) = self.peek() else {
            return Err(syntax(TRAILING_BACKSLASH, ""));
        };
        self.pos += 1;
        let invalid = |parser: &Self| syntax(INVALID_ESCAPE, parser.text(start, parser.pos));
        match c {
            'a' => Ok('\u{7}'),
            'f' => Ok('\u{c}'),
            't' => Ok('\t'),
            'n' => Ok('\n'),
            'r' => Ok('\r'),
            'v' => Ok('\u{b}'),
            '1'..='7' if !self.peek().is_some_and(|d| ('0'..='7').contains(&d)) => Err(invalid(self)),
            '0'..='7' => {
                let mut value = c.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match self.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            self.pos += 1;
                        }
                        None => break,
                    }
                }
                char::from_u32(value).ok_or_else(|| invalid(self))
            }
            'x' => {
                if self.peek() == Some('{') {
                    let Some(close) = self.chars[self.pos..].iter().position(|&c| c == '}') else {
                        self.pos = self.chars.len();
                        return Err(invalid(self));
                    };
                    let hex = self.text(self.pos + 1, self.pos + close);
                    self.pos += close + 1;
                    u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| invalid(self))
                } else {
                    let hex = self.text(self.pos, self.pos + 2);
                    self.pos = (self.pos + 2).min(self.chars.len());
                    if hex.chars().count() != 2 {
                        return Err(invalid(self));
                    }
                    u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| invalid(self))
                }
            }
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok(c),
            _ => Err(invalid(self)),
        }
    }

    fn parse_class(&mut self, flags: Flags) -> Result<Node, RegexError> {
        let start = self.pos;
        self.pos += 1;
        let mut negated = false;
        if self.peek() == Some('^') {
            negated = true;
            self.pos += 1;
        }
        let mut items = Vec::new();
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                return Err(syntax(MISSING_BRACKET, self.text(start, self.chars.len())));
            };
            if c == ']' && !first {
                self.pos += 1;
                break;
            }
            first = false;
            // POSIX class such as [:alpha:].
            if c == '[' && self.peek_at(1) == Some(':') {
                let rest = self.text(self.pos, self.chars.len());
                if let Some(end) = rest[2..].find(":]") {
                    let full = &rest[..end + 4];
                    let name = &rest[2..end + 2];
                    let (name, class_negated) = match name.strip_prefix('^') {
                        Some(n) => (n, true),
                        None => (name, false),
                    };
                    let ranges = posix_class(name).ok_or_else(|| syntax(INVALID_CHAR_RANGE, full))?;
                    // A negated POSIX class (`[:^alpha:]`) contributes its complement ranges.
                    let ranges = if class_negated {
                        complement(ranges)
                    } else {
                        ranges.to_vec()
                    };
                    items.extend(ranges.into_iter().map(|(a, b)| ClassItem::Range(a, b)));
                    self.pos += full.chars().count();
                    continue;
                }
            }
            if c == '\\'
                && let Some((class_items, class_negated)) = self.parse_class_escape()?
            {
                if class_negated {
                    items.extend(negate_items(class_items));
                } else {
                    items.extend(class_items);
                }
                continue;
            }
            let range_start = self.pos;
            let lo = self.parse_class_char()?;
            if self.peek() == Some('-') && self.peek_at(1).is_some_and(|n| n != ']') {
                self.pos += 1;
                let hi = self.parse_class_char()?;
                if hi < lo {
                    return Err(syntax(INVALID_CHAR_RANGE, self.text(range_start, self.pos)));
                }
                items.push(ClassItem::Range(lo, hi));
            } else {
                items.push(ClassItem::Range(lo, lo));
            }
        }
        Ok(Node::Char(CharMatcher {
            items,
            negated,
            fold: flags.fold,
        }))
    }

    fn parse_class_char(&mut self) -> Result<char, RegexError> {
        match self.peek() {
            Some('\\') => self.parse_escape_char(),
            Some(c) => {
                self.pos += 1;
                Ok(c)
            }
            None => Err(syntax(MISSING_BRACKET, self.source)),
        }
    }
}

fn negate_items(items: Vec<ClassItem>) -> Vec<ClassItem> {
    let mut ranges = Vec::new();
    let mut out = Vec::new();
    for item in items {
        match item {
            ClassItem::Range(a, b) => ranges.push((a, b)),
            ClassItem::Unicode(class, negated) => out.push(ClassItem::Unicode(class, !negated)),
        }
    }
    out.extend(complement(&ranges).into_iter().map(|(a, b)| ClassItem::Range(a, b)));
    out
}

fn complement(ranges: &[(char, char)]) -> Vec<(char, char)> {
    let mut sorted: Vec<(u32, u32)> = ranges.iter().map(|&(a, b)| (a as u32, b as u32)).collect();
    sorted.sort_unstable();
    let mut out = Vec::new();
    let mut next = 0u32;
    for (lo, hi) in sorted {
        if lo > next {
            push_scalar_range(&mut out, next, lo - 1);
        }
        next = next.max(hi + 1);
    }
    if next <= 0x10FFFF {
        push_scalar_range(&mut out, next, 0x10FFFF);
    }
    out
}

/// Pushes `lo..=hi` skipping the surrogate gap, which holds no `char`.
fn push_scalar_range(out: &mut Vec<(char, char)>, lo: u32, hi: u32) {
    let pieces = [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi)];
    for (a, b) in pieces {
        if a <= b
            && let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b))
        {
            out.push((a, b));
        }
    }
}

fn posix_class(name: &str) -> Option<&'static [(char, char)]> {
    Some(match name {
        "alnum" => &[('0', '9'), ('A', 'Z'), ('a', 'z')],
        "alpha" => &[('A', 'Z'), ('a', 'z')],
        "ascii" => &[('\0', '\u{7f}')],
        "blank" => &[('\t', '\t'), (' ', ' ')],
        "cntrl" => &[('\0', '\u{1f}'), ('\u{7f}', '\u{7f}')],
        "digit" => &[('0', '9')],
        "graph" => &[('!', '~')],
        "lower" => &[('a', 'z')],
        "print" => &[(' ', '~')],
        "punct" => &[('!', '/'), (':', '@'), ('[', '`'), ('{', '~')],
        "space" => &[('\t', '\r'), (' ', ' ')],
        "upper" => &[('A', 'Z')],
        "word" => &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')],
        "xdigit" => &[('0', '9'), ('A', 'F'), ('a', 'f')],
        _ => return None,
    })
}

fn compile(node: &Node, program: &mut Vec<Inst>) -> Result<(), RegexError> {
    if program.len() > MAX_PROGRAM {
        return Err(syntax(TOO_LARGE, ""));
    }
    match node {
        Node::Empty => {}
        Node::Char(matcher) => program.push(Inst::Char(matcher.clone())),
        Node::Any { newline } => program.push(Inst::Any { newline: *newline }),
        Node::Assert(assertion) => program.push(Inst::Assert(*assertion)),
        Node::Concat(nodes) => {
            for node in nodes {
                compile(node, program)?;
            }
        }
        Node::Alternate(nodes) => {
            let mut jumps = Vec::new();
            for (i, node) in nodes.iter().enumerate() {
                if i + 1 < nodes.len() {
                    let split = program.len();
                    program.push(Inst::Split(split + 1, 0));
                    compile(node, program)?;
                    jumps.push(program.len());
                    program.push(Inst::Jmp(0));
                    let next = program.len();
                    program[split] = Inst::Split(split + 1, next);
                } else {
                    compile(node, program)?;
                }
            }
            let end = program.len();
            for jump in jumps {
                program[jump] = Inst::Jmp(end);
            }
        }
        Node::Repeat { node, min, max } => {
            for _ in 0..*min {
                compile(node, program)?;
            }
            match max {
                None => {
                    let split = program.len();
                    program.push(Inst::Split(split + 1, 0));
                    compile(node, program)?;
                    program.push(Inst::Jmp(split));
                    let end = program.len();
                    program[split] = Inst::Split(split + 1, end);
                }
                Some(max) => {
                    let mut splits = Vec::new();
                    for _ in *min..*max {
                        splits.push(program.len());
                        program.push(Inst::Split(0, 0));
                        compile(node, program)?;
                    }
                    let end = program.len();
                    for split in splits {
                        program[split] = Inst::Split(split + 1, end);
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        Regex::new(pattern)
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
            .is_match(text)
    }

    fn error(pattern: &str) -> String {
        Regex::new(pattern).err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn dns_label_pattern() {
        let p = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
        assert!(matches(p, "my-name"));
        assert!(matches(p, "a"));
        assert!(!matches(p, "-a"));
        assert!(!matches(p, "a-"));
        assert!(!matches(p, "My"));
        assert!(!matches(p, ""));
    }

    #[test]
    fn search_is_unanchored_like_go_match_string() {
        assert!(matches("b+", "aaabbb"));
        assert!(matches("", "anything"));
        assert!(!matches("^b", "ab"));
    }

    #[test]
    fn dollar_is_end_of_text_without_multiline() {
        assert!(!matches("a$", "a\n"));
        assert!(matches("(?m)a$", "a\nb"));
    }

    #[test]
    fn perl_classes_repeats_and_alternation() {
        assert!(matches(r"^\d{3}-\d{4}$", "555-1234"));
        assert!(!matches(r"^\d{3}-\d{4}$", "55-1234"));
        assert!(matches(r"^(Always|Never|IfNotPresent)$", "Never"));
        assert!(!matches(r"^(Always|Never)$", "Sometimes"));
        assert!(matches(r"^\w+@\w+\.com$", "me@example.com"));
        assert!(matches(r"^.{1,3}$", "abc"));
        assert!(!matches(r"^.{1,3}$", "abcd"));
        assert!(matches(r"^a{2,}$", "aaaa"));
        assert!(matches(r"^[^/]+$", "no-slash"));
        assert!(!matches(r"^[^/]+$", "a/b"));
        assert!(matches(r"^\s*$", " \t"));
        assert!(matches(r"\bword\b", "a word here"));
        assert!(!matches(r"\bword\b", "swordfish"));
    }

    #[test]
    fn case_insensitive_flag() {
        assert!(matches("(?i)^abc$", "AbC"));
        assert!(matches("(?i)^[a-f]+$", "ABCdef"));
        assert!(!matches("^abc$", "ABC"));
    }

    #[test]
    fn quantity_like_pattern() {
        let p = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
        assert!(matches(p, "500Mi"));
        assert!(matches(p, "1.5"));
        assert!(!matches(p, "five"));
    }

    #[test]
    fn unicode_classes() {
        assert!(matches(r"^\p{L}+$", "héllo"));
        assert!(!matches(r"^\p{L}+$", "h3llo"));
        assert!(matches(r"^\PL+$", "123"));
        assert!(matches(r"^[\p{Greek}]+$", "αβγ"));
    }

    #[test]
    fn posix_classes_and_escapes() {
        assert!(matches("^[[:alpha:]]+$", "abc"));
        assert!(matches(r"^\x41\x{42}$", "AB"));
        assert!(matches(r"^a\.b$", "a.b"));
        assert!(!matches(r"^a\.b$", "axb"));
        assert!(matches(r"^\Qa.b\E$", "a.b"));
    }

    #[test]
    fn errors_use_go_wording() {
        // regexp.Compile error strings from Go's regexp/syntax.
        assert_eq!(error("(abc"), "error parsing regexp: missing closing ): `(abc`");
        assert_eq!(error("abc)"), "error parsing regexp: unexpected ): `abc)`");
        assert_eq!(error("[abc"), "error parsing regexp: missing closing ]: `[abc`");
        assert_eq!(
            error("*a"),
            "error parsing regexp: missing argument to repetition operator: `*`"
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
        assert_eq!(error(r"(\1)"), r"error parsing regexp: invalid escape sequence: `\1`");
        assert_eq!(
            error("(?=a)"),
            "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
        );
        assert_eq!(error("a{1001}"), "error parsing regexp: invalid repeat count: `{1001}`");
        assert_eq!(
            error("a\\"),
            "error parsing regexp: trailing backslash at end of expression: ``"
        );
    }

    #[test]
    fn literal_brace_when_not_a_repeat() {
        assert!(matches("^a{b$", "a{b"));
        assert!(matches("^{}$", "{}"));
    }

    #[test]
    fn nested_empty_loops_terminate() {
        assert!(matches("^(a*)*$", "aaaa"));
        assert!(!matches("^(a*)*$", "aab"));
        assert!(matches("^(a|b?)+$", "abab"));
    }
}
