//! The consistent-hash ring that assigns objects to live replicas: every replica owns [`TOKENS_PER_MEMBER`]
//! points on a 64-bit circle, and an object belongs to the replica owning the first point at or after the object's
//! hash. When a replica joins or leaves, only the objects between its points and their predecessors move.

/// Points per replica: enough that three replicas get shares within a few percent of even.
pub const TOKENS_PER_MEMBER: usize = 256;

/// A ring over a set of replicas. Built anew whenever the set of live replicas changes.
#[derive(Debug, Clone)]
pub struct Ring {
    /// (point, index into `members`), sorted by point.
    tokens: Vec<(u64, usize)>,
    members: Vec<String>,
}

impl Ring {
    /// The ring of `members` (any order; duplicates count once).
    pub fn new<S: AsRef<str>>(members: &[S]) -> Self {
        let mut members: Vec<String> = members.iter().map(|m| m.as_ref().to_owned()).collect();
        members.sort();
        members.dedup();
        let mut tokens = Vec::with_capacity(members.len() * TOKENS_PER_MEMBER);
        for (index, member) in members.iter().enumerate() {
            for token in 0..TOKENS_PER_MEMBER {
                tokens.push((hash(format!("{member}#{token}").as_bytes()), index));
            }
        }
        tokens.sort_unstable();
        Self { tokens, members }
    }

    /// The replicas on the ring, sorted.
    pub fn members(&self) -> &[String] {
        &self.members
    }

    /// The replica `key` belongs to; `None` on an empty ring.
    pub fn owner(&self, key: &str) -> Option<&str> {
        if self.tokens.is_empty() {
            return None;
        }
        let point = hash(key.as_bytes());
        let at = self.tokens.partition_point(|(token, _)| *token < point);
        let (_, member) = self.tokens[at % self.tokens.len()];
        Some(&self.members[member])
    }
}

/// FNV-1a, then the SplitMix64 finalizer so that keys differing in one character land far apart. Stable across
/// processes and versions: every replica and every sharder must agree on it.
pub fn hash(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn keys(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("example.com/Set/default/set-{i}")).collect()
    }

    fn shares(ring: &Ring, keys: &[String]) -> HashMap<String, usize> {
        let mut shares = HashMap::new();
        for key in keys {
            *shares.entry(ring.owner(key).expect("a member").to_owned()).or_default() += 1;
        }
        shares
    }

    #[test]
    fn three_replicas_get_shares_within_fifteen_percent_of_even() {
        let keys = keys(3000);
        let ring = Ring::new(&["host-a", "host-b", "host-c"]);
        let shares = shares(&ring, &keys);
        assert_eq!(shares.len(), 3);
        for (member, share) in shares {
            assert!((850..=1150).contains(&share), "{member} got {share} of 3000");
        }
    }

    #[test]
    fn a_joining_replica_takes_objects_only_for_itself() {
        let keys = keys(3000);
        let before = Ring::new(&["host-a", "host-b"]);
        let after = Ring::new(&["host-a", "host-b", "host-c"]);
        let mut moved = 0;
        for key in &keys {
            let (old, new) = (before.owner(key).unwrap(), after.owner(key).unwrap());
            if old != new {
                assert_eq!(new, "host-c", "{key} moved from {old} to {new}, not to the new replica");
                moved += 1;
            }
        }
        assert!(
            (700..=1300).contains(&moved),
            "{moved} of 3000 moved to the third replica"
        );
    }

    #[test]
    fn a_leaving_replica_hands_only_its_own_objects_to_the_others() {
        let keys = keys(3000);
        let before = Ring::new(&["host-a", "host-b", "host-c"]);
        let after = Ring::new(&["host-a", "host-c"]);
        for key in &keys {
            let old = before.owner(key).unwrap();
            if old != "host-b" {
                assert_eq!(after.owner(key), Some(old), "{key} moved although its replica stayed");
            }
        }
    }

    #[test]
    fn the_ring_depends_on_the_set_not_the_order() {
        let one = Ring::new(&["b", "a", "c", "a"]);
        let other = Ring::new(&["c", "b", "a"]);
        assert_eq!(one.members(), ["a", "b", "c"]);
        for key in keys(100) {
            assert_eq!(one.owner(&key), other.owner(&key));
        }
        assert_eq!(Ring::new::<&str>(&[]).owner("x"), None);
    }

    #[test]
    fn the_hash_is_stable() {
        // Replicas of different versions must agree: the values are part of the format.
        assert_eq!(hash(b"default/set-1"), 0xd315_2307_2567_e942);
        assert_ne!(hash(b"set-1"), hash(b"set-2"));
    }
}
