//! A small deterministic hash of the configuration, stamped on the pod template so that a change rolls it.

use std::collections::BTreeMap;

/// Pod template annotation carrying [`config_hash`].
pub const CONFIG_HASH_ANNOTATION: &str = "examples.wasm-reconciler.io/config-hash";

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a (64 bit) of the configuration in key order, each key and value followed by a zero byte (so
/// `{"ab": "c"}` and `{"a": "bc"}` differ), as 16 lowercase hex digits.
pub fn config_hash(config: &BTreeMap<String, String>) -> String {
    let mut hash = FNV_OFFSET_BASIS;
    for (key, value) in config {
        for bytes in [key.as_bytes(), value.as_bytes()] {
            for &byte in bytes.iter().chain(&[0]) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(FNV_PRIME);
            }
        }
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn empty_config_hashes_to_the_offset_basis() {
        assert_eq!(config_hash(&BTreeMap::new()), "cbf29ce484222325");
    }

    #[test]
    fn matches_reference_fnv1a_of_the_encoding() {
        // FNV-1a 64 of the bytes "a\0b\0", computed independently.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in *b"a\0b\0" {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
        }
        assert_eq!(config_hash(&config(&[("a", "b")])), format!("{hash:016x}"));
    }

    #[test]
    fn is_independent_of_insertion_order() {
        let mut first = BTreeMap::new();
        first.insert("b".to_owned(), "2".to_owned());
        first.insert("a".to_owned(), "1".to_owned());
        assert_eq!(config_hash(&first), config_hash(&config(&[("a", "1"), ("b", "2")])));
    }

    #[test]
    fn changes_with_any_key_or_value() {
        let base = config_hash(&config(&[("LOG", "info")]));
        assert_ne!(base, config_hash(&config(&[("LOG", "debug")])));
        assert_ne!(base, config_hash(&config(&[("LEVEL", "info")])));
        assert_ne!(
            config_hash(&config(&[("ab", "c")])),
            config_hash(&config(&[("a", "bc")]))
        );
    }
}
