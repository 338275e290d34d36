//! The string formats CRD validation enforces (kube-openapi's `strfmt.Default` registry).
//!
//! The server strips every format outside its supported list before validating, so `int32`,
//! `int64`, `float`, `double` and unknown formats are not checked at all; numbers are never
//! range-checked by format.

use std::net::IpAddr;
use std::sync::OnceLock;

use super::go_regexp::Regex;

/// Formats validated by CRDs (`supportedVersionedFormats`), with dashes removed.
const SUPPORTED: [&str; 24] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// The format as the validator sees it: `None` when the server strips it.
pub(crate) fn supported_format(format: Option<&str>) -> Option<&str> {
    format.filter(|f| SUPPORTED.contains(&normalize(f).as_str()))
}

/// Whether `value` satisfies the (supported) `format`.
pub(crate) fn is_valid(format: &str, value: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(value),
        "email" => is_email(value),
        "hostname" => is_hostname(value),
        "ipv4" => value.parse::<IpAddr>().is_ok() && value.contains('.'),
        "ipv6" => value.parse::<IpAddr>().is_ok() && value.contains(':'),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uuid" => matches(
            &UUID,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
            value,
        ),
        "uuid3" => matches(
            &UUID3,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
            value,
        ),
        "uuid4" => matches(
            &UUID4,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
            value,
        ),
        "uuid5" => matches(
            &UUID5,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
            value,
        ),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => is_credit_card(value),
        "ssn" => value.len() == 11 && matches(&SSN, r"^\d{3}[- ]?\d{2}[- ]?\d{4}$", value),
        "hexcolor" => matches(&HEX_COLOR, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", value),
        "rgbcolor" => matches(
            &RGB_COLOR,
            r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
            value,
        ),
        // govalidator.IsBase64 (standard alphabet, padded; the empty string does not match).
        "byte" => matches(
            &BASE64,
            r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$",
            value,
        ),
        "password" => true,
        "date" => is_full_date(value),
        "duration" => is_duration(value),
        "datetime" => is_date_time(value),
        _ => true,
    }
}

static UUID: OnceLock<Option<Regex>> = OnceLock::new();
static UUID3: OnceLock<Option<Regex>> = OnceLock::new();
static UUID4: OnceLock<Option<Regex>> = OnceLock::new();
static UUID5: OnceLock<Option<Regex>> = OnceLock::new();
static SSN: OnceLock<Option<Regex>> = OnceLock::new();
static HEX_COLOR: OnceLock<Option<Regex>> = OnceLock::new();
static RGB_COLOR: OnceLock<Option<Regex>> = OnceLock::new();
static BASE64: OnceLock<Option<Regex>> = OnceLock::new();
static HOSTNAME: OnceLock<Option<Regex>> = OnceLock::new();
static DATE_TIME: OnceLock<Option<Regex>> = OnceLock::new();

fn matches(cell: &OnceLock<Option<Regex>>, pattern: &str, value: &str) -> bool {
    cell.get_or_init(|| Regex::new(pattern).ok())
        .as_ref()
        .is_some_and(|re| re.is_match(value))
}

/// strfmt `IsHostname`: its pattern, at most 255 bytes, labels of at most 63 bytes.
fn is_hostname(value: &str) -> bool {
    const PATTERN: &str = r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62})$";
    matches(&HOSTNAME, PATTERN, value) && value.len() <= 255 && value.split('.').all(|label| label.len() <= 63)
}

/// Go's `url.ParseRequestURI` acceptance: an absolute path or an absolute URI.
fn is_request_uri(value: &str) -> bool {
    if value.is_empty() || value.chars().any(|c| c.is_control()) {
        return false;
    }
    if value.starts_with('/') {
        return true;
    }
    let Some((scheme, rest)) = value.split_once(':') else {
        return false;
    };
    let mut scheme_chars = scheme.chars();
    let scheme_ok = scheme_chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme_chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return false;
    }
    match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let authority = authority_and_path.split(['/', '?', '#']).next().unwrap_or("");
            !authority.contains(' ')
        }
        None => true,
    }
}

/// An approximation of Go's `mail.ParseAddress`: `local@domain`, optionally `Name <local@domain>`.
fn is_email(value: &str) -> bool {
    let address = match (value.find('<'), value.rfind('>')) {
        (Some(open), Some(close)) if open < close && value[close + 1..].trim().is_empty() => &value[open + 1..close],
        _ => value.trim(),
    };
    let Some((local, domain)) = address.rsplit_once('@') else {
        return false;
    };
    let atom = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && !part.ends_with('.')
            && !part.contains("..")
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c))
    };
    (atom(local) || (local.starts_with('"') && local.ends_with('"') && local.len() >= 2)) && atom(domain)
}

fn is_cidr(value: &str) -> bool {
    let Some((address, prefix)) = value.split_once('/') else {
        return false;
    };
    let Ok(ip) = address.parse::<IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    !prefix.is_empty()
        && prefix.len() <= 3
        && prefix.bytes().all(|b| b.is_ascii_digit())
        && prefix.parse::<u32>().is_ok_and(|p| p <= max)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets with `:` or `-`, or dotted groups of four hex digits.
fn is_mac(value: &str) -> bool {
    let octet_counts = [6, 8, 20];
    for separator in [':', '-'] {
        let parts: Vec<&str> = value.split(separator).collect();
        if parts.len() > 1
            && octet_counts.contains(&parts.len())
            && parts
                .iter()
                .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return true;
        }
    }
    let groups: Vec<&str> = value.split('.').collect();
    groups.len() > 1
        && octet_counts.contains(&(groups.len() * 2))
        && groups
            .iter()
            .all(|g| g.len() == 4 && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn isbn_digits(value: &str) -> String {
    value.chars().filter(|c| !c.is_whitespace() && *c != '-').collect()
}

fn is_isbn10(value: &str) -> bool {
    let digits = isbn_digits(value);
    let bytes = digits.as_bytes();
    if bytes.len() != 10
        || !bytes[..9].iter().all(u8::is_ascii_digit)
        || !(bytes[9].is_ascii_digit() || bytes[9] == b'X')
    {
        return false;
    }
    let sum: u32 = bytes
        .iter()
        .enumerate()
        .map(|(i, b)| (i as u32 + 1) * if *b == b'X' { 10 } else { u32::from(b - b'0') })
        .sum();
    sum.is_multiple_of(11)
}

fn is_isbn13(value: &str) -> bool {
    let digits = isbn_digits(value);
    if digits.len() != 13 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let bytes = digits.as_bytes();
    let sum: u32 = bytes[..12]
        .iter()
        .enumerate()
        .map(|(i, b)| u32::from(b - b'0') * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    (10 - sum % 10) % 10 == u32::from(bytes[12] - b'0')
}

/// govalidator `IsCreditCard`: known issuer prefixes and lengths plus the Luhn checksum.
fn is_credit_card(value: &str) -> bool {
    let digits: String = value.chars().filter(char::is_ascii_digit).collect();
    let known = |d: &str| {
        let n = d.len();
        (d.starts_with('4') && (n == 13 || n == 16))
            || (n == 16
                && (d.starts_with(['5'])
                    || d.starts_with("2")
                    || d.starts_with("6011")
                    || d.starts_with("65")
                    || d.starts_with("62")
                    || d.starts_with("67")))
            || (n == 15
                && (d.starts_with("34") || d.starts_with("37") || d.starts_with("2131") || d.starts_with("1800")))
            || (n == 14 && (d.starts_with("30") || d.starts_with("36") || d.starts_with("38")))
            || (n == 16 && d.starts_with("35"))
    };
    if !known(&digits) {
        return false;
    }
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Go's `time.Parse("2006-01-02", value)`.
fn is_full_date(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = &value[range];
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    match (number(0..4), number(5..7), number(8..10)) {
        (Some(year), Some(month), Some(day)) => chrono::NaiveDate::from_ymd_opt(year as i32, month, day).is_some(),
        _ => false,
    }
}

/// strfmt `IsDateTime`: a full date, `t`, then `hh:mm:ss[.frac](z|±hh:mm)`, case-insensitive.
fn is_date_time(value: &str) -> bool {
    if value.len() < 4 {
        return false;
    }
    let lower = value.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_full_date(parts[0]) {
        return false;
    }
    let time = parts[1];
    let pattern = r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$";
    // The pattern guarantees ASCII digits at the compared positions.
    matches(&DATE_TIME, pattern, time) && &time[0..2] <= "23" && &time[3..5] <= "59" && &time[6..8] <= "59"
}

/// strfmt `IsDuration`: Go's `time.ParseDuration`, or any `<digits><unit>` group with strfmt's units.
fn is_duration(value: &str) -> bool {
    if is_go_duration(value) {
        return true;
    }
    const UNITS: [&[&str]; 8] = [
        &["ns", "nanoseconds"],
        &["us", "µs", "microseconds"],
        &["ms", "milliseconds"],
        &["s", "seconds"],
        &["m", "minutes"],
        &["h", "hours"],
        &["d", "days"],
        &["w", "weeks"],
    ];
    let chars: Vec<char> = value.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        let start = i;
        while i < chars.len() && (chars[i].is_ascii_alphabetic() || chars[i] == 'µ') {
            i += 1;
        }
        if start == i {
            continue;
        }
        let unit: String = chars[start..i].iter().collect::<String>().to_lowercase();
        let known = UNITS.iter().any(|variants| {
            let last = variants.len() - 1;
            variants
                .iter()
                .enumerate()
                .any(|(j, v)| (j == last && unit.starts_with(v)) || unit == *v)
        });
        if known {
            return true;
        }
    }
    false
}

/// Go's `time.ParseDuration` syntax: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`.
fn is_go_duration(value: &str) -> bool {
    let body = value.strip_prefix(['-', '+']).unwrap_or(value);
    if body == "0" {
        return true;
    }
    if body.is_empty() {
        return false;
    }
    let mut rest = body;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let mut consumed = int_len;
        let mut frac_len = 0;
        if rest[consumed..].starts_with('.') {
            consumed += 1;
            frac_len = rest[consumed..].bytes().take_while(u8::is_ascii_digit).count();
            consumed += frac_len;
        }
        if int_len == 0 && frac_len == 0 {
            return false;
        }
        rest = &rest[consumed..];
        let unit = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .iter()
            .filter(|u| rest.starts_with(**u))
            .max_by_key(|u| u.len());
        let Some(unit) = unit else { return false };
        rest = &rest[unit.len()..];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_formats_are_stripped() {
        assert_eq!(supported_format(Some("int32")), None);
        assert_eq!(supported_format(Some("date-time")), Some("date-time"));
        assert_eq!(supported_format(Some("quantity")), None);
    }

    #[test]
    fn date_time() {
        assert!(is_valid("date-time", "2024-01-02T03:04:05Z"));
        assert!(is_valid("date-time", "2024-01-02T03:04:05.123+02:00"));
        assert!(is_valid("date-time", "2024-01-02t03:04:05z"));
        assert!(!is_valid("date-time", "2024-01-02 03:04:05Z"));
        assert!(!is_valid("date-time", "2024-02-30T03:04:05Z"));
        assert!(!is_valid("date-time", "2024-01-02T24:04:05Z"));
        assert!(!is_valid("date-time", "2024-01-02T03:04:05"));
    }

    #[test]
    fn byte_is_padded_standard_base64() {
        assert!(is_valid("byte", "aGVsbG8="));
        assert!(is_valid("byte", "aGVsbG8h"));
        assert!(!is_valid("byte", "aGVsbG8"));
        assert!(!is_valid("byte", ""));
        assert!(!is_valid("byte", "a_b-"));
    }

    #[test]
    fn network_formats() {
        assert!(is_valid("ipv4", "10.0.0.1"));
        assert!(!is_valid("ipv4", "::1"));
        assert!(is_valid("ipv6", "::1"));
        assert!(is_valid("cidr", "10.0.0.0/8"));
        assert!(!is_valid("cidr", "10.0.0.0/33"));
        assert!(is_valid("mac", "01:23:45:67:89:ab"));
        assert!(is_valid("hostname", "example.com"));
        assert!(!is_valid("hostname", "-bad-.com"));
        assert!(is_valid("uri", "https://example.com/x"));
        assert!(!is_valid("uri", "not a uri"));
        assert!(is_valid("email", "me@example.com"));
        assert!(!is_valid("email", "nope"));
    }

    #[test]
    fn other_formats() {
        assert!(is_valid("uuid", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(!is_valid("uuid", "123"));
        assert!(is_valid("date", "2024-02-29"));
        assert!(!is_valid("date", "2023-02-29"));
        assert!(is_valid("duration", "1h30m"));
        assert!(is_valid("duration", "3 days"));
        assert!(!is_valid("duration", "soon"));
        assert!(is_valid("hexcolor", "#ffF"));
        assert!(is_valid("isbn10", "0321751043"));
        assert!(is_valid("isbn13", "978-0321751041"));
        assert!(is_valid("creditcard", "4111 1111 1111 1111"));
        assert!(is_valid("ssn", "123-45-6789"));
    }
}
