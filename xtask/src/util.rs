//! Running commands with progress lines and error context, and checking for tools.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Something that went wrong, with an optional hint on how to fix it.
#[derive(Debug)]
pub struct Failure {
    pub what: String,
    pub hint: Option<String>,
}

pub type Result<T = ()> = std::result::Result<T, Failure>;

pub fn fail(what: impl Into<String>) -> Failure {
    Failure { what: what.into(), hint: None }
}

impl Failure {
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.what)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n       hint: {hint}")?;
        }
        Ok(())
    }
}

/// How a suite (or one part of the demo) ended when it did not fail.
pub enum Status {
    Passed,
    Skipped(String),
}

/// `==> [suite] message`
pub fn step(suite: &str, msg: impl fmt::Display) {
    println!("==> [{suite}] {msg}");
}

/// `skipped: suite (reason)`, printed when the skip happens.
pub fn skipped(suite: &str, reason: impl Into<String>) -> Status {
    let reason = reason.into();
    println!("skipped: {suite} ({reason})");
    Status::Skipped(reason)
}

/// Prints a failure right where it happened, so it is next to the output that caused it.
pub fn report_failure(suite: &str, failure: &Failure) {
    eprintln!("error: [{suite}] {failure}");
}

/// A child process description: program, arguments, directory, environment, and a fix hint.
pub struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    envs: Vec<(OsString, OsString)>,
    env_remove: Vec<OsString>,
    hint: Option<String>,
}

impl Cmd {
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Cmd {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            envs: Vec::new(),
            env_remove: Vec::new(),
            hint: None,
        }
    }

    /// `cargo` of the toolchain that runs xtask (cargo sets `CARGO` for `cargo run`).
    pub fn cargo() -> Self {
        Cmd::new(std::env::var_os("CARGO").filter(|c| !c.is_empty()).unwrap_or_else(|| "cargo".into()))
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs.push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env_remove.push(key.as_ref().to_owned());
        self
    }

    /// What to tell the user when this command fails.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).stdin(Stdio::null());
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        for key in &self.env_remove {
            cmd.env_remove(key);
        }
        for (key, value) in &self.envs {
            cmd.env(key, value);
        }
        cmd
    }

    /// The command line as a user would type it (for error messages).
    pub fn display(&self) -> String {
        let mut parts = Vec::new();
        for (key, value) in &self.envs {
            parts.push(format!("{}={}", key.to_string_lossy(), quote(value)));
        }
        let program = Path::new(&self.program);
        // Show `cargo`, not the toolchain's absolute path.
        let shown = match program.file_name() {
            Some(name) if name == "cargo" => name.to_owned(),
            _ => self.program.clone(),
        };
        parts.push(quote(&shown));
        parts.extend(self.args.iter().map(|a| quote(a)));
        let line = parts.join(" ");
        match &self.cwd {
            Some(dir) => format!("{line}  (in {})", dir.display()),
            None => line,
        }
    }

    fn spawn_error(&self, err: std::io::Error) -> Failure {
        fail(format!("could not start `{}`: {err}", self.display()))
            .hint(format!("is `{}` installed and on PATH?", self.program.to_string_lossy()))
    }

    fn exit_error(&self, code: Option<i32>) -> Failure {
        let how = match code {
            Some(c) => format!("exit code {c}"),
            None => "killed by a signal".to_string(),
        };
        let f = fail(format!("`{}` failed ({how})", self.display()));
        match &self.hint {
            Some(h) => f.hint(h.clone()),
            None => f,
        }
    }

    /// Runs with inherited stdout/stderr; fails on a nonzero exit.
    pub fn run(&self) -> Result {
        match self.run_code()? {
            Some(0) => Ok(()),
            code => Err(self.exit_error(code)),
        }
    }

    /// Runs with inherited stdout/stderr and returns the exit code (None = signal).
    pub fn run_code(&self) -> Result<Option<i32>> {
        let status = self.command().status().map_err(|e| self.spawn_error(e))?;
        Ok(status.code())
    }

    /// Runs capturing stdout (stderr is inherited); fails on a nonzero exit.
    pub fn output(&self) -> Result<String> {
        let out = self.command().stderr(Stdio::inherit()).output().map_err(|e| self.spawn_error(e))?;
        if !out.status.success() {
            return Err(self.exit_error(out.status.code()));
        }
        String::from_utf8(out.stdout)
            .map_err(|_| fail(format!("`{}` printed output that is not UTF-8", self.display())))
    }

    /// Runs capturing stdout, echoes it, and returns it; fails on a nonzero exit after the echo,
    /// so the output that explains a failure is still shown. Stderr is inherited.
    pub fn run_echo(&self) -> Result<String> {
        let out = self.command().stderr(Stdio::inherit()).output().map_err(|e| self.spawn_error(e))?;
        let text = strip_ansi(&String::from_utf8_lossy(&out.stdout));
        print!("{text}");
        if !out.status.success() {
            return Err(self.exit_error(out.status.code()));
        }
        Ok(text)
    }

    /// Runs capturing stdout and stderr, for logs that are parsed afterwards; returns the exit
    /// code (None = signal) and the text: stdout, then stderr.
    pub fn run_combined(&self) -> Result<(Option<i32>, String)> {
        let display = self.display();
        let mut child =
            self.command().stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| self.spawn_error(e))?;
        let mut stderr = child.stderr.take().expect("piped stderr");
        let err_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut stderr, &mut buf).map(|_| buf)
        });
        let mut text = Vec::new();
        let mut stdout = child.stdout.take().expect("piped stdout");
        std::io::Read::read_to_end(&mut stdout, &mut text)
            .map_err(|e| fail(format!("reading the output of `{display}`: {e}")))?;
        let err = err_reader.join().ok().and_then(|r| r.ok()).unwrap_or_default();
        text.extend_from_slice(&err);
        let status = child.wait().map_err(|e| fail(format!("waiting for `{display}`: {e}")))?;
        Ok((status.code(), strip_ansi(&String::from_utf8_lossy(&text))))
    }

    /// Runs capturing stdout and stderr separately, killing the process (SIGKILL, by its pid)
    /// when it is still running after `timeout`: a run that may hang (the harden storms).
    pub fn run_with_timeout(&self, timeout: std::time::Duration) -> Result<Timed> {
        let display = self.display();
        let started = std::time::Instant::now();
        let mut child =
            self.command().stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| self.spawn_error(e))?;
        let read_all = |mut pipe: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                strip_ansi(&String::from_utf8_lossy(&buf))
            })
        };
        let stdout = read_all(Box::new(child.stdout.take().expect("piped stdout")));
        let stderr = read_all(Box::new(child.stderr.take().expect("piped stderr")));
        let mut timed_out = false;
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| fail(format!("waiting for `{display}`: {e}")))? {
                break status;
            }
            if started.elapsed() >= timeout {
                timed_out = true;
                let _ = child.kill();
                break child.wait().map_err(|e| fail(format!("waiting for `{display}`: {e}")))?;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(not(unix))]
        let signal = None;
        Ok(Timed {
            code: status.code(),
            signal,
            timed_out,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
            elapsed: started.elapsed(),
        })
    }

    /// Runs capturing stdout and stderr; Ok(None) when it fails or cannot start.
    pub fn probe(&self) -> Option<String> {
        let out = self.command().stderr(Stdio::null()).output().ok()?;
        if !out.status.success() {
            return None;
        }
        String::from_utf8(out.stdout).ok()
    }
}

/// How a [`Cmd::run_with_timeout`] run ended.
pub struct Timed {
    /// The exit code (None: killed by a signal).
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// Killed by us after the timeout (a hang).
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: std::time::Duration,
}

/// `text` without ANSI escape sequences (`ESC [ ... letter`); Maven prints colour resets even
/// with `-B -Dstyle.color=never`.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn quote(s: &OsStr) -> String {
    let s = s.to_string_lossy();
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:+,@%".contains(c)) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Finds an executable on PATH.
pub fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(tool)).find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// How to get a tool when it is missing.
fn install_hint(tool: &str) -> &'static str {
    match tool {
        "python3" => {
            "install Python 3.9 or newer with the venv module \
             (Debian/Ubuntu: apt-get install python3 python3-venv) and put `python3` on PATH"
        }
        "node" => "install Node.js 18 or newer (Debian/Ubuntu: apt-get install nodejs npm) and put `node` on PATH",
        "npm" => "install npm, which ships with Node.js (Debian/Ubuntu: apt-get install npm)",
        "mvn" => "install Maven 3.8 or newer (Debian/Ubuntu: apt-get install maven) and put `mvn` on PATH",
        "java" | "javac" => {
            "install a JDK 17 or newer, not only a JRE (Debian/Ubuntu: apt-get install openjdk-17-jdk-headless)"
        }
        "gcc" => "install a C compiler (Debian/Ubuntu: apt-get install gcc)",
        "rustup" => "install Rust through rustup so that nightly toolchains and components can be added",
        _ => "install it and put it on PATH",
    }
}

/// Fails with a clear message when `tool` is not on PATH.
pub fn require_tool(suite: &str, tool: &str) -> Result<PathBuf> {
    which(tool)
        .ok_or_else(|| fail(format!("missing tool: `{tool}` (the {suite} suite needs it)")).hint(install_hint(tool)))
}

/// Writes `data` to `dest` through a temporary file and a rename, so a process that has the old
/// file mapped (a running `node` with the addon loaded) keeps a consistent copy.
pub fn replace_file(src: &Path, dest: &Path) -> Result {
    let tmp = dest.with_extension("tmp-xtask");
    std::fs::copy(src, &tmp)
        .map_err(|e| fail(format!("could not copy {} to {}: {e}", src.display(), tmp.display())))?;
    std::fs::rename(&tmp, dest)
        .map_err(|e| fail(format!("could not move {} to {}: {e}", tmp.display(), dest.display())))
}

/// File name of a cdylib on this platform: `libname.so`, `libname.dylib`, `name.dll`.
pub fn cdylib_file_name(lib_name: &str) -> String {
    format!("{}{}{}", std::env::consts::DLL_PREFIX, lib_name.replace('-', "_"), std::env::consts::DLL_SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_quotes_only_when_needed() {
        let cmd = Cmd::new("mvn").args(["-q", "a b"]).env("X", "1");
        assert_eq!(cmd.display(), "X=1 mvn -q 'a b'");
    }

    #[test]
    fn cdylib_name_uses_underscores() {
        let name = cdylib_file_name("tether-node");
        assert!(name.contains("tether_node"), "{name}");
    }

    #[test]
    fn ansi_sequences_are_stripped() {
        assert_eq!(strip_ansi("\u{1b}[0m\u{1b}[1;31mred\u{1b}[0m text\n"), "red text\n");
    }

    #[test]
    fn failure_shows_hint() {
        let f = fail("boom").hint("do this");
        assert_eq!(f.to_string(), "boom\n       hint: do this");
    }
}
