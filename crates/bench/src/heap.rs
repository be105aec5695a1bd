//! Live heap bytes of this process: the benchmark's allocator passes every call to
//! the system allocator and counts what is allocated and not yet freed (one relaxed
//! atomic add per call). Beside RSS, which also holds what the allocator kept after
//! a free and pages never touched, it says what the client's structures take.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

/// The system allocator, counting live bytes.
pub struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call goes to the system allocator unchanged; the count is one atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: a pointer the system allocator gave, with its layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        p
    }
}

/// Bytes allocated and not freed now (requested sizes, without the allocator's own
/// overhead per block).
pub fn live_bytes() -> u64 {
    LIVE.load(Ordering::Relaxed).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_allocation_is_counted_until_freed() {
        let v = vec![0u8; 1 << 20];
        assert!(live_bytes() >= 1 << 20);
        drop(v);
    }
}
