//! Reading a cell field's live wrapper without changing a count.

use super::machine::{live_handle, slot_of, TieHost};

/// The live wrapper of the object a cell holds, revived while the cell is held (which keeps the
/// object alive; the wrapper owns its own +1, so no count changes), for a serialized host and
/// a value whose kind `ties` says comes back as a wrapper. `None` when there is none (or the
/// object has no prefix of this host): the caller copies the value (`cell.get()`) and
/// converts it as usual. This is how frontends read cell fields (`cell::direct_cell`).
///
/// `WAIT`: whether to wait for a cell another thread holds at this instant, or to answer
/// `None` at once (a fast path's first try, whose caller then waits on its general path).
///
/// # Safety
/// The caller runs under the host's lock; `revive` runs no language code (the cell is held).
#[inline(always)]
pub unsafe fn revive_in_cell<H: TieHost, const WAIT: bool>(
    host: &H,
    tag: u32,
    cell: &crate::cell::AnyCell,
    ties: impl FnOnce(i32) -> bool,
) -> Option<H::Handle> {
    if !H::SERIALIZED {
        return None;
    }
    let revive = |v: crate::any::AnyView<'_>| match v.as_object_ptr() {
        // SAFETY: the held cell keeps `obj` alive while its slot is read.
        Some(obj) if ties(v.type_index()) => live_handle(host, unsafe { slot_of::<H>(obj, tag) }?).map(|(h, _)| h),
        _ => None,
    };
    if WAIT {
        cell.with_view(revive)
    } else {
        cell.with_view_if_free(revive).flatten()
    }
}
