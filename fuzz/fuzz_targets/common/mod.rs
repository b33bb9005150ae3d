//! What every target shares: a reader that turns the fuzzer's bytes into choices (running out
//! of bytes reads zeros, so every input is a complete program), and the core's host table.

#![allow(dead_code)]

use tether_core::plugin::{ApiTable, ByteSlice};

pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }
    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    pub fn u64(&mut self) -> u64 {
        (self.u32() as u64) | ((self.u32() as u64) << 32)
    }
    /// One of `n` choices (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n
    }
    /// The next `len` bytes of the input itself (fewer at its end): a borrowed slice, as C
    /// would pass one.
    pub fn bytes(&mut self, len: usize) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        let end = start.saturating_add(len).min(self.data.len());
        self.pos = start + len;
        &self.data[start..end]
    }
    /// A short byte string of the input's choosing (any bytes, UTF-8 or not).
    pub fn short_bytes(&mut self) -> &'a [u8] {
        let len = self.below(24);
        self.bytes(len)
    }
}

pub fn slice(b: &[u8]) -> ByteSlice {
    ByteSlice { ptr: b.as_ptr(), len: b.len() }
}

/// The table the host hands every plugin: the C ABI under test.
pub fn api() -> &'static ApiTable {
    // SAFETY: the host's table is a static that lives for the whole process.
    unsafe { &*tether_core::ffi::host_table() }
}

/// Takes the raised error after a failed entry point and checks it is an `Error` object (a
/// typed error, never a bare failure).
pub fn expect_raised(what: &str) {
    // SAFETY: takes this thread's raised error, if any; no arguments.
    let raw = unsafe { (api().take_last_error)() };
    assert!(!raw.is_null(), "{what} failed without raising an error");
    // SAFETY: take_last_error returns an owned reference.
    let obj = unsafe { tether_core::ObjectRef::from_raw(raw) };
    // Its kind may be any string (`testing.raise_error` and `make_error` take one from the
    // caller, "" included); frontends map kinds they do not know to their runtime error.
    if let Err(o) = tether_core::Error::from_object(obj) {
        panic!("{what} raised a non-Error {o:?}");
    }
}

/// No error may be left pending after a call that succeeded.
pub fn expect_none_raised(what: &str) {
    // SAFETY: as above.
    let raw = unsafe { (api().take_last_error)() };
    if !raw.is_null() {
        // SAFETY: an owned reference.
        let obj = unsafe { tether_core::ObjectRef::from_raw(raw) };
        panic!("{what} succeeded but left an error raised: {obj:?}");
    }
}
