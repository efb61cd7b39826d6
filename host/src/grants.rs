//! Capability grants: the one place that decides what a plugin may touch.
//!
//! A plugin starts with nothing — no files, no network, no environment, no
//! arguments, a frozen clock, no host calls (see
//! [`crate::plugin::state::HostState`], which builds its WASI context from a
//! [`Grants`] and nothing else). For each assertion, [`grants`] adds what the
//! assertion's type declares, less what the run's [`Policy`] refuses:
//!
//! | Declared          | Granted                                             | Refused when                       |
//! |-------------------|-----------------------------------------------------|------------------------------------|
//! | `exec`            | commands on the host, in the suite dir or workspace | `--sandbox strict`; not on `execution.allow_commands` |
//! | `llm`             | chat completions from the run's judge               | no judge configured                |
//! | `workspace-read`  | the case workspace, read-only, at `/workspace`      | the case has no workspace          |
//!
//! A capability a type does not declare is refused with a message naming
//! it, and the assertion fails; the run goes on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::judge::{Judge, JudgeUsage};
use crate::plugin::Grants;
use crate::plugin::services::{
    Answer, CommandJudge, Embedding, JudgeEndpoint, Llm, LlmError, Request,
};
use crate::plugin::state::{ExecGrant, LlmGrant};

/// Where a plugin sees the case workspace: `/workspace` (its read-only
/// preopen) for `workspace-read`, the host path for `exec` (its commands
/// run on the host, and the path is all it can do with it), else nowhere.
pub fn visible_workspace(declared: &[String], workspace: Option<&Path>) -> Option<String> {
    let declares = |c: &str| declared.iter().any(|d| d == c);
    match workspace {
        Some(_) if declares("workspace-read") => Some("/workspace".to_owned()),
        Some(host) if declares("exec") => Some(host.display().to_string()),
        _ => None,
    }
}

/// What the run allows plugins, beyond what their types declare.
#[derive(Debug, Clone)]
pub struct Policy {
    /// `--sandbox strict`: no `exec`, whatever a type declares.
    pub strict: bool,
    /// The suite's allow-list of commands, when it has one.
    pub exec_allow: Option<Vec<String>>,
    /// Relative command `cwd`s resolve here (the eval file's directory).
    pub base_dir: PathBuf,
    /// The longest a granted command may run.
    pub max_exec: Duration,
    /// The run's judge, for plugins granted `llm`.
    pub judge: Option<std::sync::Arc<crate::judge::Judge>>,
    /// Variables of evalhost's environment that hold a target's key: no
    /// command a grader runs sees them (a code grader calls the judge
    /// through its `target:` proxy instead).
    pub scrub_env: Vec<String>,
    /// The suite's `workspace.docker`, with the runtime that runs it: every
    /// command a grader runs goes into a container of its image.
    pub container: Option<crate::plugin::ContainerRun>,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            strict: false,
            exec_allow: None,
            base_dir: PathBuf::from("."),
            max_exec: Duration::from_secs(600),
            judge: None,
            scrub_env: Vec::new(),
            container: None,
        }
    }
}

/// The grants for one assertion (`(name, type)`, for messages): what its type declares, less what the
/// policy refuses.
///
/// `proxy_calls`: a code grader's `target:` — its command gets a judge proxy
/// ([`crate::judge_proxy`]) allowing that many calls, when the run has a
/// judge. `(workspace, sandbox)`: the case's workspace, and under
/// `--isolate` its sandbox, where every command the plugin runs goes.
pub fn grants(
    (name, kind): (&str, &str),
    declared: &[String],
    policy: &Policy,
    (workspace, sandbox): (Option<&Path>, Option<&crate::isolate::CaseSandbox>),
    judge: &Result<crate::target::Target, String>,
    digest: &str,
    proxy_calls: Option<u64>,
) -> Grants {
    let mut grants = Grants::default();
    if declared.iter().any(|c| c == "exec") {
        grants.exec = if policy.strict {
            Err(format!(
                "`--sandbox strict` refuses it (assertion `{}`, type `{}`); grade with a `wasm:` grader instead, or run without --sandbox strict",
                name, kind
            ))
        } else {
            Ok(ExecGrant {
                base_dir: policy.base_dir.clone(),
                workspace: workspace.map(Path::to_path_buf),
                max_timeout: policy.max_exec,
                allow: policy.exec_allow.clone(),
                scrub_env: policy.scrub_env.clone(),
                container: policy.container.clone(),
                sandbox: sandbox.cloned(),
                proxy: proxy_calls.and_then(|max_calls| {
                    let proxy: std::sync::Arc<dyn CommandJudge> =
                        std::sync::Arc::new(crate::judge_proxy::ProxyGrant {
                            judge: policy.judge.clone()?,
                            default: judge.clone(),
                            digest: digest.to_owned(),
                            max_calls,
                        });
                    Some(proxy)
                }),
            })
        };
    }
    if declared.iter().any(|c| c == "workspace-read") {
        grants.workspace = workspace.map(Path::to_path_buf);
    }
    if declared.iter().any(|c| c == "llm") {
        grants.llm = match &policy.judge {
            Some(j) => Ok(std::sync::Arc::new(CaseJudge {
                judge: j.clone(),
                default: judge.clone(),
                digest: digest.to_owned(),
            }) as LlmGrant),
            None => Err("no judge is configured for this run".into()),
        };
    }
    grants
}

/// The run's judge as one plugin call sees it: the case's default judge,
/// the plugin's digest in every cache key.
#[derive(Debug)]
struct CaseJudge {
    judge: std::sync::Arc<Judge>,
    default: Result<crate::target::Target, String>,
    digest: String,
}

impl Llm for CaseJudge {
    fn complete(&self, request: &Request, usage: &mut JudgeUsage) -> Result<Answer, LlmError> {
        self.judge
            .complete(&self.default, &self.digest, request, usage)
    }

    fn embed(
        &self,
        target: Option<&str>,
        text: &str,
        usage: &mut JudgeUsage,
    ) -> Result<Embedding, LlmError> {
        self.judge.embed(target, &self.digest, text, usage)
    }
}

/// A code grader's `target:`: a loopback judge proxy for each command.
impl CommandJudge for crate::judge_proxy::ProxyGrant {
    fn start(&self) -> std::io::Result<Box<dyn JudgeEndpoint>> {
        Ok(Box::new(crate::judge_proxy::Proxy::start(self.clone())?))
    }
}

impl JudgeEndpoint for crate::judge_proxy::Proxy {
    fn env(&self) -> Vec<(String, String)> {
        crate::judge_proxy::Proxy::env(self)
    }

    fn port(&self) -> Option<u16> {
        crate::judge_proxy::Proxy::port(self)
    }

    fn finish(self: Box<Self>) -> JudgeUsage {
        crate::judge_proxy::Proxy::finish(*self).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(caps: &[&str]) -> Vec<String> {
        caps.iter().map(|c| (*c).to_owned()).collect()
    }

    fn assertion() -> (&'static str, &'static str) {
        ("code-grader", "code-grader")
    }

    const NO_JUDGE: Result<crate::target::Target, String> = Err(String::new());

    #[test]
    fn nothing_is_granted_that_is_not_declared() {
        let ws = Path::new("/tmp/ws");
        let g = grants(
            assertion(),
            &[],
            &Policy::default(),
            (Some(ws), None),
            &NO_JUDGE,
            "d",
            None,
        );
        assert!(g.exec.unwrap_err().contains("does not declare it"));
        assert!(g.llm.unwrap_err().contains("does not declare it"));
        assert_eq!(g.workspace, None);
        assert_eq!(visible_workspace(&[], Some(ws)), None);
    }

    #[test]
    fn strict_refuses_exec_naming_the_assertion() {
        let policy = Policy {
            strict: true,
            ..Policy::default()
        };
        let g = grants(
            assertion(),
            &declared(&["exec"]),
            &policy,
            (None, None),
            &NO_JUDGE,
            "d",
            None,
        );
        let err = g.exec.unwrap_err();
        assert!(
            err.contains("`--sandbox strict` refuses it (assertion `code-grader`"),
            "{err}"
        );
        let g = grants(
            assertion(),
            &declared(&["exec"]),
            &Policy::default(),
            (None, None),
            &NO_JUDGE,
            "d",
            None,
        );
        assert!(g.exec.is_ok());
    }

    #[test]
    fn workspace_read_is_the_case_workspace_only_when_there_is_one() {
        let ws = Path::new("/tmp/ws");
        let caps = declared(&["workspace-read"]);
        let g = grants(
            assertion(),
            &caps,
            &Policy::default(),
            (Some(ws), None),
            &NO_JUDGE,
            "d",
            None,
        );
        assert_eq!(g.workspace.as_deref(), Some(ws));
        assert_eq!(
            visible_workspace(&caps, Some(ws)).as_deref(),
            Some("/workspace")
        );
        let g = grants(
            assertion(),
            &caps,
            &Policy::default(),
            (None, None),
            &NO_JUDGE,
            "d",
            None,
        );
        assert_eq!(g.workspace, None);
        // exec sees the host path (its commands run there); no preopen.
        let exec = declared(&["exec"]);
        assert_eq!(
            visible_workspace(&exec, Some(ws)).as_deref(),
            Some("/tmp/ws")
        );
        let g = grants(
            assertion(),
            &exec,
            &Policy::default(),
            (Some(ws), None),
            &NO_JUDGE,
            "d",
            None,
        );
        assert_eq!(g.workspace, None);
    }

    #[test]
    fn llm_needs_a_judge() {
        let g = grants(
            assertion(),
            &declared(&["llm"]),
            &Policy::default(),
            (None, None),
            &NO_JUDGE,
            "d",
            None,
        );
        assert!(g.llm.unwrap_err().contains("no judge is configured"));
    }
}
