//! `evalhost cache` and `evalhost trace`: their arguments and handlers.

use super::*;

/// `evalhost cache`.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Remove cached target answers, judge answers and compiled plugins
    /// (all three unless one is named).
    Clear {
        /// The target answers.
        #[arg(long)]
        responses: bool,
        /// The judge answers (LLM graders).
        #[arg(long)]
        judge: bool,
        /// The compiled plugins.
        #[arg(long)]
        components: bool,
    },
    /// Print where the caches are.
    Dir,
}

pub(super) fn cache_command(command: &CacheCommand, err: &mut dyn Write) -> u8 {
    let caches = [
        (
            "responses",
            "target answer(s)",
            crate::response_cache::ResponseCache::default_dir(),
        ),
        (
            "judge",
            "judge answer(s)",
            crate::judge::Judge::default_cache_dir(),
        ),
        (
            "components",
            "compiled plugin(s)",
            crate::plugin::cache::default_cache_dir(),
        ),
    ];
    match command {
        CacheCommand::Dir => {
            let mut out = crate::text::Terminal::new(std::io::stdout().lock());
            for (label, _, dir) in &caches {
                let shown = dir
                    .as_ref()
                    .map_or_else(|| "(none)".to_owned(), |d| d.display().to_string());
                let _ = writeln!(out, "{label}: {shown}");
            }
            let key = crate::user_key::key_file()
                .map_or_else(|| "(none)".to_owned(), |d| d.display().to_string());
            let _ = writeln!(out, "compile-cache key: {key}");
            exit_codes::SUCCESS
        }
        CacheCommand::Clear {
            responses,
            judge,
            components,
        } => {
            let all = !(*responses || *judge || *components);
            let wanted = [*responses, *judge, *components];
            for ((_, label, dir), want) in caches.into_iter().zip(wanted) {
                if !(all || want) {
                    continue;
                }
                let Some(dir) = dir else { continue };
                match crate::response_cache::ResponseCache::clear(&dir) {
                    Ok(n) => {
                        let _ = writeln!(err, "removed {n} {label} from {}", dir.display());
                    }
                    Err(e) => {
                        let _ = writeln!(err, "error: cannot clear {}: {e}", dir.display());
                        return exit_codes::INTERNAL;
                    }
                }
            }
            exit_codes::SUCCESS
        }
    }
}

/// `evalhost trace`.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The file an agent wrote (`-` for standard input).
    pub file: PathBuf,
    /// Its format: auto, agentv, claude-code, codex, pi, copilot-log, text.
    #[arg(long, default_value = "auto")]
    pub format: String,
}

pub(super) fn trace_command(args: &TraceArgs, err: &mut dyn Write) -> u8 {
    use std::io::Read;
    let format: crate::trace::TraceFormat = match args.format.parse() {
        Ok(f) => f,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return exit_codes::USAGE;
        }
    };
    let text = if args.file.as_os_str() == "-" {
        let mut t = String::new();
        std::io::stdin().read_to_string(&mut t).map(|_| t)
    } else {
        std::fs::read_to_string(&args.file)
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(err, "error: cannot read {}: {e}", args.file.display());
            return exit_codes::USAGE;
        }
    };
    let detected = match format {
        crate::trace::TraceFormat::Auto => crate::trace::detect(&text),
        f => f,
    };
    match crate::trace::normalize(&text, detected) {
        Ok(output) => {
            let _ = writeln!(err, "format: {}", detected.name());
            let doc = crate::trace::to_agentv(&output);
            // A reader that went away (`| head`) is no failure.
            let _ = writeln!(
                std::io::stdout().lock(),
                "{}",
                crate::text::json_shown(&serde_json::to_string_pretty(&doc).unwrap_or_default())
            );
            exit_codes::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(
                err,
                "format: {}\nerror: the agent run failed: {e}",
                detected.name()
            );
            exit_codes::EXECUTION_ERROR
        }
    }
}
