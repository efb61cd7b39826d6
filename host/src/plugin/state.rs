//! The per-call store state of a plugin: a WASI context that grants nothing,
//! the memory limiter, and the host side of the `llm` and `exec` imports.
//!
//! What a plugin sees of the outside world is decided here and nowhere else:
//! - no preopened directories (no files), no environment variables, no
//!   arguments, stdin closed;
//! - stdout and stderr go to capped in-memory pipes, shown with the result;
//! - no network: TCP, UDP and name lookup are all refused;
//! - the wall clock and the monotonic clock are frozen at zero, so a plugin
//!   cannot behave differently depending on the time;
//! - random numbers come from fixed seeds, so grading is reproducible;
//! - `llm` and `exec` refuse every call with a message naming the missing
//!   grant unless the plugin was granted them (`embed` goes with `llm`);
//! - `response` answers with what the target reported about the case being
//!   graded (its finish reason, token log-probabilities), nothing else.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{
    HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView,
};

use super::bindings::evalhost::grader::{embed, exec, llm, response, types};

/// How much a plugin may write to stdout and to stderr, each, per call.
pub const OUTPUT_CAP: usize = 64 << 10;

/// The capabilities granted to one plugin for one call. Every one is denied
/// unless set here, and each denial carries the message the plugin gets.
#[derive(Debug, Clone)]
pub struct Grants {
    /// Chat completions through the judge.
    pub llm: Result<LlmGrant, String>,
    /// Running commands.
    pub exec: Result<ExecGrant, String>,
    /// The case workspace, preopened read-only at `/workspace`.
    pub workspace: Option<PathBuf>,
    /// What the target reported about the answer being graded, read through
    /// the `response` interface. Not a capability: the case's own data,
    /// like the request.
    pub response: std::sync::Arc<ResponseInfo>,
    /// The wall clock, read-only: given to the built-in engines that run a
    /// suite's JavaScript and Python (whose tools, Node and CPython, have
    /// one), never under `--sandbox strict`. Without it the clock reads
    /// 1970-01-01T00:00:00Z. The monotonic clock stays frozen either way.
    pub clock: bool,
}

/// What a target reported about its answer beyond its messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponseInfo {
    /// Why the model stopped, as reported.
    pub finish_reason: Option<String>,
    /// The output tokens' log-probabilities.
    pub logprobs: Option<Vec<f64>>,
    /// The output as JSON text, when it is a structured value.
    pub output_json: Option<String>,
}

impl Default for Grants {
    fn default() -> Self {
        Self {
            llm: Err("its assertion type does not declare it".into()),
            exec: Err("its assertion type does not declare it".into()),
            workspace: None,
            response: std::sync::Arc::default(),
            clock: false,
        }
    }
}

/// The judge a plugin may ask: completions and embeddings, for this case
/// and this plugin (the grading stage knows which judge and which cache).
pub type LlmGrant = std::sync::Arc<dyn super::services::Llm>;

/// Where and how granted commands run.
#[derive(Debug, Clone)]
pub struct ExecGrant {
    /// Relative `cwd`s resolve here (the eval file's directory).
    pub base_dir: PathBuf,
    /// The case workspace, exported as `EVALHOST_WORKSPACE_PATH` (and
    /// `AGENTV_WORKSPACE_PATH`).
    pub workspace: Option<PathBuf>,
    /// The longest a command may run.
    pub max_timeout: Duration,
    /// When set, only commands whose program is in this list may run.
    pub allow: Option<Vec<String>>,
    /// Variables the command must not see (the targets' keys).
    pub scrub_env: Vec<String>,
    /// A code grader's `target:`: each command gets a judge endpoint.
    pub proxy: Option<std::sync::Arc<dyn super::services::CommandJudge>>,
    /// The suite's `workspace.docker`: each command runs in a container of
    /// this image, made for it and removed after.
    pub container: Option<ContainerRun>,
    /// Under `--isolate`, the case's sandbox every command runs in.
    pub sandbox: Option<crate::isolate::CaseSandbox>,
}

/// How a command runs in a container, as AgentV runs a code grader with
/// `workspace.docker`: `RUNTIME create [--memory=M] [--cpus=C] IMAGE
/// sleep infinity`, `start`, `exec -i ID COMMAND` with the payload on
/// stdin, `rm -f ID`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerRun {
    /// docker or podman.
    pub runtime: PathBuf,
    /// The image.
    pub image: String,
    /// `--memory`.
    pub memory: Option<String>,
    /// `--cpus`.
    pub cpus: Option<String>,
    /// How long the command may run (AgentV: 1800 s).
    pub timeout: Duration,
}

/// What a command did, as the plugin reads it.
fn command_output(o: crate::process::Outcome) -> exec::CommandOutput {
    exec::CommandOutput {
        exit_code: o.code,
        stdout: o.stdout,
        stderr: o.stderr,
        timed_out: o.timed_out,
        truncated: o.truncated,
        duration_ms: o.duration.as_millis() as u64,
    }
}

impl ContainerRun {
    /// Runs `argv` (or `sh -c line`) in a new container with `stdin`.
    fn run(
        &self,
        argv: &[String],
        shell: Option<&str>,
        stdin: &[u8],
        files: &[PathBuf],
    ) -> Result<crate::process::Outcome, String> {
        let runtime = self.runtime.display().to_string();
        let step = |args: Vec<String>, stdin: &[u8], timeout: Duration| {
            let mut all = vec![runtime.clone()];
            all.extend(args);
            crate::process::run(&crate::process::Spec {
                argv: &all,
                stdin,
                timeout: Some(timeout),
                ..crate::process::Spec::default()
            })
            .map_err(|e| format!("{runtime} could not start: {e}"))
        };
        let mut create = vec!["create".to_owned()];
        create.extend(self.memory.iter().map(|m| format!("--memory={m}")));
        create.extend(self.cpus.iter().map(|c| format!("--cpus={c}")));
        for dir in files {
            create.push(format!("--volume={0}:{0}:ro", dir.display()));
        }
        create.extend([self.image.clone(), "sleep".into(), "infinity".into()]);
        let created = step(create, &[], Duration::from_secs(300))?;
        if !created.success() {
            return Err(format!(
                "`{runtime} create {}` failed: {}",
                self.image,
                created.message()
            ));
        }
        let id = String::from_utf8_lossy(&created.stdout).trim().to_owned();
        let outcome = (|| {
            let started = step(
                vec!["start".into(), id.clone()],
                &[],
                Duration::from_secs(30),
            )?;
            if !started.success() {
                return Err(format!("`{runtime} start` failed: {}", started.message()));
            }
            let mut exec = vec!["exec".to_owned(), "-i".to_owned(), id.clone()];
            match shell {
                Some(line) => exec.extend(["sh".into(), "-c".into(), line.to_owned()]),
                None => exec.extend(argv.iter().cloned()),
            }
            step(exec, stdin, self.timeout)
        })();
        // Removed whatever happened.
        let _ = step(
            vec!["rm".into(), "-f".into(), id],
            &[],
            Duration::from_secs(30),
        );
        outcome
    }
}

/// Caps memory growth, remembering when the cap was hit so the failure can
/// be classified.
#[derive(Debug)]
pub struct Limiter {
    /// The cap, in bytes.
    pub memory_cap: usize,
    /// The size the plugin asked for when it hit the cap.
    pub memory_hit: Option<usize>,
    /// The largest size a memory of the instance has grown to.
    pub memory_peak: usize,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_cap {
            self.memory_hit = Some(desired);
            return Err(wasmtime::format_err!(
                "plugin tried to grow its memory to {} MiB, past its cap of {} MiB",
                desired >> 20,
                self.memory_cap >> 20
            ));
        }
        self.memory_peak = self.memory_peak.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

struct FrozenClock;

/// The host's wall clock, for a plugin granted [`Grants::clock`].
struct WallClock;

impl HostWallClock for WallClock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }
    fn now(&self) -> Duration {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
    }
}

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

/// The state of one store: one plugin instance, one call (or a run of calls
/// for a reused stateless instance).
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    /// The memory limiter.
    pub limiter: Limiter,
    grants: Grants,
    plugin: String,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
    /// Time spent in host calls (commands), which does not count against
    /// the plugin's own deadline.
    pub host_time: Duration,
    temp_dir: Option<tempfile::TempDir>,
    /// Judge calls made during this call.
    pub judge_usage: crate::results::usage::JudgeUsage,
    /// When the current call started, and its deadline (read by the epoch
    /// callback).
    pub call_started: Instant,
    /// The current call's deadline.
    pub timeout: Duration,
    /// Where the current call's output starts in the stdout and stderr
    /// pipes (a reused instance keeps its pipes).
    output_marks: (usize, usize),
}

impl HostState {
    /// A state for `plugin` with a memory cap and grants.
    pub fn new(plugin: &str, memory_cap: usize, grants: Grants) -> Self {
        let stdout = MemoryOutputPipe::new(OUTPUT_CAP);
        let stderr = MemoryOutputPipe::new(OUTPUT_CAP);
        let mut builder = WasiCtxBuilder::new();
        builder
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .monotonic_clock(FrozenClock)
            .secure_random(StdRng::seed_from_u64(0x5eed))
            .insecure_random(StdRng::seed_from_u64(0x5eed + 1))
            .insecure_random_seed(0x5eed)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        if grants.clock {
            builder.wall_clock(WallClock);
        } else {
            builder.wall_clock(FrozenClock);
        }
        if let Some(dir) = &grants.workspace {
            // Read-only: the plugin may read the case workspace, never write.
            let _ = builder.preopened_dir(dir, "/workspace", wasmtime_wasi::FsPerms::ReadOnly);
        }
        let mut table = ResourceTable::new();
        table.set_max_capacity(4096);
        Self {
            wasi: builder.build(),
            table,
            limiter: Limiter {
                memory_cap,
                memory_hit: None,
                memory_peak: 0,
            },
            grants,
            plugin: plugin.to_owned(),
            stdout,
            stderr,
            host_time: Duration::ZERO,
            temp_dir: None,
            judge_usage: crate::results::usage::JudgeUsage::default(),
            call_started: Instant::now(),
            timeout: Duration::from_secs(10),
            output_marks: (0, 0),
        }
    }

    /// Prepares a state for another call on the same instance: new grants
    /// (the instance was made with no workspace, and gets none), a fresh
    /// deadline, counters and temporary files, and output from here on.
    pub fn begin_call(&mut self, grants: Grants, timeout: Duration, memory_cap: usize) {
        self.grants = grants;
        self.timeout = timeout;
        self.call_started = Instant::now();
        self.host_time = Duration::ZERO;
        self.temp_dir = None;
        self.judge_usage = crate::results::usage::JudgeUsage::default();
        self.limiter.memory_cap = memory_cap;
        self.limiter.memory_hit = None;
        self.output_marks = (self.stdout.contents().len(), self.stderr.contents().len());
    }

    /// Bytes written to stdout and stderr by every call of this instance.
    pub fn output_used(&self) -> usize {
        self.stdout.contents().len() + self.stderr.contents().len()
    }

    /// What the plugin wrote to stdout and stderr during the current call,
    /// as text.
    pub fn output(&self) -> String {
        let mut text = String::new();
        for (pipe, mark) in [
            (&self.stdout, self.output_marks.0),
            (&self.stderr, self.output_marks.1),
        ] {
            let bytes = pipe.contents();
            if bytes.len() > mark {
                text.push_str(&String::from_utf8_lossy(&bytes[mark..]));
            }
        }
        text
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for HostState {}

impl response::Host for HostState {
    fn finish_reason(&mut self) -> Option<String> {
        self.grants.response.finish_reason.clone()
    }

    fn logprobs(&mut self) -> Option<Vec<f64>> {
        self.grants.response.logprobs.clone()
    }

    fn output_json(&mut self) -> Option<String> {
        self.grants.response.output_json.clone()
    }
}

impl llm::Host for HostState {
    fn complete(
        &mut self,
        request: llm::CompletionRequest,
    ) -> Result<llm::Completion, llm::LlmError> {
        let grant = match &self.grants.llm {
            Ok(grant) => grant.clone(),
            Err(reason) => {
                return Err(llm::LlmError::NotGranted(format!(
                    "plugin `{}` was not granted the `llm` capability: {reason}",
                    self.plugin
                )));
            }
        };
        let request = super::services::Request {
            messages: request
                .messages
                .into_iter()
                .map(|m| (m.role, m.content))
                .collect(),
            temperature: request.temperature,
            max_tokens: request.max_tokens,
            response_schema: request.response_schema,
            seed: request.seed,
            target: request.target,
        };
        let started = Instant::now();
        let answer = grant.complete(&request, &mut self.judge_usage);
        self.host_time += started.elapsed();
        match answer {
            Ok(a) => Ok(llm::Completion {
                text: a.text,
                model: a.model,
                input_tokens: a.input_tokens,
                output_tokens: a.output_tokens,
                cost_usd: a.cost_usd,
                cached: a.cached,
            }),
            Err(super::services::LlmError::Unavailable(m)) => Err(llm::LlmError::Unavailable(m)),
            Err(super::services::LlmError::Failed(m)) => Err(llm::LlmError::Failed(m)),
        }
    }
}

impl embed::Host for HostState {
    fn embed(
        &mut self,
        request: embed::EmbeddingRequest,
    ) -> Result<embed::Embedding, llm::LlmError> {
        let grant = match &self.grants.llm {
            Ok(grant) => grant.clone(),
            Err(reason) => {
                return Err(llm::LlmError::NotGranted(format!(
                    "plugin `{}` was not granted the `llm` capability (embeddings go through it): {reason}",
                    self.plugin
                )));
            }
        };
        let started = Instant::now();
        let answer = grant.embed(
            request.target.as_deref(),
            &request.text,
            &mut self.judge_usage,
        );
        self.host_time += started.elapsed();
        match answer {
            Ok(e) => Ok(embed::Embedding {
                vector: e.vector,
                model: e.model,
                input_tokens: e.input_tokens,
                cost_usd: e.cost_usd,
                cached: e.cached,
            }),
            Err(super::services::LlmError::Unavailable(m)) => Err(llm::LlmError::Unavailable(m)),
            Err(super::services::LlmError::Failed(m)) => Err(llm::LlmError::Failed(m)),
        }
    }
}

impl exec::Host for HostState {
    fn run(&mut self, command: exec::Command) -> Result<exec::CommandOutput, exec::ExecError> {
        let grant = match &self.grants.exec {
            Ok(grant) => grant.clone(),
            Err(reason) => {
                return Err(exec::ExecError::NotGranted(format!(
                    "plugin `{}` was not granted the `exec` capability: {reason}",
                    self.plugin
                )));
            }
        };
        // With an allow-list, a shell line must be plain words: it then
        // runs without a shell, so the allowed program is the only one.
        let (argv, shell) = match (&grant.allow, &command.shell) {
            (Some(_), Some(line)) => match plain_words(line) {
                Ok(words) => (words, None),
                Err(why) => {
                    return Err(exec::ExecError::Denied(format!(
                        "with `execution.allow_commands` set, a command line must be plain words, and `{line}` {why}"
                    )));
                }
            },
            _ => (command.argv.clone(), command.shell.clone()),
        };
        let program = argv.first().cloned().unwrap_or_default();
        if let Some(allow) = &grant.allow
            && !allow.contains(&program)
        {
            return Err(exec::ExecError::Denied(format!(
                "`{program}` is not in the suite's allow-list of commands ({})",
                allow.join(", ")
            )));
        }
        let cwd = match &command.cwd {
            Some(c) => grant.base_dir.join(c),
            None => grant.base_dir.clone(),
        };
        let mut env = Vec::new();
        if let Some(ws) = &grant.workspace {
            env.push((
                "EVALHOST_WORKSPACE_PATH".to_owned(),
                ws.display().to_string(),
            ));
            env.push(("AGENTV_WORKSPACE_PATH".to_owned(), ws.display().to_string()));
        }
        let timeout = command.timeout_ms.map_or(grant.max_timeout, |ms| {
            Duration::from_millis(u64::from(ms)).min(grant.max_timeout)
        });
        let proxy = match &grant.proxy {
            None => None,
            Some(p) => match p.start() {
                Ok(proxy) => {
                    env.extend(proxy.env());
                    Some(proxy)
                }
                Err(e) => {
                    return Err(exec::ExecError::Failed(format!(
                        "the judge proxy could not start: {e}"
                    )));
                }
            },
        };
        let started = Instant::now();
        // `workspace.docker`: in a container of the suite's image.
        if let Some(container) = &grant.container {
            if proxy.is_some() {
                return Err(exec::ExecError::Denied(
                    "a code grader's `target:` (the judge proxy on evalhost's loopback) cannot be reached from a `workspace.docker` container".into(),
                ));
            }
            // The answer's file (`output_path`), read-only at its own path.
            let files: Vec<PathBuf> = self
                .temp_dir
                .as_ref()
                .map(|d| d.path().to_path_buf())
                .into_iter()
                .collect();
            let outcome = container.run(&argv, shell.as_deref(), &command.stdin, &files);
            self.host_time += started.elapsed();
            return match outcome {
                Ok(o) => Ok(command_output(o)),
                Err(e) => Err(exec::ExecError::Failed(e)),
            };
        }
        // Under --isolate: the case's workspace writable, the answer's file
        // (`output_path`) readable, and of the network only the judge
        // proxy's port on loopback; it starts only inside the workspace or
        // the project.
        let files: Vec<PathBuf> = self
            .temp_dir
            .as_ref()
            .map(|d| d.path().to_path_buf())
            .into_iter()
            .collect();
        let network = proxy.as_ref().and_then(|p| p.port()).map_or(
            crate::isolate::Network::None,
            crate::isolate::Network::Loopback,
        );
        let confined = match grant
            .sandbox
            .as_ref()
            .map(|s| s.grader(Some(&cwd), &files, network))
            .transpose()
        {
            Ok(c) => c,
            Err(refused) => return Err(exec::ExecError::Denied(refused.to_string())),
        };
        let outcome = crate::process::run(&crate::process::Spec {
            argv: &argv,
            shell: shell.as_deref(),
            cwd: Some(&cwd),
            stdin: &command.stdin,
            timeout: Some(timeout),
            env: &env,
            shell_args: &[],
            env_remove: &grant.scrub_env,
            sandbox: confined.as_ref(),
            clear_env: false,
        });
        self.host_time += started.elapsed();
        if let Some(proxy) = proxy {
            self.judge_usage += proxy.finish();
        }
        match outcome {
            Ok(o) => Ok(command_output(o)),
            Err(e) => Err(exec::ExecError::Failed(format!(
                "`{program}` could not start: {e}"
            ))),
        }
    }

    fn write_temp_file(
        &mut self,
        name: String,
        contents: Vec<u8>,
    ) -> Result<String, exec::ExecError> {
        if let Err(reason) = &self.grants.exec {
            return Err(exec::ExecError::NotGranted(format!(
                "plugin `{}` was not granted the `exec` capability: {reason}",
                self.plugin
            )));
        }
        if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
            return Err(exec::ExecError::Denied(format!(
                "`{name}` is not a plain file name"
            )));
        }
        if contents.len() > 256 << 20 {
            return Err(exec::ExecError::Denied(
                "a temp file may hold at most 256 MiB".into(),
            ));
        }
        if self.temp_dir.is_none() {
            let dir = tempfile::Builder::new()
                .prefix("evalhost-exec-")
                .tempdir()
                .map_err(|e| exec::ExecError::Failed(format!("cannot create a temp dir: {e}")))?;
            self.temp_dir = Some(dir);
        }
        let path = self
            .temp_dir
            .as_ref()
            .map(|d| d.path().join(&name))
            .unwrap_or_default();
        std::fs::write(&path, contents).map_err(|e| {
            exec::ExecError::Failed(format!("cannot write {}: {e}", path.display()))
        })?;
        Ok(path.display().to_string())
    }
}

/// The words of a shell line that uses no shell feature but quoting: no
/// `;`, `&`, `|`, redirections, substitutions, variables, globs or line
/// breaks outside quotes (and no `$` or backquote outside single quotes).
/// Run as argv, it means what the shell would have made of it.
pub fn plain_words(line: &str) -> Result<Vec<String>, String> {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in line.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '$' | '`' if !single => {
                return Err(format!("uses `{c}` (a substitution or variable)"));
            }
            ';' | '&' | '|' | '<' | '>' | '(' | ')' | '{' | '}' | '*' | '?' | '[' | '~' | '#'
            | '\n' | '\r'
                if !single && !double =>
            {
                return Err(format!(
                    "uses `{}` (a shell operator or pattern)",
                    c.escape_default()
                ));
            }
            _ => {}
        }
    }
    let words = shlex::split(line).ok_or_else(|| "has unbalanced quotes".to_owned())?;
    if words.is_empty() {
        return Err("is empty".into());
    }
    Ok(words)
}

#[cfg(test)]
mod plain_words_tests {
    use super::plain_words;

    #[test]
    fn only_plain_words_pass() {
        assert_eq!(
            plain_words("python3 grade.py --name 'a b' \"c;d\"").unwrap(),
            ["python3", "grade.py", "--name", "a b", "c;d"]
        );
        for bad in [
            "python3 x.py; rm -rf /",
            "python3 x.py && curl x",
            "python3 x.py | sh",
            "python3 $(echo x)",
            "python3 `id`",
            "python3 \"$HOME\"",
            "python3 x > /etc/passwd",
            "python3 *.py",
            "python3 x\nid",
            "python3 'unbalanced",
        ] {
            assert!(plain_words(bad).is_err(), "{bad}");
        }
    }
}
