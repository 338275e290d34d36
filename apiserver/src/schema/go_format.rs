//! Go `fmt` renderings (`%q`, `%v`, `%#v`) of JSON values, so messages match the Go API server byte for byte.

use serde_json::{Number, Value};

pub(crate) use crate::go_format::quote;

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)` with the `%v` exponent rule).
pub(crate) fn float(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-tripping digits, like Go's shortest formatting.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    // strconv's %g with the shortest precision switches to %e when exp < -4 || exp >= 6.
    if !(-4..6).contains(&exponent) {
        push_exponent_form(&mut out, &digits, exponent);
        return out;
    }
    let decimal_point = exponent + 1;
    if decimal_point <= 0 {
        out.push_str("0.");
        for _ in 0..(-decimal_point) {
            out.push('0');
        }
        out.push_str(&digits);
    } else if decimal_point as usize >= digits.len() {
        out.push_str(&digits);
        for _ in 0..(decimal_point as usize - digits.len()) {
            out.push('0');
        }
    } else {
        out.push_str(&digits[..decimal_point as usize]);
        out.push('.');
        out.push_str(&digits[decimal_point as usize..]);
    }
    out
}

fn push_exponent_form(out: &mut String, digits: &str, exponent: i32) {
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    out.push(if exponent < 0 { '-' } else { '+' });
    let magnitude = exponent.unsigned_abs();
    if magnitude < 10 {
        out.push('0');
    }
    out.push_str(&magnitude.to_string());
}

/// Go's `%v` of a JSON number as the Go JSON decoder would hold it (int64 or float64).
pub(crate) fn number(value: &Number) -> String {
    if let Some(i) = value.as_i64() {
        i.to_string()
    } else if let Some(u) = value.as_u64() {
        // Beyond int64 the Go decoder falls back to float64.
        float(u as f64)
    } else {
        float(value.as_f64().unwrap_or(0.0))
    }
}

/// Go's `%#v` of a value as decoded into `interface{}` (maps print with sorted keys).
pub(crate) fn sharp_v(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(sharp_v).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", quote(k), sharp_v(&map[k.as_str()])))
                .collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
    }
}

/// The JSON encoding Go's `json.Marshal` produces for a decoded value (used for enum listings).
pub(crate) fn json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_use_go_shortest_formatting() {
        // fmt.Sprintf("%v", x) in Go.
        assert_eq!(float(10.0), "10");
        assert_eq!(float(1.5), "1.5");
        assert_eq!(float(-0.25), "-0.25");
        assert_eq!(float(0.0001), "0.0001");
        assert_eq!(float(0.00001), "1e-05");
        assert_eq!(float(100000.0), "100000");
        assert_eq!(float(1e6), "1e+06");
        assert_eq!(float(123456789.0), "1.23456789e+08");
    }

    #[test]
    fn sharp_v_renders_maps_like_go() {
        // fmt.Sprintf("%#v", map[string]interface{}{"name": "a", "port": int64(80)})
        assert_eq!(
            sharp_v(&json!({"port": 80, "name": "a"})),
            r#"map[string]interface {}{"name":"a", "port":80}"#
        );
        assert_eq!(
            sharp_v(&json!(["a", 1, null])),
            r#"[]interface {}{"a", 1, interface {}(nil)}"#
        );
    }
}
