//! The limit on converting nested language containers (lists, tuples, dicts, JS arrays and
//! objects, Java `List`s, `Map`s and arrays) to native Arrays and Maps.
//!
//! Every frontend converts containers recursively. A value that contains itself would recurse
//! without end, and one nested a hundred thousand levels deep overflows the thread's stack
//! (a segmentation fault in CPython, a bare `StackOverflowError` on the JVM). So each
//! frontend walks one argument's containers through one [`Nesting`], which refuses a cycle or
//! a depth past [`MAX_DEPTH`] with a ValueError *before* the container is converted: native
//! code never sees a half-converted value, and whatever was built so far is dropped.

use crate::error::Error;

/// The deepest nesting of containers a frontend converts (the outermost container is level
/// 1). Documented in docs/abi.md; the JVM reads it through `Native.maxNestingDepth()`.
pub const MAX_DEPTH: usize = 100;

/// The most items one container converts (2^27, 2 GiB of cells). A JS array's length can name
/// 2^32 - 1 holes that take no memory, and converting them would exhaust it.
pub const MAX_ITEMS: usize = 1 << 27;

/// Check a container's item count before converting it: a ValueError past [`MAX_ITEMS`].
pub fn check_items(n: usize) -> Result<(), Error> {
    if n > MAX_ITEMS {
        return Err(too_many_error(n));
    }
    Ok(())
}

#[cold]
fn too_many_error(n: usize) -> Error {
    Error::value(format!(
        "a container of {n} items is too large to convert (tether converts at most {MAX_ITEMS} items per container)"
    ))
}

/// The containers being converted right now, outermost first: one per recursion level.
///
/// `K` names a container the way its language can compare it: an address for CPython, a
/// handle compared with `napi_strict_equals` or `IsSameObject` for Node and the JVM.
pub struct Nesting<K> {
    open: Vec<K>,
}

impl<K> Default for Nesting<K> {
    fn default() -> Self {
        Nesting { open: Vec::new() }
    }
}

impl<K> Nesting<K> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Enter `container`, one level below the current one. Err (a ValueError naming the limit)
    /// when it is one of the containers already open (a cycle) or the nesting would pass
    /// [`MAX_DEPTH`]; then nothing was entered. `same` tells whether two keys name one
    /// container. Every `Ok` is matched by one [`Nesting::leave`].
    pub fn enter(&mut self, container: K, mut same: impl FnMut(&K, &K) -> bool) -> Result<(), Error> {
        if let Some(level) = self.open.iter().position(|open| same(open, &container)) {
            return Err(cycle_error(level + 1, self.open.len() + 1));
        }
        if self.open.len() >= MAX_DEPTH {
            return Err(too_deep_error());
        }
        self.open.push(container);
        Ok(())
    }

    /// Leave the innermost open container.
    pub fn leave(&mut self) {
        self.open.pop();
    }

    /// How many containers are open.
    pub fn depth(&self) -> usize {
        self.open.len()
    }
}

#[cold]
fn cycle_error(first: usize, again: usize) -> Error {
    Error::value(format!(
        "cannot convert a container that contains itself (the container at nesting level {first} \
         appears again at level {again}); native Arrays and Maps hold values, not cycles \
         (tether converts at most {MAX_DEPTH} levels)"
    ))
}

#[cold]
fn too_deep_error() -> Error {
    Error::value(format!(
        "value nested more than {MAX_DEPTH} levels deep: tether converts containers up to \
         {MAX_DEPTH} levels (tether_core::nesting::MAX_DEPTH)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &usize, b: &usize) -> bool {
        a == b
    }

    #[test]
    fn refuses_a_container_already_open() {
        let mut n = Nesting::new();
        n.enter(1, same).unwrap();
        n.enter(2, same).unwrap();
        let e = n.enter(1, same).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(e.message().contains("contains itself"), "{}", e.message());
        assert!(e.message().contains("level 1 appears again at level 3"), "{}", e.message());
        assert_eq!(n.depth(), 2, "a refused container is not entered");
        n.leave();
        n.enter(2, same).expect("a sibling may repeat a container that was left");
    }

    #[test]
    fn refuses_more_items_than_the_limit() {
        assert!(check_items(MAX_ITEMS).is_ok());
        let e = check_items(MAX_ITEMS + 1).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(e.message().contains("too large to convert"), "{}", e.message());
    }

    #[test]
    fn refuses_the_level_past_the_limit() {
        let mut n = Nesting::new();
        for level in 0..MAX_DEPTH {
            n.enter(level, same).unwrap();
        }
        let e = n.enter(MAX_DEPTH, same).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(e.message().contains(&format!("more than {MAX_DEPTH} levels")), "{}", e.message());
        n.leave();
        n.enter(MAX_DEPTH, same).expect("back under the limit");
    }
}
