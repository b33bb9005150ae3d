//! Host values: a language's own object held by native code.
//!
//! A value a frontend has no conversion for (a Python `Payload()`, a JS class instance, any
//! Java object outside the converted kinds) crosses as a `tether.HostValue` object holding one
//! strong reference of its language. Native code stores and passes it like any object; when it
//! reaches a frontend of its own language again it is that very value (`echo(o) is o`), never a
//! wrapper (`TieHost::host_value_of`); another language's frontend refuses it with a TypeError.
//! The reference is released when the object dies, on whatever thread drops it last: each
//! language's `release` defers to its own thread when it must.

use std::ffi::c_void;

use crate::any::TypeIndex;
use crate::arc::ObjectArc;
use crate::error::{Error, Result};
use crate::object::Object;

/// One language whose values native code can hold: a frontend defines one as a static, and its
/// address identifies the language.
#[repr(C)]
pub struct HostLanguage {
    /// Shown in messages: "Python", "JavaScript", "Java".
    pub name: &'static str,
    /// Drops one strong reference of this language. Called once per value, on any thread, with
    /// no lock of the core held; it must not call back into native code synchronously (defer
    /// to the language's thread instead, as frontends do for every release).
    pub release: unsafe extern "C" fn(value: *mut c_void),
}

/// The body of a `tether.HostValue`: the language's reference, its language, and the name of
/// the value's type in that language, copied when it crossed (for messages on any thread).
#[repr(C)]
pub struct HostValueObj {
    value: *mut c_void,
    language: &'static HostLanguage,
    type_name: *mut u8,
    type_name_len: usize,
}

impl Object for HostValueObj {
    const TYPE_KEY: &'static str = "tether.HostValue";
    fn type_index() -> i32 {
        TypeIndex::HOST_VALUE
    }
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<HostValueObj>() == 32);
    assert!(offset_of!(HostValueObj, value) == 0 && offset_of!(HostValueObj, language) == 8);
    assert!(offset_of!(HostValueObj, type_name) == 16 && offset_of!(HostValueObj, type_name_len) == 24);
};

// SAFETY: the value is only handed to its language's `release` (callable from any thread, as
// `HostLanguage` requires) and to that language's frontend; the name is immutable.
unsafe impl Send for HostValueObj {}
// SAFETY: as for Send: no field is written after construction.
unsafe impl Sync for HostValueObj {}

impl HostValueObj {
    /// A native object owning `value`, one strong reference of `language`, whose type is
    /// called `type_name` there.
    ///
    /// # Safety
    /// `value` is a strong reference of `language` that this object now owns: `language.release`
    /// releases it once, when the object dies.
    pub unsafe fn new(value: *mut c_void, language: &'static HostLanguage, type_name: &str) -> ObjectArc<HostValueObj> {
        let name: Box<[u8]> = type_name.as_bytes().into();
        let type_name_len = name.len();
        let type_name = Box::into_raw(name) as *mut u8;
        ObjectArc::new(HostValueObj { value, language, type_name, type_name_len })
    }

    /// The value, when `language` is its own (borrowed: the object keeps it alive); a
    /// TypeError naming both languages otherwise.
    pub fn value_for(&self, language: &'static HostLanguage) -> Result<*mut c_void> {
        if std::ptr::eq(self.language, language) {
            return Ok(self.value);
        }
        Err(Error::type_error(format!(
            "{} (a {} value) held by native code cannot be used from {}: host values only go back to their own language",
            self.type_name(),
            self.language.name,
            language.name
        )))
    }

    /// The value's type as its language names it (`Payload`, `Date`, `java.lang.Thread`).
    pub fn type_name(&self) -> &str {
        // SAFETY: `new` stored the bytes of a `&str` (valid UTF-8), owned until drop.
        unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(self.type_name, self.type_name_len)) }
    }

    /// The language the value belongs to.
    pub fn language(&self) -> &'static HostLanguage {
        self.language
    }
}

impl Drop for HostValueObj {
    fn drop(&mut self) {
        // SAFETY: the reference this object owns (the contract of `new`), released once.
        unsafe { (self.language.release)(self.value) };
        // SAFETY: the box `new` leaked, with its length.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.type_name, self.type_name_len)) });
    }
}
