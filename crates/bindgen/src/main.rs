//! `tether-bindgen --plugin PATH --out DIR [--lang python,node,java] [--name NAME]
//! [--java-package NAME]`: load a tether plugin in-process and write typed bindings for it
//! (`cargo xtask bindgen` calls it). See docs/bindings.md.

mod java;
mod model;
mod node;
mod python;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: tether-bindgen --plugin PATH --out DIR [--lang python,node,java] [--name NAME] [--java-package NAME]

  --plugin PATH        the plugin's shared library (libscene.so)
  --out DIR            where the packages go: DIR/python, DIR/node, DIR/java
  --lang LIST          which languages (default: all three)
  --name NAME          the package name (default: the plugin file's, `scene` for libscene.so)
  --java-package NAME  the Java package (default: dev.tether.bindings.NAME)";

/// What the command line asks for.
pub struct Options {
    pub plugin: String,
    pub out: PathBuf,
    pub languages: Vec<String>,
    pub name: Option<String>,
    pub java_package: Option<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut plugin = None;
    let mut out = None;
    let mut languages = vec!["python".to_string(), "node".to_string(), "java".to_string()];
    let (mut name, mut java_package) = (None, None);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("`{arg}` needs a value"));
        match arg.as_str() {
            "--plugin" => plugin = Some(value()?),
            "--out" => out = Some(PathBuf::from(value()?)),
            "--lang" => {
                languages = value()?.split(',').filter(|l| !l.is_empty()).map(str::to_string).collect();
                if let Some(bad) = languages.iter().find(|l| !["python", "node", "java"].contains(&l.as_str())) {
                    return Err(format!("unknown language `{bad}` (python, node, java)"));
                }
            }
            "--name" => name = Some(value()?),
            "--java-package" => java_package = Some(value()?),
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    Ok(Options {
        plugin: plugin.ok_or("--plugin is required")?,
        out: out.ok_or("--out is required")?,
        languages,
        name,
        java_package,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let module = match model::load(&options.plugin, options.name.as_deref()) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: cannot read {}: {}: {}", options.plugin, e.kind(), e.message());
            return ExitCode::FAILURE;
        }
    };
    println!(
        "tether-bindgen: {} ({} functions, {} types) from {}",
        module.name,
        module.functions.len(),
        module.types.len(),
        module.file_name
    );
    for language in &options.languages {
        let written = match language.as_str() {
            "python" => python::write(&module, &options.out, &options),
            "node" => node::write(&module, &options.out, &options),
            "java" => java::write(&module, &options.out, &options),
            _ => continue,
        };
        if let Err(e) = written {
            eprintln!("error: {language}: {e}");
            return ExitCode::FAILURE;
        }
        println!("tether-bindgen: wrote {}", options.out.join(language).display());
    }
    ExitCode::SUCCESS
}
