//! The machine a run measured on, as the bench and harden reports record it.
//!
//! A model name alone does not tell CPUs apart: issue 18 met two Intel Xeons that both read
//! "Intel(R) Xeon(R) Processor", one with a 260 MiB L3 where 2^20 objects never left the
//! cache. So reports give the family, the model and the last-level cache beside the name.

/// `/proc/cpuinfo`'s model name, family and model, and the largest cache sysfs lists for
/// cpu0, e.g. "Intel(R) Xeon(R) Processor (family 6, model 207, L3 260 MiB)".
pub fn cpu_description() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    describe(&cpuinfo, &caches())
}

/// The cores this process may run on.
pub fn cores() -> Option<usize> {
    std::thread::available_parallelism().ok().map(|n| n.get())
}

/// `/proc/meminfo`'s total, e.g. "24 GiB".
pub fn memory() -> String {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = field(&meminfo, "MemTotal").and_then(|v| v.trim_end_matches(" kB").parse::<f64>().ok());
    format!("{:.0} GiB", kib.unwrap_or(f64::NAN) / 1024.0 / 1024.0)
}

/// The value of `key` in a `/proc` file's `key: value` lines (the first such line).
fn field(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The description from `/proc/cpuinfo`'s text and cpu0's caches as (level, sysfs size).
fn describe(cpuinfo: &str, caches: &[(u32, String)]) -> String {
    let field = |key: &str| field(cpuinfo, key);
    let name = field("model name").unwrap_or_else(|| "unknown CPU".into());
    let mut details = Vec::new();
    if let Some(family) = field("cpu family") {
        details.push(format!("family {family}"));
    }
    if let Some(model) = field("model") {
        details.push(format!("model {model}"));
    }
    if let Some((level, size)) = caches.iter().max_by_key(|(level, _)| *level) {
        details.push(format!("L{level} {}", readable_size(size)));
    }
    if details.is_empty() {
        name
    } else {
        format!("{name} ({})", details.join(", "))
    }
}

/// cpu0's caches: (level, size as sysfs writes it, e.g. "266240K").
fn caches() -> Vec<(u32, String)> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| Some((read(e.path().join("level"))?.parse().ok()?, read(e.path().join("size"))?)))
        .collect()
}

/// "266240K" -> "260 MiB", "512K" -> "512 KiB"; anything else as it is.
fn readable_size(size: &str) -> String {
    match size.strip_suffix('K').and_then(|k| k.parse::<u64>().ok()) {
        Some(kib) if kib >= 1024 && kib % 1024 == 0 => format!("{} MiB", kib / 1024),
        Some(kib) => format!("{kib} KiB"),
        None => size.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_family_model_and_last_level_cache() {
        let xeon = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n\
                    model name\t: Intel(R) Xeon(R) Processor\nstepping\t: 2\n";
        let caches = [(1, "48K".to_string()), (2, "2048K".to_string()), (3, "266240K".to_string())];
        assert_eq!(describe(xeon, &caches), "Intel(R) Xeon(R) Processor (family 6, model 207, L3 260 MiB)");
        let epyc = "cpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n";
        assert_eq!(describe(epyc, &[(2, "512K".to_string())]), "AMD EPYC (family 25, model 17, L2 512 KiB)");
    }

    #[test]
    fn falls_back_to_what_it_can_read() {
        assert_eq!(describe("", &[]), "unknown CPU");
        assert_eq!(describe("model name\t: Some CPU\n", &[]), "Some CPU");
        assert_eq!(readable_size("1.5M"), "1.5M");
    }
}
