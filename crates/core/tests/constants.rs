//! include/tether.h against `tether_core::constants::SHARED`: every shared constant is defined
//! in the header with the same value, so C plugins and the core cannot drift apart.

use tether_core::constants::SHARED;

/// `#define TETHER_<NAME> <integer>` lines of the header (a `u` suffix, parentheses and a
/// comment allowed).
fn header_defines() -> Vec<(String, i64)> {
    let header = concat!(env!("CARGO_MANIFEST_DIR"), "/include/tether.h");
    let text = std::fs::read_to_string(header).expect("read tether.h");
    text.lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("#define TETHER_")?;
            let mut parts = rest.split_whitespace();
            let name = parts.next()?;
            let value = parts.next()?.trim_end_matches('u').trim_start_matches('(').trim_end_matches(')');
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

#[test]
#[cfg_attr(miri, ignore)] // reads source files
fn tether_h_defines_every_shared_constant_with_its_value() {
    let defines = header_defines();
    let mut wrong = Vec::new();
    for &(name, value) in SHARED {
        match defines.iter().find(|(n, _)| n == name) {
            Some((_, v)) if *v == value => {}
            Some((_, v)) => wrong.push(format!("TETHER_{name} is {v} in tether.h, {value} in the core")),
            None => wrong.push(format!("TETHER_{name} ({value}) is missing from tether.h")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
#[cfg_attr(miri, ignore)] // reads source files
fn the_header_parse_sees_the_type_indices() {
    // Guards the test above against a parse that silently finds nothing.
    let defines = header_defines();
    assert!(defines.iter().any(|(n, v)| n == "TYPE_ARRAY" && *v == 69), "{defines:?}");
    assert!(defines.len() > 20);
}
