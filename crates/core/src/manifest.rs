//! A module's manifest: one line per exported item (function, type, field, method,
//! constructor) with everything a generated binding relies on (names, parameter names, types,
//! defaults, keyword flags, settability), and a hash of each. Bindings generated from a
//! module (`cargo xtask bindgen`) record its manifest; loading them against a module whose
//! manifest differs is an error naming each item that differs (stale bindings, caught exactly).

use crate::plugin::ModuleObj;
use crate::signature::{render_default, render_type, Language, SignatureInfo};
use crate::types::{self, TypeInfo};

/// One exported item: `item` names it ("function greet", "type sample.Counter", "method
/// sample.Counter.increment_by"), `shape` is its description, `hash` a 64-bit FNV-1a of
/// `shape` in hex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestEntry {
    pub item: String,
    pub shape: String,
    pub hash: String,
}

fn fnv1a(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn entry(item: String, shape: String) -> ManifestEntry {
    ManifestEntry { hash: fnv1a(&shape), item, shape }
}

/// A signature written out unambiguously (receiver, each parameter's name, keyword flag,
/// type and default, the result).
pub fn signature_shape(sig: Option<&SignatureInfo>) -> String {
    let Some(sig) = sig else { return "(unsigned)".into() };
    let params: Vec<String> = sig
        .params()
        .iter()
        .map(|p| {
            let default =
                p.default().map(|d| format!(" = {}", render_default(d, Language::Python))).unwrap_or_default();
            let keyword = if p.keyword() { "" } else { "positional " };
            format!("{keyword}{}: {}{default}", p.name(), render_type(p.ty(), Language::Python))
        })
        .collect();
    let receiver = if sig.has_receiver() { "method " } else { "" };
    format!("{receiver}({}) -> {}", params.join(", "), render_type(sig.result(), Language::Python))
}

fn type_entries(info: &TypeInfo, out: &mut Vec<ManifestEntry>) {
    let key = info.key();
    let parent = types::type_key(info.parent).unwrap_or("");
    out.push(entry(format!("type {key}"), format!("parent {parent}")));
    for f in info.fields() {
        let settable = if f.setter().is_some() { "settable" } else { "read-only" };
        out.push(entry(
            format!("field {key}.{}", f.name()),
            format!("{} {settable}", render_type(f.ty(), Language::Python)),
        ));
    }
    for m in info.methods() {
        let kind = if m.is_static != 0 { "static " } else { "" };
        out.push(entry(
            format!("method {key}.{}", m.name()),
            format!("{kind}{}", signature_shape(m.func().signature())),
        ));
    }
    if let Some(ctor) = info.constructor() {
        out.push(entry(format!("constructor {key}"), signature_shape(ctor.signature())));
    }
}

/// The manifest of `module`, in a fixed order: its functions by name, then its types in
/// export order with their own members.
pub fn module_manifest(module: &ModuleObj) -> Vec<ManifestEntry> {
    let mut out = Vec::new();
    let mut functions: Vec<&(String, crate::Function)> = module.functions().iter().collect();
    functions.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, f) in functions {
        out.push(entry(format!("function {name}"), format!("{} {}", f.name(), signature_shape(f.signature()))));
    }
    for &index in module.types() {
        if let Some(info) = types::type_info(index) {
            type_entries(info, &mut out);
        }
    }
    out
}

/// Compare a manifest recorded by generated bindings (`(item, hash)` pairs) with the module's:
/// `Ok` when they agree, else the message naming every item that was added, removed or changed.
pub fn check_manifest(module: &ModuleObj, recorded: &[(String, String)]) -> Result<(), String> {
    let current = module_manifest(module);
    let mut problems = Vec::new();
    for (item, hash) in recorded {
        match current.iter().find(|e| &e.item == item) {
            None => problems.push(format!("{item} is gone")),
            Some(e) if &e.hash != hash => problems.push(format!("{item} changed (now {})", e.shape)),
            Some(_) => {}
        }
    }
    for e in &current {
        if !recorded.iter().any(|(item, _)| item == &e.item) {
            problems.push(format!("{} is new", e.item));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the bindings for {} were generated from another version of it: {}; regenerate them (cargo xtask bindgen)",
            module.path(),
            problems.join("; ")
        ))
    }
}

/// A manifest as generated Node and Java code record it: one `item<TAB>hash` line per item
/// (the one text form; an item without a tab has an empty hash, which never matches).
pub fn parse_recorded(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (item, hash) = l.rsplit_once('\t').unwrap_or((l, ""));
            (item.to_string(), hash.to_string())
        })
        .collect()
}
