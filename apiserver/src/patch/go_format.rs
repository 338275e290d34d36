//! Go-compatible text formatting, so that keys and messages match kube-apiserver byte for byte.

use serde_json::{Map, Value};
use std::fmt::Write as _;

pub(crate) use crate::go_format::quote;

/// Go's `%v` for a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
pub(crate) fn float_v(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    // With the shortest precision Go switches to the %e form when the exponent is < -4 or >= 6.
    let (mantissa, exp) = shortest_scientific(f);
    if !(-4..6).contains(&exp) {
        return go_exponent_form(&mantissa, exp, true);
    }
    format!("{f}")
}

/// Splits Rust's shortest round-trip scientific form into mantissa text and decimal exponent.
fn shortest_scientific(f: f64) -> (String, i32) {
    let text = format!("{f:e}");
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    (mantissa.to_string(), exp.parse().unwrap_or(0))
}

/// Renders `mantissa` and `exp` the way Go does: `1e+21`, `1.5e-07` (padded) or `1e-7` (JSON).
fn go_exponent_form(mantissa: &str, exp: i32, pad_two_digits: bool) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    let digits = exp.unsigned_abs();
    if pad_two_digits {
        format!("{mantissa}e{sign}{digits:02}")
    } else {
        format!("{mantissa}e{sign}{digits}")
    }
}

/// Go's `%v` for a value decoded from JSON into `interface{}`.
pub(crate) fn value_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_v(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(value_v).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}:{}", value_v(&map[k.as_str()])))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

fn number_v(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        n.to_string()
    } else {
        float_v(n.as_f64().unwrap_or(0.0))
    }
}

/// Go's `encoding/json` string encoding (with HTML escaping, as `json.Marshal` does).
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `json.Marshal` of a value decoded into `interface{}`: object keys sorted, HTML escaped.
pub(crate) fn json_text(v: &Value) -> String {
    let mut out = String::new();
    write_json(v, &mut out);
    out
}

fn write_json(v: &Value, out: &mut String) {
    match v {
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
        Value::Object(map) => write_json_object(map, out),
    }
}

fn write_json_object(map: &Map<String, Value>, out: &mut String) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push('{');
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&json_string(k));
        out.push(':');
        write_json(&map[k.as_str()], out);
    }
    out.push('}');
}

/// Go's `encoding/json` number encoding.
pub(crate) fn json_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        return format!("{f}");
    }
    let (mantissa, exp) = shortest_scientific(f);
    go_exponent_form(&mantissa, exp, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quote_matches_go() {
        assert_eq!(quote("a\"b\\c\n"), r#""a\"b\\c\n""#);
        assert_eq!(quote("é"), "\"é\"");
        assert_eq!(quote("\u{1}"), "\"\\x01\"");
    }

    #[test]
    fn floats_format_like_go_v() {
        assert_eq!(float_v(1.5), "1.5");
        assert_eq!(float_v(1e21), "1e+21");
        assert_eq!(float_v(1e6), "1e+06");
        assert_eq!(float_v(123456.0), "123456");
        assert_eq!(float_v(0.00001), "1e-05");
        assert_eq!(json_number(&serde_json::Number::from_f64(1e21).unwrap()), "1e+21");
        assert_eq!(json_number(&serde_json::Number::from_f64(1e-7).unwrap()), "1e-7");
    }

    #[test]
    fn values_print_like_go_v() {
        assert_eq!(value_v(&json!({"b": 1, "a": [true, null]})), "map[a:[true <nil>] b:1]");
    }

    #[test]
    fn json_text_sorts_keys_and_escapes_html() {
        assert_eq!(
            json_text(&json!({"b": "<x>", "a": 1})),
            r#"{"a":1,"b":"\u003cx\u003e"}"#
        );
    }
}
