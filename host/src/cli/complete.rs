//! `evalhost completions SHELL` and `evalhost man`: shell completions from
//! clap_complete's dynamic engine (the shell asks the binary, so target
//! names and test ids are completed from the project as you type) and man
//! pages from clap_mangen.

use std::path::Path;

use clap::CommandFactory as _;
use clap_complete::engine::CompletionCandidate;

use super::*;

/// The variable the completion script sets when it asks the binary. It is
/// evalhost's own: clap's default, `COMPLETE`, may be set for another
/// program, and then every `evalhost run` printed a script and exited 0
/// having run nothing.
pub const COMPLETE_VAR: &str = "EVALHOST_COMPLETE";

/// Answers the shell's completion request when `EVALHOST_COMPLETE` is set (the
/// script [`completions_command`] writes sets it), and exits; returns
/// otherwise. Called before anything is printed.
pub fn answer_completion_request() {
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(COMPLETE_VAR)
        .complete();
}

/// Shells with completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShellKind {
    Bash,
    Zsh,
    Fish,
    #[value(alias = "pwsh")]
    Powershell,
    Elvish,
}

/// `evalhost completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: ShellKind,
}

/// `evalhost man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write a page per command (`evalhost.1`, `evalhost-run.1`, …) into
    /// DIR instead of printing `evalhost.1`.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Prints the script that registers completions for `args.shell`: it calls
/// this binary back (by its absolute path) with `EVALHOST_COMPLETE=<shell>`.
pub(super) fn completions_command(args: &CompletionsArgs, err: &mut dyn Write) -> u8 {
    let completer = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "evalhost".to_owned());
    let shell: &dyn clap_complete::env::EnvCompleter = match args.shell {
        ShellKind::Bash => &clap_complete::env::Bash,
        ShellKind::Zsh => &clap_complete::env::Zsh,
        ShellKind::Fish => &clap_complete::env::Fish,
        ShellKind::Powershell => &clap_complete::env::Powershell,
        ShellKind::Elvish => &clap_complete::env::Elvish,
    };
    let mut script = Vec::new();
    let written = shell
        .write_registration(
            COMPLETE_VAR,
            "evalhost",
            "evalhost",
            &completer,
            &mut script,
        )
        .and_then(|()| std::io::stdout().lock().write_all(&script));
    printed(written, err)
}

/// Prints `evalhost.1`, or writes every command's page into `--dir`.
pub(super) fn man_command(args: &ManArgs, err: &mut dyn Write) -> u8 {
    let command = Cli::command();
    let written = match &args.dir {
        Some(dir) => std::fs::create_dir_all(dir)
            .and_then(|()| clap_mangen::generate_to(command, dir))
            .map(|()| {
                let _ = writeln!(err, "man pages written to {}", dir.display());
            }),
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut page)
                .and_then(|()| std::io::stdout().lock().write_all(&page))
        }
    };
    printed(written, err)
}

/// `--target` and `--grader-target`: the names in the targets file found
/// from the current directory, each with its provider.
pub fn target_names() -> Vec<CompletionCandidate> {
    let Some(file) = std::env::current_dir()
        .ok()
        .and_then(|cwd| crate::target::find_targets_file(&cwd))
    else {
        return Vec::new();
    };
    let Some(doc) = read_yaml(&file) else {
        return Vec::new();
    };
    doc["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let name = t["name"].as_str()?;
            let provider = t["provider"].as_str().unwrap_or_default();
            candidate(name, Some(provider))
        })
        .collect()
}

/// A candidate for the shell, from a project's file: none for a value
/// with a control or reordering character (the shell would print it raw
/// in its listing: an escape sequence, a clipboard write; and no one types
/// it), and its help made safe for one line ([`evalhost_suite::text::shown`]).
fn candidate(value: &str, help: Option<&str>) -> Option<CompletionCandidate> {
    if matches!(
        evalhost_suite::text::shown(value),
        std::borrow::Cow::Owned(_)
    ) {
        return None;
    }
    let help = help.map(|h| evalhost_suite::text::shown(h).into_owned().into());
    Some(CompletionCandidate::new(value).help(help))
}

/// `--test-id`: the ids of the tests in the suite files named on the
/// command line being completed (the shell passes it after `--`), else in
/// the suite files of the current directory (only there: a completion
/// must answer at once).
pub fn test_ids() -> Vec<CompletionCandidate> {
    let named: Vec<PathBuf> = std::env::args_os()
        .skip_while(|a| a != "--")
        .skip(1)
        .map(PathBuf::from)
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    let files: Vec<PathBuf> = if named.is_empty() {
        std::fs::read_dir(".")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| crate::suite::is_eval_file_name(&e.file_name().to_string_lossy()))
            .map(|e| e.path())
            .collect()
    } else {
        named
    };
    let mut ids = std::collections::BTreeSet::new();
    for file in files {
        // The suite as a run reads it (untrusted: no code runs), so that
        // case directories, `file://` lists and promptfoo configs give their
        // ids too; else the inline ids of a file that does not load.
        match crate::suite::load::load_as(&file, true, None).0 {
            Some(suite) => {
                for test in &suite.tests {
                    ids.insert(test.id.to_string());
                }
            }
            None => {
                let Some(doc) = read_yaml(&file) else {
                    continue;
                };
                for test in doc["tests"].as_array().into_iter().flatten() {
                    if let Some(id) = test["id"].as_str() {
                        ids.insert(id.to_owned());
                    }
                }
            }
        }
    }
    ids.into_iter()
        .filter_map(|id| candidate(&id, None))
        .collect()
}

/// `--dialect`: the dialects.
pub fn dialects() -> Vec<CompletionCandidate> {
    [
        ("agentv4", "AgentV 4.42"),
        ("agentv5", "AgentV 5"),
        ("promptfoo", "promptfoo 0.121"),
    ]
    .into_iter()
    .map(|(name, help)| CompletionCandidate::new(name).help(Some(help.into())))
    .collect()
}

/// A small YAML file's value (a targets file or a suite): at most 4 MiB.
fn read_yaml(path: &Path) -> Option<serde_json::Value> {
    let text = crate::safe_fs::read_text_capped(path, 4 << 20).ok()?;
    evalhost_suite::yaml::parse(&text).ok()
}
