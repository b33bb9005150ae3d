//! Binding a call's arguments to a signature's parameters: keywords to positions, defaults
//! for what was left out, and the one wording of every mismatch, for every frontend.

use super::SignatureInfo;
use crate::error::{Error, Result};

/// Where a parameter's value comes from in one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The caller's positional argument `i` (the receiver counted).
    Positional(usize),
    /// The caller's keyword argument `i`.
    Keyword(usize),
    /// The parameter's default.
    Default,
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn was(n: usize) -> &'static str {
    if n == 1 {
        "was"
    } else {
        "were"
    }
}

/// "'a'", "'a' and 'b'", "'a', 'b' and 'c'".
fn name_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// Bind a call of `func` (its name, for messages) that passes `positional` positional
/// arguments (a method's receiver counted) and the keyword arguments named `keywords` to
/// `sig`'s parameters: one [`Bound`] per parameter, or a TypeError worded as Python words
/// its own (counting only what the caller wrote, never the receiver).
pub fn bind_call(func: &str, sig: &SignatureInfo, positional: usize, keywords: &[&str]) -> Result<Vec<Bound>> {
    let params = sig.params();
    let receiver = sig.has_receiver() as usize;
    if positional > params.len() {
        let (required, total) = (sig.required().saturating_sub(receiver), params.len() - receiver);
        let takes = if required == total {
            plural(total, "positional argument")
        } else {
            format!("from {required} to {total} positional arguments")
        };
        let given = positional.saturating_sub(receiver);
        return Err(Error::type_error(format!("{func}() takes {takes} but {given} {} given", was(given))));
    }
    let mut bound: Vec<Option<Bound>> =
        (0..params.len()).map(|i| (i < positional).then_some(Bound::Positional(i))).collect();
    for (k, &name) in keywords.iter().enumerate() {
        let Some(i) = params.iter().position(|p| !p.name().is_empty() && p.name() == name) else {
            return Err(Error::type_error(format!("{func}() got an unexpected keyword argument '{name}'")));
        };
        if !params[i].keyword() {
            return Err(Error::type_error(format!(
                "{func}() got a positional-only argument passed as a keyword argument: '{name}'"
            )));
        }
        if bound[i].is_some() {
            return Err(Error::type_error(format!("{func}() got multiple values for argument '{name}'")));
        }
        bound[i] = Some(Bound::Keyword(k));
    }
    let mut missing: Vec<&str> = Vec::new();
    let out = bound
        .iter()
        .zip(params)
        .map(|(b, p)| match (b, p.default()) {
            (Some(b), _) => *b,
            (None, Some(_)) => Bound::Default,
            (None, None) => {
                missing.push(p.name());
                Bound::Default
            }
        })
        .collect();
    if !missing.is_empty() {
        let unnamed = missing.iter().any(|n| n.is_empty());
        let list = if unnamed { String::new() } else { format!(": {}", name_list(&missing)) };
        return Err(Error::type_error(format!(
            "{func}() missing {}{list}",
            plural(missing.len(), "required argument")
        )));
    }
    Ok(out)
}

/// "f() takes 2 arguments but 3 were given", counting what the caller wrote: `expected` and
/// `given` include a method's receiver, which the message leaves out.
pub fn arity_message(func: &str, sig: Option<&SignatureInfo>, expected: usize, given: usize) -> String {
    let receiver = sig.is_some_and(SignatureInfo::has_receiver) as usize;
    let (expected, given) = (expected.saturating_sub(receiver), given.saturating_sub(receiver));
    format!("{func}() takes {} but {given} {} given", plural(expected, "argument"), was(given))
}
