//! The seeded generator behind `plugin check`'s random mutation sequences: SplitMix64, written out here so that a
//! seed replays the same sequences with every build of the host (a library's generator may change its stream
//! between versions).

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014).
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator for `seed`, mixed with the words of `stream` (the fixture and sequence a generator serves), so
    /// that each sequence has a stream of its own that does not depend on how many others ran before it.
    pub fn new(seed: u64, stream: &[&str]) -> Self {
        let mut state = seed;
        for word in stream {
            // FNV-1a of the word, folded in through the generator's own mixer.
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in word.bytes() {
                hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
            }
            state = mix(state ^ hash);
        }
        Self { state }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.state)
    }

    /// A number in `0..bound` (`bound` > 0), by Lemire's multiply-shift (bias below 2^-32 for the small bounds used
    /// here).
    pub fn below(&mut self, bound: usize) -> usize {
        let bound = bound as u64;
        usize::try_from((u128::from(self.next_u64()) * u128::from(bound)) >> 64).unwrap_or(0)
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_splitmix64() {
        // Reference values of SplitMix64 seeded with 0 (the first outputs of the published algorithm).
        let mut generator = SplitMix64 { state: 0 };
        assert_eq!(generator.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(generator.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn the_same_seed_and_stream_replay_and_others_differ() {
        let draw = |seed, stream: &[&str]| {
            let mut generator = SplitMix64::new(seed, stream);
            (0..8).map(|_| generator.below(1000)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7, &["a", "1"]), draw(7, &["a", "1"]));
        assert_ne!(draw(7, &["a", "1"]), draw(7, &["a", "2"]));
        assert_ne!(draw(7, &["a", "1"]), draw(8, &["a", "1"]));
        assert!(draw(1, &[]).iter().all(|n| *n < 1000));
    }
}
