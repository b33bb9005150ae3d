//! `AddressMap`: a hash map keyed by an address (an object, a wrapper, a language callable).
//!
//! Addresses are already unique and well spread above their alignment bits, so SipHash (the
//! std default, built against adversarial keys) is wasted work on these hot tables; two
//! multiplies mix them into the bits hashbrown reads.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` from an address to `V`.
pub type AddressMap<V> = HashMap<usize, V, BuildHasherDefault<AddressHasher>>;

/// The hasher of [`AddressMap`]: one `usize` key through a 64-bit finalizer.
#[derive(Default)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `usize` keys are hashed here; any other input still hashes, just not fast.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    #[inline]
    fn write_usize(&mut self, address: usize) {
        // MurmurHash3's 64-bit finalizer: every input bit reaches every output bit, so both
        // the low bits (hashbrown's bucket) and the top 7 (its tag) vary although alignment
        // zeroes the address's low bits.
        let mut h = address as u64;
        h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h = (h ^ (h >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        self.0 = h ^ (h >> 33);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    #[test]
    fn neighbouring_addresses_spread_over_buckets_and_tags() {
        let build = BuildHasherDefault::<AddressHasher>::default();
        let hashes: Vec<u64> = (0..4096usize).map(|i| build.hash_one(0x7f00_0000_0000 + i * 16)).collect();
        // hashbrown picks the bucket from the low bits and a 7-bit tag from the top bits.
        let buckets: HashSet<u64> = hashes.iter().map(|h| h & 4095).collect();
        let tags: HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert!(buckets.len() > 2400, "only {} of 4096 buckets used", buckets.len());
        assert_eq!(tags.len(), 128);
        let mut map = AddressMap::default();
        map.extend((0..4096usize).map(|i| (0x7f00_0000_0000 + i * 16, i)));
        assert!((0..4096usize).all(|i| map[&(0x7f00_0000_0000 + i * 16)] == i));
    }
}
