//! Go's renderings of decoded JSON values (`%v`, `%#v`, `%T`, `%q`, `json.Marshal`), as kube-apiserver prints them.
//!
//! The API server decodes a JSON number into an `int64` when its text is an integer that fits and into a
//! `float64` otherwise (`k8s.io/apimachinery/pkg/util/json`, `sigs.k8s.io/json`), so
//! `18446744073709551615` prints as the float64 `1.8446744073709552e+19`. serde_json does not tell `-0`
//! from `-0.0`; Go decodes the first as the int64 `0`, and both print as `-0` here.

use serde_json::{Map, Number, Value};
use std::fmt::Write as _;
use std::sync::LazyLock;

/// A decoded JSON number, as Go holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum GoNumber {
    Int(i64),
    Float(f64),
}

impl GoNumber {
    fn decoded(number: &Number) -> Self {
        match number.as_i64() {
            Some(int) => Self::Int(int),
            // Without serde_json's arbitrary_precision every number has an f64 value.
            None => Self::Float(number.as_f64().unwrap_or(f64::NAN)),
        }
    }
}

/// Go's `strconv.Quote`, which is also `%q` and `%#v` of a string.
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
            c if is_printable(c) => out.push(c),
            c if u32::from(c) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if u32::from(c) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
fn is_printable(c: char) -> bool {
    static PRINTABLE: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"\A[\p{L}\p{M}\p{N}\p{P}\p{S}]\z").expect("the pattern is valid and small")
    });
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    PRINTABLE.is_match(c.encode_utf8(&mut [0; 4]))
}

/// `%v` of a float64, which is `strconv.FormatFloat(value, 'g', -1, 64)`: the shortest digits that read
/// back as `value`, with an exponent of at least two digits when it is below -4 or from 6 on (`1e+06`).
pub(crate) fn float_v(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let sign = if value.is_sign_negative() { "-" } else { "" };
    if value == 0.0 {
        return format!("{sign}0");
    }
    let (digits, exponent) = shortest_digits(value);
    if (-4..6).contains(&exponent) {
        format!("{sign}{}", positional(&digits, exponent))
    } else {
        format!("{sign}{}", scientific(&digits, exponent, 2))
    }
}

/// `%v` of a decoded JSON number.
pub(crate) fn number_v(number: &Number) -> String {
    match GoNumber::decoded(number) {
        GoNumber::Int(int) => int.to_string(),
        GoNumber::Float(float) => float_v(float),
    }
}

/// `%v` of a decoded value: `<nil>`, strings bare, `[a b]`, `map[a:1 b:2]` (keys sorted).
pub(crate) fn value_v(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_v(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(value_v).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => {
            let parts: Vec<String> = sorted(map).map(|(k, v)| format!("{k}:{}", value_v(v))).collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// `%#v` of a decoded value: `interface {}(nil)`, `[]interface {}{"a", 1}`, `map[string]interface {}{"a":1}`.
pub(crate) fn sharp_v(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_v(n),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(sharp_v).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = sorted(map)
                .map(|(k, v)| format!("{}:{}", quote(k), sharp_v(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
    }
}

/// `%T` of a decoded value.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) => match GoNumber::decoded(n) {
            GoNumber::Int(_) => "int64",
            GoNumber::Float(_) => "float64",
        },
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// `json.Marshal` of a decoded value: keys sorted, HTML characters escaped, numbers as Go writes them.
pub(crate) fn json_text(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&json_number(n)),
        Value::String(s) => out.push_str(&json_string(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in sorted(map).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(key));
                out.push(':');
                write_json(item, out);
            }
            out.push('}');
        }
    }
}

/// `json.Marshal` of a string (Go 1.22 and later: `\b` and `\f` are short escapes).
pub(crate) fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `json.Marshal` of a decoded number: a float64 without exponent from 1e-6 up to 1e21, otherwise with
/// the shortest exponent (`1e-7`, `1e+21`).
fn json_number(number: &Number) -> String {
    let value = match GoNumber::decoded(number) {
        GoNumber::Int(int) => return int.to_string(),
        GoNumber::Float(float) => float,
    };
    let sign = if value.is_sign_negative() { "-" } else { "" };
    if value == 0.0 {
        return format!("{sign}0");
    }
    let (digits, exponent) = shortest_digits(value);
    if (1e-6..1e21).contains(&value.abs()) {
        format!("{sign}{}", positional(&digits, exponent))
    } else {
        format!("{sign}{}", scientific(&digits, exponent, 1))
    }
}

/// The shortest decimal digits that read back as `value` (finite, not zero), and the power of ten of the
/// first, as Go's shortest formatting picks them.
fn shortest_digits(value: f64) -> (String, i32) {
    let (digits, exponent) = scientific_digits(&format!("{:e}", value.abs()));
    // Rust's `{:e}` picks the same digits as Go, except when the value lies exactly halfway between two
    // shortest candidates: Rust takes the upper one, Go the even one (`811212085039910.25` prints as
    // `811212085039910.2`). The upper is odd then, and the lower reads back as the value too.
    let last = digits.as_bytes()[digits.len() - 1];
    if last % 2 == 1 && digits.len() > 1 {
        let lower = format!("{}{}", &digits[..digits.len() - 1], char::from(last - 1));
        let reads_back = format!("{}.{}e{exponent}", &lower[..1], &lower[1..]).parse() == Ok(value.abs());
        // f64 values have at most 767 significant decimal digits: 800 show the exact value.
        if reads_back && scientific_digits(&format!("{:.800e}", value.abs())) == (format!("{lower}5"), exponent) {
            return (lower, exponent);
        }
    }
    (digits, exponent)
}

/// The digits (without trailing zeros) and exponent of Rust's `{:e}` text.
fn scientific_digits(text: &str) -> (String, i32) {
    let (mantissa, exponent) = text.split_once('e').unwrap_or((text, "0"));
    let digits = mantissa.replace('.', "");
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    (digits.to_string(), exponent.parse().unwrap_or(0))
}

/// `d.ddde±xx`, the exponent written with at least `exponent_digits` digits.
fn scientific(digits: &str, exponent: i32, exponent_digits: usize) -> String {
    let (first, rest) = digits.split_at(1);
    let point = if rest.is_empty() { "" } else { "." };
    let sign = if exponent < 0 { '-' } else { '+' };
    format!(
        "{first}{point}{rest}e{sign}{:0exponent_digits$}",
        exponent.unsigned_abs()
    )
}

/// The digits with a decimal point where `exponent` puts it, padded with zeros, without an exponent.
fn positional(digits: &str, exponent: i32) -> String {
    if exponent < 0 {
        return format!("0.{}{digits}", "0".repeat(exponent.unsigned_abs() as usize - 1));
    }
    let integer_digits = exponent as usize + 1;
    if digits.len() <= integer_digits {
        format!("{digits}{}", "0".repeat(integer_digits - digits.len()))
    } else {
        format!("{}.{}", &digits[..integer_digits], &digits[integer_digits..])
    }
}

/// A map's entries in key order, as Go's `fmt` and `encoding/json` write them.
fn sorted(map: &Map<String, Value>) -> impl Iterator<Item = (&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn number(text: &str) -> Number {
        serde_json::from_str(text).expect("a JSON number")
    }

    #[test]
    fn float_v_is_go_shortest_g_formatting() {
        // fmt.Sprintf("%v", x) with Go 1.26.
        let cases = [
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (1e-7, "1e-07"),
            (100000000.0, "1e+08"),
            (-0.0, "-0"),
            (0.0, "0"),
            (3.0, "3"),
            (1e6, "1e+06"),
            (123456789.0, "1.23456789e+08"),
            (123456.0, "123456"),
            (999999.0, "999999"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e-6, "1e-06"),
            (1.234e-6, "1.234e-06"),
            (1e20, "1e+20"),
            (12345678901234567890.0, "1.2345678901234567e+19"),
            (9223372036854775808.0, "9.223372036854776e+18"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (1e100, "1e+100"),
            (1.5e-10, "1.5e-10"),
            (-2.5e-7, "-2.5e-07"),
            (-0.25, "-0.25"),
            // Exactly halfway between two shortest candidates: Go takes the even one.
            (811_212_085_039_910.0 + 0.25, "8.112120850399102e+14"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
        ];
        for (value, go) in cases {
            assert_eq!(float_v(value), go, "{value:e}");
        }
    }

    #[test]
    fn json_numbers_are_go_encoding_json() {
        // json.Marshal of the value as decoded (int64 if it fits, else float64), Go 1.26. Floats are built
        // from Rust literals: serde_json parses some decimals one unit in the last place off (`1.25e300`).
        let cases = [
            (json!(0.1), "0.1"),
            (json!(1e21), "1e+21"),
            (json!(1e-7), "1e-7"),
            (json!(100000000), "100000000"),
            (json!(1e8), "100000000"),
            (json!(-0.0), "-0"),
            (json!(3.0), "3"),
            (json!(1e6), "1000000"),
            (json!(1e-6), "0.000001"),
            (json!(1.234e-6), "0.000001234"),
            (json!(1e20), "100000000000000000000"),
            (json!(1e22), "1e+22"),
            (json!(-2.5e-7), "-2.5e-7"),
            (json!(1.5e-10), "1.5e-10"),
            (json!(1.25e300), "1.25e+300"),
            (json!(811_212_085_039_910.0 + 0.25), "811212085039910.2"),
            (json!(i64::MAX), "9223372036854775807"),
            (json!(i64::MIN), "-9223372036854775808"),
            (json!(9223372036854775808u64), "9223372036854776000"),
            (json!(12345678901234567890u64), "12345678901234567000"),
        ];
        for (value, go) in cases {
            assert_eq!(json_text(&value), go, "{value}");
        }
    }

    #[test]
    fn numbers_print_as_the_decoded_int64_or_float64() {
        assert_eq!(number_v(&number("80")), "80");
        assert_eq!(number_v(&number("-9223372036854775808")), "-9223372036854775808");
        assert_eq!(number_v(&number("3.0")), "3");
        assert_eq!(number_v(&number("1e6")), "1e+06");
        // Beyond int64 the decoders fall back to float64.
        assert_eq!(number_v(&number("12345678901234567890")), "1.2345678901234567e+19");
        assert_eq!(type_name(&json!(12345678901234567890u64)), "float64");
        assert_eq!(type_name(&json!(80)), "int64");
        assert_eq!(type_name(&json!(1.5)), "float64");
        assert_eq!(type_name(&Value::Null), "<nil>");
    }

    #[test]
    fn values_print_like_go() {
        // Go 1.26: fmt.Printf("%v\n%#v\n", m, m) and json.Marshal(m) for m := map[string]interface{}{
        // "b": 1.5, "a": []interface{}{int64(1), nil, "x<y", 1e6, true}, "c": map[string]interface{}{}}
        let value = json!({"b": 1.5, "a": [1, null, "x<y", 1e6, true], "c": {}});
        assert_eq!(value_v(&value), "map[a:[1 <nil> x<y 1e+06 true] b:1.5 c:map[]]");
        assert_eq!(
            sharp_v(&value),
            r#"map[string]interface {}{"a":[]interface {}{1, interface {}(nil), "x<y", 1e+06, true}, "b":1.5, "c":map[string]interface {}{}}"#
        );
        assert_eq!(
            json_text(&value),
            r#"{"a":[1,null,"x\u003cy",1000000,true],"b":1.5,"c":{}}"#
        );
        assert_eq!(value_v(&json!([])), "[]");
        assert_eq!(sharp_v(&json!([])), "[]interface {}{}");
        assert_eq!(value_v(&Value::Null), "<nil>");
        assert_eq!(sharp_v(&Value::Null), "interface {}(nil)");
    }

    #[test]
    fn json_strings_escape_like_go() {
        // json.Marshal("\b\f\x01<>&\u2028\u2029\x7f\"\\\n\r\t") with Go 1.26.
        assert_eq!(
            json_string("\u{8}\u{c}\u{1}<>&\u{2028}\u{2029}\u{7f}\"\\\n\r\t"),
            "\"\\b\\f\\u0001\\u003c\\u003e\\u0026\\u2028\\u2029\u{7f}\\\"\\\\\\n\\r\\t\""
        );
    }

    #[test]
    fn quote_is_strconv_quote() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("tab\there\n"), r#""tab\there\n""#);
        assert_eq!(quote("\u{1}\u{7f}"), r#""\x01\x7f""#);
        assert_eq!(quote("héllo Σ ภาษา 😀"), "\"héllo Σ ภาษา 😀\"");
        // strconv.Quote("\b\f\x01<>&\u2028\u2029\x7f\u00ad\u0378\U000E0001\U000F0000 \u00a0é\u200b") with Go 1.26:
        // format characters, unassigned and private-use code points and non-ASCII spaces are escaped.
        assert_eq!(
            quote("\u{8}\u{c}\u{1}<>&\u{2028}\u{2029}\u{7f}\u{ad}\u{378}\u{e0001}\u{f0000} \u{a0}é\u{200b}"),
            r#""\b\f\x01<>&\u2028\u2029\x7f\u00ad\u0378\U000e0001\U000f0000 \u00a0é\u200b""#
        );
        assert_eq!(quote("\u{e000}"), r#""\ue000""#);
    }
}
