//! The numbers and names that cross language boundaries, listed once.
//!
//! Frontends hand [`SHARED`] to their language at load instead of repeating its values:
//! Python as `_native.CONSTANTS`, Node as the addon's `constants` object, the JVM through
//! `Native.constant(name)` (each adds its own frontend-private entries, such as the JVM's
//! pending-result marker or Node's call-frame layout). C cannot ask, so `include/tether.h`
//! spells them out and `tests/constants.rs` checks the header against this table: changing a
//! value on either side fails that test.

use crate::any::TypeIndex;
use crate::error::ErrorKind;
use crate::function::{
    FUNC_ADOPTS_LENT, FUNC_CELL_GETTER, FUNC_INT_ENTRY, FUNC_LEAF, FUNC_NONBLOCKING, FUNC_SIGNED, FUNC_VALUE_ENTRY,
    INT_ENTRY_ARGS, VALUE_ENTRY_ARGS,
};
use crate::plugin::{ABI_MAJOR, ABI_MINOR};
use crate::signature::{TypeKind, PARAM_HAS_DEFAULT, PARAM_KEYWORD, SIG_RECEIVER};

/// `(name, value)`: the name is the C macro's without its `TETHER_` prefix.
pub const SHARED: &[(&str, i64)] = &[
    ("ABI_MAJOR", ABI_MAJOR as i64),
    ("ABI_MINOR", ABI_MINOR as i64),
    ("TYPE_NONE", TypeIndex::NONE as i64),
    ("TYPE_INT", TypeIndex::INT as i64),
    ("TYPE_BOOL", TypeIndex::BOOL as i64),
    ("TYPE_FLOAT", TypeIndex::FLOAT as i64),
    ("TYPE_OPAQUE_PTR", TypeIndex::OPAQUE_PTR as i64),
    ("TYPE_SMALL_STR", TypeIndex::SMALL_STR as i64),
    ("TYPE_SMALL_BYTES", TypeIndex::SMALL_BYTES as i64),
    ("TYPE_RAW_STR", TypeIndex::RAW_STR as i64),
    ("TYPE_RAW_BYTES", TypeIndex::RAW_BYTES as i64),
    ("TYPE_STATIC_END", TypeIndex::STATIC_END as i64),
    ("TYPE_OBJECT", TypeIndex::OBJECT as i64),
    ("TYPE_STR", TypeIndex::STR as i64),
    ("TYPE_BYTES", TypeIndex::BYTES as i64),
    ("TYPE_ERROR", TypeIndex::ERROR as i64),
    ("TYPE_FUNCTION", TypeIndex::FUNCTION as i64),
    ("TYPE_ARRAY", TypeIndex::ARRAY as i64),
    ("TYPE_MAP", TypeIndex::MAP as i64),
    ("TYPE_MODULE", TypeIndex::MODULE as i64),
    ("TYPE_OPAQUE", TypeIndex::OPAQUE as i64),
    ("TYPE_HOST_VALUE", TypeIndex::HOST_VALUE as i64),
    ("TYPE_FIRST_USER", TypeIndex::FIRST_USER as i64),
    ("ERROR_TYPE_ERROR", ErrorKind::TypeError.code() as i64),
    ("ERROR_VALUE_ERROR", ErrorKind::ValueError.code() as i64),
    ("ERROR_INDEX_ERROR", ErrorKind::IndexError.code() as i64),
    ("ERROR_KEY_ERROR", ErrorKind::KeyError.code() as i64),
    ("ERROR_ATTRIBUTE_ERROR", ErrorKind::AttributeError.code() as i64),
    ("ERROR_RUNTIME_ERROR", ErrorKind::RuntimeError.code() as i64),
    ("ERROR_RUST_PANIC", ErrorKind::RustPanic.code() as i64),
    ("ERROR_MEMORY_ERROR", ErrorKind::MemoryError.code() as i64),
    ("FUNC_LEAF", FUNC_LEAF as i64),
    ("FUNC_ADOPTS_LENT", FUNC_ADOPTS_LENT as i64),
    ("FUNC_CELL_GETTER", FUNC_CELL_GETTER as i64),
    ("FUNC_SIGNED", FUNC_SIGNED as i64),
    ("FUNC_NONBLOCKING", FUNC_NONBLOCKING as i64),
    ("FUNC_INT_ENTRY", FUNC_INT_ENTRY as i64),
    ("INT_ENTRY_ARGS", INT_ENTRY_ARGS as i64),
    ("FUNC_VALUE_ENTRY", FUNC_VALUE_ENTRY as i64),
    ("VALUE_ENTRY_ARGS", VALUE_ENTRY_ARGS as i64),
    ("VALUE_RAISED", crate::function::ValueOutcome::RAISED as i64),
    ("TYPE_WEAK_REFERENCEABLE", crate::types::TYPE_WEAK_REFERENCEABLE as i64),
    ("TYPE_DESC_ANY", TypeKind::Any as i64),
    ("TYPE_DESC_NONE", TypeKind::None as i64),
    ("TYPE_DESC_BOOL", TypeKind::Bool as i64),
    ("TYPE_DESC_INT", TypeKind::Int as i64),
    ("TYPE_DESC_FLOAT", TypeKind::Float as i64),
    ("TYPE_DESC_STR", TypeKind::Str as i64),
    ("TYPE_DESC_BYTES", TypeKind::Bytes as i64),
    ("TYPE_DESC_OBJECT", TypeKind::Object as i64),
    ("TYPE_DESC_ARRAY", TypeKind::Array as i64),
    ("TYPE_DESC_MAP", TypeKind::Map as i64),
    ("TYPE_DESC_OPTIONAL", TypeKind::Optional as i64),
    ("TYPE_DESC_CALLABLE", TypeKind::Callable as i64),
    ("TYPE_DESC_HOST", TypeKind::Host as i64),
    ("PARAM_HAS_DEFAULT", PARAM_HAS_DEFAULT as i64),
    ("PARAM_KEYWORD", PARAM_KEYWORD as i64),
    ("SIG_RECEIVER", SIG_RECEIVER as i64),
    ("LENT_MARK", crate::any::LENT_MARK as i64),
    ("MAX_NESTING_DEPTH", crate::nesting::MAX_DEPTH as i64),
    ("MAX_CONTAINER_ITEMS", crate::nesting::MAX_ITEMS as i64),
];

/// The value of shared constant `name`.
pub fn shared(name: &str) -> Option<i64> {
    SHARED.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
}

/// Every error kind the core raises: `(name, code)`, the name an `Error`'s `kind` holds and
/// the code its `code` holds ([`ErrorKind`]). Each frontend maps each code to its own
/// exception class (and tests that it does, for every entry here).
pub const ERROR_KINDS: &[(&str, i32)] = &[
    (ErrorKind::TypeError.as_str(), ErrorKind::TypeError.code()),
    (ErrorKind::ValueError.as_str(), ErrorKind::ValueError.code()),
    (ErrorKind::IndexError.as_str(), ErrorKind::IndexError.code()),
    (ErrorKind::KeyError.as_str(), ErrorKind::KeyError.code()),
    (ErrorKind::AttributeError.as_str(), ErrorKind::AttributeError.code()),
    (ErrorKind::RuntimeError.as_str(), ErrorKind::RuntimeError.code()),
    (ErrorKind::RustPanic.as_str(), ErrorKind::RustPanic.code()),
    (ErrorKind::MemoryError.as_str(), ErrorKind::MemoryError.code()),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_looked_up() {
        for (i, (name, value)) in SHARED.iter().enumerate() {
            assert!(SHARED[..i].iter().all(|(n, _)| n != name), "{name} listed twice");
            assert_eq!(shared(name), Some(*value));
        }
        assert_eq!(shared("TYPE_ARRAY"), Some(69));
        assert_eq!(shared("NO_SUCH_CONSTANT"), None);
    }
}
