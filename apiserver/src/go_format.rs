//! Go's string quoting (`strconv.Quote`, `%q`), shared by the patch and schema modules so that messages
//! match kube-apiserver byte for byte.

/// Go's `strconv.Quote`: a double-quoted string with Go escapes.
pub(crate) fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint`: graphic characters and the ASCII space.
fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let code = c as u32;
    // Format characters, private use, surrogates and the BOM are not printable in Go.
    !matches!(code, 0x00AD | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x206F | 0xFEFF | 0xE000..=0xF8FF | 0xFFF9..=0xFFFB)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_like_go() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("tab\there\n"), r#""tab\there\n""#);
        assert_eq!(quote("\u{7f}"), r#""\x7f""#);
        assert_eq!(quote("héllo"), "\"héllo\"");
        assert_eq!(quote("\u{a0}"), r#""\u00a0""#);
        assert_eq!(quote("\u{e000}"), r#""\ue000""#);
    }
}
