//! The extension's global allocator: mimalloc 2 (the `v2` feature), whose size classes are
//! exact in 16-byte steps up to 128 bytes, where glibc adds a chunk header (a two-field object
//! with its slot word and wrapper, 96 bytes, would take a 112-byte chunk); mimalloc 3 serves a
//! 96-byte request with 8-byte alignment from a 112-byte block.
//!
//! Requests aligned to at most 8 bytes (nearly all, native objects included) take `mi_malloc`:
//! every mimalloc block is at least 8-aligned, and the aligned entry point the `mimalloc`
//! crate always calls costs ~30 more instructions per allocation (W4 constructs one object
//! per call).

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc, mi_zalloc_aligned,
};

/// What every mimalloc block's address is a multiple of (its block sizes are multiples of 8).
const BLOCK_ALIGN: usize = 8;

pub struct MiMalloc;

// SAFETY: mimalloc's entry points meet `GlobalAlloc`'s contract: the plain ones return blocks
// aligned to BLOCK_ALIGN, used only for layouts that ask no more; the aligned ones honour any
// power-of-two alignment; `mi_free` takes any block either made.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: a non-zero size (GlobalAlloc's contract); the alignment is handled as above.
        unsafe {
            if layout.align() <= BLOCK_ALIGN {
                mi_malloc(layout.size()) as *mut u8
            } else {
                mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe {
            if layout.align() <= BLOCK_ALIGN {
                mi_zalloc(layout.size()) as *mut u8
            } else {
                mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (GlobalAlloc's contract).
        unsafe { mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout` (GlobalAlloc's contract).
        unsafe {
            if layout.align() <= BLOCK_ALIGN {
                mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

const _: () = assert!(BLOCK_ALIGN == std::mem::size_of::<usize>(), "mimalloc's blocks are pointer-aligned");
