//! What Kubernetes accepts in a ConfigMap the template describes — label keys and values, annotation keys,
//! ConfigMap keys — checked before anything is written, so that a template the API server would refuse is a plugin
//! error naming the spec field, not a refused write of some child halfway through a round. A CRD's schema can
//! constrain label values (the CRD does) but not map keys.

use crate::resource::ConfigMapTemplate;

/// Longest label value, and longest name part of a label or annotation key.
const MAX_NAME: usize = 63;
/// Longest prefix of a label or annotation key, and longest ConfigMap key.
const MAX_SUBDOMAIN: usize = 253;

/// The first problem of `template`, as a message naming its field; labels, then annotations, then data, each in
/// key order.
pub fn check_template(template: &ConfigMapTemplate) -> Result<(), String> {
    for (key, value) in &template.metadata.labels {
        if !is_qualified_name(key) {
            return Err(format!(
                "spec.template.metadata.labels: `{key}` is not a valid label key: a name of at most 63 letters, \
                 digits, '-', '_' and '.' that starts and ends with a letter or digit, optionally after a DNS \
                 subdomain and '/'"
            ));
        }
        if !is_label_value(value) {
            return Err(format!(
                "spec.template.metadata.labels: the value `{value}` of `{key}` is not a valid label value: at most \
                 63 letters, digits, '-', '_' and '.' that start and end with a letter or digit, or empty"
            ));
        }
    }
    for key in template.metadata.annotations.keys() {
        if !is_qualified_name(key) {
            return Err(format!(
                "spec.template.metadata.annotations: `{key}` is not a valid annotation key: a name of at most 63 \
                 letters, digits, '-', '_' and '.' that starts and ends with a letter or digit, optionally after a \
                 DNS subdomain and '/'"
            ));
        }
    }
    for key in template.data.keys() {
        if !is_config_map_key(key) {
            return Err(format!(
                "spec.template.data: `{key}` is not a valid ConfigMap key: at most 253 letters, digits, '-', '_' \
                 and '.', and not `.` or `..`"
            ));
        }
    }
    Ok(())
}

/// A label or annotation key: `[prefix/]name`, the prefix a DNS-1123 subdomain.
pub fn is_qualified_name(key: &str) -> bool {
    match key.split_once('/') {
        None => is_name(key),
        Some((prefix, name)) => is_subdomain(prefix) && is_name(name),
    }
}

/// A label value: empty, or a name.
pub fn is_label_value(value: &str) -> bool {
    value.is_empty() || is_name(value)
}

/// A ConfigMap key: letters, digits, `-`, `_` and `.`, at most 253, not `.` or `..`.
pub fn is_config_map_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_SUBDOMAIN
        && key != "."
        && key != ".."
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 characters.
fn is_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_NAME
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A DNS-1123 subdomain: dot-separated lowercase labels of letters, digits and `-`, at most 253 characters.
fn is_subdomain(prefix: &str) -> bool {
    !prefix.is_empty()
        && prefix.len() <= MAX_SUBDOMAIN
        && prefix.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && bytes.len() <= MAX_NAME
                && bytes[0].is_ascii_alphanumeric()
                && bytes[bytes.len() - 1].is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_api_servers_rules() {
        for key in ["app", "app.kubernetes.io/name", "a_b.c-d", "x/y", &"a".repeat(63)] {
            assert!(is_qualified_name(key), "{key}");
        }
        for key in [
            "",
            "check key",
            "-app",
            "app-",
            "Example.com/x",
            "a/b/c",
            "a/",
            "/a",
            &"a".repeat(64),
        ] {
            assert!(!is_qualified_name(key), "{key}");
        }
        assert!(is_label_value("") && is_label_value("v1.2_3"));
        assert!(!is_label_value("-changed") && !is_label_value("a b"));
        assert!(is_config_map_key("app.properties") && is_config_map_key("-x_"));
        for key in ["", ".", "..", "a b", "a/b"] {
            assert!(!is_config_map_key(key), "{key}");
        }
    }

    #[test]
    fn the_first_problem_is_named_by_its_field() {
        let mut template = ConfigMapTemplate::default();
        assert_eq!(check_template(&template), Ok(()));
        template.data.insert("check key".into(), "v".into());
        template
            .metadata
            .annotations
            .insert("ok/x".into(), "anything at all".into());
        assert!(
            check_template(&template)
                .unwrap_err()
                .starts_with("spec.template.data: `check key`")
        );
        template.metadata.labels.insert("app".into(), "-changed".into());
        assert!(
            check_template(&template)
                .unwrap_err()
                .starts_with("spec.template.metadata.labels: the value `-changed` of `app`")
        );
    }
}
