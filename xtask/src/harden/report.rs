//! The figures section of docs/reliability.md, rewritten by the full run between its markers
//! (the rest of the document is written by hand).

use super::Figures;
use crate::util::{fail, Cmd, Result};
use crate::workspace::Ctx;

pub const BEGIN: &str = "<!-- harden:figures:begin (written by `cargo xtask harden`; do not edit) -->";
pub const END: &str = "<!-- harden:figures:end -->";

pub fn write(ctx: &Ctx, figures: &[Figures], skipped: &[String], elapsed: u64, nightly: &str) -> Result {
    let path = ctx.root.join("docs/reliability.md");
    let doc = std::fs::read_to_string(&path).map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
    let section = section(figures, skipped, elapsed, nightly, &machine(), &date());
    let doc = replace_between(&doc, &section).ok_or_else(|| {
        fail(format!("{} has no figures markers", path.display())).hint(format!("add the lines {BEGIN} and {END}"))
    })?;
    std::fs::write(&path, doc).map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    println!("==> wrote the figures into {}", path.display());
    Ok(())
}

fn section(figures: &[Figures], skipped: &[String], elapsed: u64, nightly: &str, cpu: &str, date: &str) -> String {
    let mut out = format!(
        "Last full run: {date}, {cpu}, {nightly}, {elapsed} s in all.\n\n| part | result | figures |\n|---|---|---|\n"
    );
    for f in figures {
        let values: Vec<String> = f.values.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let verdict = if f.failed { "**failed**" } else { "ok" };
        out.push_str(&format!("| {} | {verdict} | {} |\n", f.part, values.join(", ")));
    }
    for s in skipped {
        out.push_str(&format!("\nSkipped: {s}.\n"));
    }
    out
}

fn replace_between(doc: &str, section: &str) -> Option<String> {
    let start = doc.find(BEGIN)? + BEGIN.len();
    let end = doc[start..].find(END)? + start;
    Some(format!("{}\n{section}{}", &doc[..start], &doc[end..]))
}

/// The CPU (name, family, model, last-level cache) and the core count.
fn machine() -> String {
    format!("{}, {} cores", crate::machine::cpu_description(), crate::machine::cores().unwrap_or(0))
}

fn date() -> String {
    Cmd::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]).probe().map(|d| d.trim().to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_section_between_the_markers_changes() {
        let doc = format!("# title\nhand text\n{BEGIN}\nold figures\n{END}\nmore hand text\n");
        let new = replace_between(&doc, "new figures\n").unwrap();
        assert_eq!(new, format!("# title\nhand text\n{BEGIN}\nnew figures\n{END}\nmore hand text\n"));
        assert!(replace_between("no markers", "x").is_none());
    }

    #[test]
    fn the_section_lists_every_part() {
        let f = Figures { part: "fuzz x".into(), values: vec![("executions".into(), "5".into())], failed: true };
        let s = section(&[f], &["tsan: subset".into()], 7, "rustc nightly", "CPU (2 cores)", "today");
        assert!(s.contains("| fuzz x | **failed** | executions 5 |"), "{s}");
        assert!(s.contains("Skipped: tsan: subset."), "{s}");
    }
}
