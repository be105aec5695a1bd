//! Prefix caching, as vLLM's automatic prefix caching counts it: a prompt's full
//! blocks are named by chained hashes (block k's hash covers blocks 0..=k), and a
//! new request whose leading blocks were computed before skips their prefill.
//!
//! Simplified against vLLM: the cache remembers block hashes, not KV memory. A hit
//! saves compute (fewer prefill tokens); the request still takes blocks for its
//! whole prompt in the pool. The cache holds at most as many blocks as the pool,
//! least recently used first out.

use std::collections::{BTreeMap, HashMap};

/// Chained hashes of the full blocks of `ids` (a partial last block is not cached).
pub fn block_hashes(ids: &[u32], block_size: u32) -> Vec<u64> {
    let bs = block_size.max(1) as usize;
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    ids.chunks_exact(bs)
        .map(|block| {
            for &id in block {
                h = (h ^ u64::from(id)).wrapping_mul(0x0000_0100_0000_01b3);
            }
            h = h.rotate_left(29) ^ 0x9E37_79B9_7F4A_7C15;
            h
        })
        .collect()
}

/// Block hashes computed before, bounded, least recently used evicted first.
#[derive(Debug, Default)]
pub struct PrefixCache {
    last_use: HashMap<u64, u64>,
    by_age: BTreeMap<u64, u64>,
    tick: u64,
    capacity: usize,
}

impl PrefixCache {
    /// A cache of at most `capacity` blocks.
    pub fn new(capacity: usize) -> PrefixCache {
        PrefixCache {
            capacity,
            ..PrefixCache::default()
        }
    }

    /// How many leading blocks of `blocks` are cached (each marked as used).
    pub fn lookup(&mut self, blocks: &[u64]) -> usize {
        let hits = blocks
            .iter()
            .take_while(|h| self.last_use.contains_key(h))
            .count();
        for &h in &blocks[..hits] {
            self.touch(h);
        }
        hits
    }

    /// Remembers `blocks` as computed.
    pub fn insert(&mut self, blocks: &[u64]) {
        for &h in blocks {
            self.touch(h);
        }
        while self.last_use.len() > self.capacity {
            let Some((_, old)) = self.by_age.pop_first() else {
                break;
            };
            self.last_use.remove(&old);
        }
    }

    fn touch(&mut self, h: u64) {
        self.tick += 1;
        if let Some(t) = self.last_use.insert(h, self.tick) {
            self.by_age.remove(&t);
        }
        self.by_age.insert(self.tick, h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_leading_blocks_hash_alike_and_a_change_breaks_the_chain() {
        let a: Vec<u32> = (0..40).collect();
        let mut b = a.clone();
        b[20] = 999;
        let (ha, hb) = (block_hashes(&a, 8), block_hashes(&b, 8));
        assert_eq!(ha.len(), 5);
        assert_eq!(ha[..2], hb[..2]);
        assert!(ha[2..].iter().zip(&hb[2..]).all(|(x, y)| x != y));
        assert_eq!(block_hashes(&a[..7], 8), Vec::<u64>::new());
    }

    #[test]
    fn lookup_counts_the_leading_run_and_eviction_is_lru() {
        let mut c = PrefixCache::new(3);
        c.insert(&[1, 2, 3]);
        assert_eq!(c.lookup(&[1, 2, 9, 3]), 2);
        c.insert(&[4]); // evicts 3, the least recently used
        assert_eq!(c.lookup(&[3]), 0);
        assert_eq!(c.lookup(&[1, 2, 4]), 3);
    }
}
