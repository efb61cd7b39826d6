//! The targets file (`.evalhost/targets.yaml`, `.agentv/targets.yaml`, or
//! `--targets FILE`): found by walking up from the suite, read through the
//! suite reader's YAML and `${{ VAR }}` rules, each entry resolved to a
//! [`Target`]. Literal keys are refused, numbers range-checked.

use super::*;

/// The first targets file found walking up from `start`.
pub fn find_targets_file(start: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
    for dir in start.ancestors() {
        for candidate in CANDIDATES {
            let path = dir.join(candidate);
            if path.is_file() {
                return Some(path);
            }
        }
    }
    None
}

/// Reads a targets file: `${{ VAR }}` from the environment (and `.env`
/// files), literal secrets refused, `use_target` resolved.
pub fn load_targets(path: &Path, env: &Env) -> Result<Targets, Diagnostics> {
    let mut diags = Diagnostics::default();
    // A regular file of at most 32 MiB: not a FIFO or `/dev/zero` that a
    // run directory's `run.json` could name.
    let text = match crate::safe_fs::read_regular_capped(path, 32 << 20) {
        Ok(t) => t,
        Err(err) => {
            diags.push(Diagnostic::error(
                path,
                format!("cannot read the targets file: {err}"),
            ));
            return Err(diags);
        }
    };
    let (mut root, map) = match evalhost_suite::yaml::parse_with_positions(&text) {
        Ok(parsed) => parsed,
        Err(err) => {
            diags.push(
                Diagnostic::error(path, format!("invalid YAML: {}", err.message)).at(err.pos),
            );
            return Err(diags);
        }
    };
    let error = |message: String, key: KeyPath| {
        Diagnostic::error(path, message)
            .at(map.locate(&key))
            .key(key)
    };
    let top = KeyPath::default();
    // Secrets must be references: check before interpolating.
    if let Some(Value::Array(items)) = root.get("targets") {
        for (i, item) in items.iter().enumerate() {
            for field in SECRET_FIELDS {
                if let Some(Value::String(v)) = item.get(*field)
                    && !is_env_reference(v)
                {
                    diags.push(
                        error(
                            format!("`{field}` is written literally; secrets must come from the environment"),
                            top.key("targets").index(i).key(field),
                        )
                        .hint(format!("write `{field}: ${{{{ OPENAI_API_KEY }}}}` and export the variable (or put it in .env)")),
                    );
                }
            }
        }
    }
    // The entries as written, to tell a value that is empty because its
    // variable is not set from one written empty.
    let written = root.get("targets").cloned();
    let missing = env.interpolate(&mut root);
    let Some(Value::Array(items)) = root.get("targets") else {
        diags.push(
            error("the targets file must have a `targets` list".into(), top).hint(
                "targets:\n    - name: default\n      provider: mock\n      response: \"...\"",
            ),
        );
        return Err(diags);
    };
    // `execution: {isolate: true}`: the operator's default for every run
    // using this file. It can only turn isolation on.
    let isolate = match root.get("execution") {
        None | Some(Value::Null) => false,
        Some(Value::Object(execution)) => {
            for key in execution.keys().filter(|k| k.as_str() != "isolate") {
                diags.push(
                    error(
                        format!("`execution.{key}` is not a setting of a targets file"),
                        top.key("execution").key(key),
                    )
                    .hint("a targets file's `execution` has `isolate: true` (every run's commands in a sandbox)"),
                );
            }
            match execution.get("isolate") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    diags.push(error(
                        format!(
                            "`execution.isolate` must be true or false, got {}",
                            kind(other)
                        ),
                        top.key("execution").key("isolate"),
                    ));
                    false
                }
            }
        }
        Some(other) => {
            diags.push(error(
                format!("`execution` must be a mapping, got {}", kind(other)),
                top.key("execution"),
            ));
            false
        }
    };
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut raw: Vec<(String, Map<String, Value>, KeyPath)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = top.key("targets").index(i);
        let Value::Object(entry) = item else {
            diags.push(error(
                format!("a target must be a mapping, got {}", kind(item)),
                at,
            ));
            continue;
        };
        let Some(Value::String(name)) = entry.get("name") else {
            diags.push(error("the target has no `name`".into(), at));
            continue;
        };
        for key in entry.keys() {
            if key.chars().any(|c| c.is_ascii_uppercase()) {
                let snake: String = key
                    .chars()
                    .flat_map(|c| {
                        if c.is_ascii_uppercase() {
                            vec!['_', c.to_ascii_lowercase()]
                        } else {
                            vec![c]
                        }
                    })
                    .collect();
                diags.push(error(
                    format!(
                        "camelCase field `{key}` is not supported in targets files; use `{snake}`"
                    ),
                    at.key(key),
                ));
            }
        }
        raw.push((name.clone(), entry.clone(), at));
    }
    let mut targets = Vec::new();
    for (name, entry, at) in &raw {
        // `use_target` delegates to another entry (up to 5 deep): the
        // delegate's provider with this entry's name.
        let mut effective = entry.clone();
        let mut seen = vec![name.clone()];
        while let Some(Value::String(next)) = effective.get("use_target").cloned() {
            if next.is_empty() {
                diags.push(error(
                    format!(
                        "target `{name}` delegates to an empty `use_target` (is the variable set?)"
                    ),
                    at.key("use_target"),
                ));
                break;
            }
            if seen.contains(&next) || seen.len() > 5 {
                diags.push(error(
                    format!(
                        "`use_target` delegation loops or is deeper than 5: {} -> {next}",
                        seen.join(" -> ")
                    ),
                    at.key("use_target"),
                ));
                break;
            }
            let Some((_, delegate, _)) = raw.iter().find(|(n, _, _)| *n == next) else {
                diags.push(error(
                    format!("target `{name}` delegates to `{next}`, which is not in the file"),
                    at.key("use_target"),
                ));
                break;
            };
            seen.push(next.clone());
            let mut merged = delegate.clone();
            for (k, v) in entry {
                if k != "use_target" && k != "provider" {
                    merged.insert(k.clone(), v.clone());
                }
            }
            merged.remove("use_target");
            if let Some(Value::String(_)) = delegate.get("use_target") {
                merged.insert("use_target".into(), delegate["use_target"].clone());
            }
            effective = merged;
        }
        // A variable the entry (or an entry it delegates to) names and the
        // environment lacks: the target cannot run as written — an error
        // when a run selects it, never a request without its key or a
        // command with a hole in it.
        let unset: Vec<(String, String)> = seen
            .iter()
            .filter_map(|n| {
                let i = raw.iter().position(|(m, _, _)| m == n)?;
                let (_, _, at) = &raw[i];
                let index = match at.0.last() {
                    Some(evalhost_suite::source_map::Seg::Index(i)) => *i,
                    _ => return None,
                };
                written.as_ref()?.get(index).cloned()
            })
            .flat_map(|w| {
                let Value::Object(map) = w else {
                    return Vec::new();
                };
                map.into_iter()
                    .flat_map(|(key, value)| {
                        evalhost_suite::env::references(&value)
                            .into_iter()
                            .filter(|v| missing.contains(v))
                            .map(move |v| (key.clone(), v))
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        if let Some(Value::String(provider)) = effective.get("provider") {
            for problem in keys::check(name, provider, entry) {
                let at = at.key(&problem.key);
                let d = if problem.error {
                    error(problem.message, at)
                } else {
                    Diagnostic::warning(path, problem.message)
                        .at(map.locate(&at))
                        .key(at)
                };
                diags.push(match problem.hint {
                    Some(h) => d.hint(h),
                    None => d,
                });
            }
        }
        match parse_target(name, &effective, &base_dir) {
            Ok(t) => match unset.first() {
                Some((key, var)) => targets.push(Target {
                    provider: Provider::Unavailable(format!(
                        "`{key}` is `${{{{ {var} }}}}` and {var} is not set{}; the target does not run without it",
                        if unset.len() > 1 {
                            format!(
                                " (nor {})",
                                unset[1..]
                                    .iter()
                                    .map(|(_, v)| v.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        } else {
                            String::new()
                        }
                    )),
                    ..t
                }),
                None => targets.push(t),
            },
            Err((key, message)) => {
                let unset = written
                    .as_ref()
                    .and_then(|w| match at.0.last() {
                        Some(evalhost_suite::source_map::Seg::Index(i)) => w.get(*i),
                        _ => None,
                    })
                    .and_then(|e| e.get(&key))
                    .and_then(Value::as_str)
                    .filter(|v| is_env_reference(v))
                    .and_then(|v| {
                        let var = v
                            .trim()
                            .trim_start_matches("${{")
                            .trim_end_matches("}}")
                            .trim();
                        missing.iter().any(|m| m == var).then(|| var.to_owned())
                    });
                match unset {
                    // Not an error until a run selects it.
                    Some(var) => targets.push(Target {
                        name: name.clone(),
                        provider: Provider::Unavailable(format!(
                            "{message}: `{key}` is `${{{{ {var} }}}}` and {var} is not set"
                        )),
                        grader_target: None,
                        fallback_targets: Vec::new(),
                        retry: Retry::default(),
                        base_dir: base_dir.clone(),
                        isolate: Default::default(),
                    }),
                    None => diags.push(error(message, at.key(&key))),
                }
            }
        }
    }
    for name in missing {
        diags.push(Diagnostic::warning(
            path,
            format!("environment variable `{name}` is not set"),
        ));
    }
    if diags.has_errors() {
        return Err(diags);
    }
    diags.dedup();
    Ok(Targets {
        file: Some(path.to_path_buf()),
        targets,
        warnings: diags,
        isolate,
    })
}

/// The targets a suite defines itself (promptfoo's `providers`), over
/// `file`'s: a name the suite defines hides the file's entry of that name.
///
/// A target that cannot be built because a `{{ env.NAME }}` it names is not
/// set is an error naming the variable; with `deferred` (`validate`, as
/// AgentV's, which never builds providers) it is a warning and the target
/// is left out.
pub fn with_inline(
    mut file: Targets,
    inline: &[evalhost_suite::InlineTarget],
    base_dir: &Path,
    deferred: bool,
) -> Result<Targets, Diagnostics> {
    let mut diags = Diagnostics::default();
    let mut own = Vec::new();
    for t in inline {
        let name = t
            .entry
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        match parse_target(&name, &t.entry, base_dir) {
            Ok(target) => own.push(target),
            Err((key, message)) if !t.unset_env.is_empty() => {
                let unset: Vec<String> = t
                    .unset_env
                    .iter()
                    .map(|(k, var)| format!("`{k}` is `{{{{ env.{var} }}}}` and {var} is not set"))
                    .collect();
                let message = format!("{message} ({})", unset.join("; "));
                let vars: Vec<&str> = t.unset_env.iter().map(|(_, v)| v.as_str()).collect();
                let d = if deferred {
                    Diagnostic::warning(
                        &t.loc.file,
                        format!(
                            "target `{name}`: {message}; a run that uses it fails until it is set"
                        ),
                    )
                } else {
                    Diagnostic::error(&t.loc.file, format!("target `{name}`: {message}"))
                };
                diags.push(d.at(t.loc.pos).key(t.loc.key.key(&key)).hint(format!(
                    "set {} in the environment (or in a `.env` file beside the suite)",
                    vars.join(", ")
                )));
            }
            Err((key, message)) => diags.push(
                Diagnostic::error(&t.loc.file, message)
                    .at(t.loc.pos)
                    .key(t.loc.key.key(&key)),
            ),
        }
    }
    if diags.has_errors() {
        return Err(diags);
    }
    file.warnings.0.extend(diags.0);
    file.targets
        .retain(|t| !own.iter().any(|o| o.name == t.name));
    own.append(&mut file.targets);
    file.targets = own;
    Ok(file)
}

pub(super) fn is_env_reference(value: &str) -> bool {
    let v = value.trim();
    v.starts_with("${{") && v.ends_with("}}")
}

/// The longest timeout or delay a targets file may set (a week): a larger
/// number is a mistake, and past about 10^10 s it no longer fits a clock.
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// A number of seconds from a file: finite, positive and at most
/// [`MAX_SECONDS`], else a config error on `key`.
pub fn seconds_field(key: &str, secs: f64) -> Result<Duration, (String, String)> {
    if secs.is_finite() && secs > 0.0 && secs <= MAX_SECONDS {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err((
            key.to_owned(),
            format!(
                "`{key}` must be a number of seconds above 0 and at most {MAX_SECONDS} (a week), got {secs}"
            ),
        ))
    }
}

/// A wait a server asked for, in seconds: NaN or negative is no wait, and
/// anything longer than `max` is `max`. Never panics.
pub fn clamp_seconds(secs: f64, max: Duration) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else if secs >= max.as_secs_f64() {
        max
    } else {
        Duration::from_secs_f64(secs)
    }
}

pub(super) fn get_u64(
    entry: &Map<String, Value>,
    key: &str,
) -> Result<Option<u64>, (String, String)> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
        Some(Value::String(s)) if s.parse::<u64>().is_ok() => Ok(s.parse().ok()),
        Some(other) => Err((
            key.into(),
            format!(
                "`{key}` must be a non-negative integer, got {}",
                kind(other)
            ),
        )),
    }
}

pub(super) fn get_f64(
    entry: &Map<String, Value>,
    key: &str,
) -> Result<Option<f64>, (String, String)> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(Value::String(s)) if s.parse::<f64>().is_ok() => Ok(s.parse().ok()),
        Some(other) => Err((
            key.into(),
            format!("`{key}` must be a number, got {}", kind(other)),
        )),
    }
}

pub(super) fn get_str(
    entry: &Map<String, Value>,
    key: &str,
) -> Result<Option<String>, (String, String)> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err((
            key.into(),
            format!("`{key}` must be a string, got {}", kind(other)),
        )),
    }
}

/// AgentV's `cc-mirror`: Claude Code under another name, its executable
/// the entry's own, else the `binaryPath` of
/// `~/.cc-mirror/<variant>/variant.json` (`variant`, else the target's
/// name). A variant that is not installed stops only the runs that select
/// the target.
fn cc_mirror(
    name: &str,
    entry: &Map<String, Value>,
    base_dir: &Path,
) -> Result<Provider, (String, String)> {
    let mut entry = entry.clone();
    if get_str(&entry, "executable")?.is_none() {
        let variant = get_str(&entry, "variant")?.unwrap_or_else(|| name.to_owned());
        let file = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(".cc-mirror")
            .join(&variant)
            .join("variant.json");
        let binary = std::fs::read_to_string(&file)
            .map_err(|_| {
                format!(
                    "cc-mirror variant \"{variant}\": {} not found. Install the variant or set \"executable\" explicitly.",
                    file.display()
                )
            })
            .and_then(|text| {
                serde_json::from_str::<Value>(&text).map_err(|e| {
                    format!("cc-mirror variant \"{variant}\": failed to parse {}: {e}", file.display())
                })
            })
            .and_then(|doc| {
                doc.get("binaryPath")
                    .and_then(Value::as_str)
                    .filter(|p| !p.trim().is_empty())
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        format!(
                            "cc-mirror variant \"{variant}\": {} missing \"binaryPath\" field",
                            file.display()
                        )
                    })
            });
        match binary {
            Ok(path) => {
                entry.insert("executable".into(), Value::String(path));
            }
            Err(message) => return Ok(Provider::Unavailable(message)),
        }
    }
    Ok(Provider::Agent(Box::new(super::agent::AgentConfig::parse(
        super::agent::AgentKind::Claude,
        &entry,
        base_dir,
    )?)))
}

/// A provider kind AgentV does not have built in: a discovered
/// `.agentv/providers/<kind>.ts` (`.js`, `.mts`, `.mjs`), found walking up
/// from the targets file, run as AgentV runs it — a `cli` target whose
/// command is the entry's own `command`, else `bun run <script> {PROMPT}`.
/// None found and no `command`: a kind evalhost does not know.
fn discovered(
    kind: &str,
    entry: &Map<String, Value>,
    base_dir: &Path,
) -> Result<Provider, (String, String)> {
    let mut entry = entry.clone();
    if !entry.contains_key("command") {
        let script = base_dir.ancestors().find_map(|dir| {
            ["ts", "js", "mts", "mjs"].iter().find_map(|ext| {
                let p = dir.join(".agentv/providers").join(format!("{kind}.{ext}"));
                p.is_file().then_some(p)
            })
        });
        let Some(script) = script else {
            return Ok(Provider::Unsupported(kind.to_owned()));
        };
        entry.insert(
            "command".into(),
            Value::String(format!(
                "bun run {} {{PROMPT}}",
                crate::process::shell_quote(&script.display().to_string())
            )),
        );
    }
    Ok(Provider::Cli(cli::CliConfig::parse(&entry, base_dir)?))
}

/// AgentV's `agentv` provider (its built-in grader): `model` is
/// `provider:model`, run on that provider's API as pi-ai runs it, the key
/// (and Azure's address) from the provider's own environment variables,
/// `temperature` 0 unless given. `openai:` is the Chat Completions API,
/// `anthropic:` the Messages API, `azure:` Azure's Responses API,
/// `google:` Gemini.
fn agentv_model(name: &str, entry: &Map<String, Value>) -> Result<Provider, (String, String)> {
    let model = get_str(entry, "model")?
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| {
            (
                "model".to_owned(),
                format!(
                    "Target \"{name}\" (provider: agentv) requires a \"model\" field (e.g., \"openai:gpt-5-mini\")"
                ),
            )
        })?;
    let Some((api, id)) = model.split_once(':') else {
        return Err((
            "model".into(),
            format!(
                "Invalid agentv model \"{model}\". Expected \"provider:model\" (e.g., \"openai:gpt-5-mini\")."
            ),
        ));
    };
    let env = |var: &str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
    let mut inner = Map::new();
    inner.insert("model".into(), Value::String(id.to_owned()));
    inner.insert(
        "temperature".into(),
        Value::from(get_f64(entry, "temperature")?.unwrap_or(0.0)),
    );
    let key_vars: &[&str] = match api {
        "openai" => &["OPENAI_API_KEY"],
        // pi-ai: an OAuth token first.
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "azure" => &["AZURE_OPENAI_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        other => {
            return Err((
                "model".into(),
                format!(
                    "Unsupported agentv provider \"{other}\" in \"{model}\". Supported: openai, anthropic, azure, google."
                ),
            ));
        }
    };
    match key_vars.iter().find_map(|v| env(v)) {
        Some(key) => {
            inner.insert("api_key".into(), Value::String(key));
        }
        None => {
            return Ok(Provider::Unavailable(format!(
                "the `agentv` model {model} reads its key from {}, which is not set",
                key_vars.join(" or ")
            )));
        }
    }
    Ok(match api {
        "openai" => Provider::OpenAi(openai::OpenAiConfig::parse("openai", &inner)?),
        "anthropic" => Provider::Anthropic(super::anthropic::AnthropicConfig::parse(&inner)?),
        "google" => Provider::Gemini(super::gemini::GeminiConfig::parse(&inner)?),
        _ => {
            let Some(endpoint) =
                env("AZURE_OPENAI_BASE_URL").or_else(|| env("AZURE_OPENAI_RESOURCE_NAME"))
            else {
                return Ok(Provider::Unavailable(format!(
                    "the `agentv` model {model} needs Azure's address: set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME"
                )));
            };
            inner.insert("endpoint".into(), Value::String(endpoint));
            // pi-ai's AZURE_OPENAI_DEPLOYMENT_NAME_MAP: `model=deployment,…`.
            if let Some(deployment) = env("AZURE_OPENAI_DEPLOYMENT_NAME_MAP").and_then(|map| {
                map.split(',').find_map(|pair| {
                    let (m, d) = pair.trim().split_once('=')?;
                    (m.trim() == id && !d.trim().is_empty()).then(|| d.trim().to_owned())
                })
            }) {
                inner.insert("deployment".into(), Value::String(deployment));
            }
            if let Some(v) = env("AZURE_OPENAI_API_VERSION") {
                inner.insert("api_version".into(), Value::String(v));
            }
            Provider::Responses(super::responses::ResponsesConfig::azure(&inner)?)
        }
    })
}

pub(super) fn parse_target(
    name: &str,
    entry: &Map<String, Value>,
    base_dir: &Path,
) -> Result<Target, (String, String)> {
    let provider_name = get_str(entry, "provider")?.ok_or_else(|| {
        (
            "provider".to_owned(),
            format!("target `{name}` has no `provider` (or `use_target`)"),
        )
    })?;
    let provider = match provider_name.as_str() {
        "mock" => Provider::Mock {
            response: get_str(entry, "response")?
                .unwrap_or_else(|| MOCK_DEFAULT_RESPONSE.to_owned()),
            delay_ms: match get_u64(entry, "delay_ms")? {
                None => 0,
                Some(ms) => {
                    seconds_field("delay_ms", ms.max(1) as f64 / 1000.0)?;
                    ms
                }
            },
        },
        "echo" => Provider::Echo,
        "cli" => Provider::Cli(cli::CliConfig::parse(entry, base_dir)?),
        "azure" | "azure-openai" => {
            Provider::Responses(super::responses::ResponsesConfig::azure(entry)?)
        }
        "openai" => {
            let config = openai::OpenAiConfig::parse(&provider_name, entry)?;
            match get_str(entry, "api_format")?.as_deref() {
                None | Some("chat") => Provider::OpenAi(config),
                // A promptfoo config's `ollama:` providers: Ollama's own API.
                Some(api @ ("ollama-chat" | "ollama-generate")) => {
                    Provider::OpenAi(openai::OpenAiConfig {
                        ollama: Some(if api == "ollama-chat" {
                            super::ollama::OllamaApi::Chat
                        } else {
                            super::ollama::OllamaApi::Generate
                        }),
                        ..config
                    })
                }
                // A promptfoo config's `openai:responses:`: promptfoo's
                // request and output.
                Some("responses") if config.output_style != openai::OutputStyle::Content => {
                    Provider::OpenAi(openai::OpenAiConfig {
                        promptfoo_responses: true,
                        ..config
                    })
                }
                Some("responses") => {
                    Provider::Responses(super::responses::ResponsesConfig::openai(&config))
                }
                Some(other) => {
                    return Err((
                        "api_format".into(),
                        format!(
                            "Invalid api_format '{other}' for target '{name}'. Must be 'chat', 'responses', 'ollama-chat' or 'ollama-generate'."
                        ),
                    ));
                }
            }
        }
        "openrouter" | "vllm" | "ollama" => {
            Provider::OpenAi(openai::OpenAiConfig::parse(&provider_name, entry)?)
        }
        "anthropic" => Provider::Anthropic(super::anthropic::AnthropicConfig::parse(entry)?),
        "claude" | "claude-code" | "claude-cli" => Provider::Agent(Box::new(
            super::agent::AgentConfig::parse(super::agent::AgentKind::Claude, entry, base_dir)?,
        )),
        "codex" | "codex-cli" => Provider::Agent(Box::new(super::agent::AgentConfig::parse(
            super::agent::AgentKind::Codex,
            entry,
            base_dir,
        )?)),
        "gemini" | "google" | "google-gemini" => {
            Provider::Gemini(super::gemini::GeminiConfig::parse(entry)?)
        }
        "replay" => Provider::Replay(replay::ReplayConfig::parse(entry, base_dir)?),
        "http" => Provider::Http(super::http::HttpConfig::parse(entry)?),
        // AgentV kinds evalhost does not run yet.
        "pi-cli" => Provider::Agent(Box::new(super::agent::AgentConfig::parse(
            super::agent::AgentKind::Pi,
            entry,
            base_dir,
        )?)),
        "copilot" | "copilot-cli" => Provider::Agent(Box::new(super::agent::AgentConfig::parse(
            super::agent::AgentKind::Copilot,
            entry,
            base_dir,
        )?)),
        "cc-mirror" => cc_mirror(name, entry, base_dir)?,
        "copilot-log" => Provider::CopilotLog(super::copilot_log::CopilotLogConfig::parse(
            entry, base_dir,
        )?),
        "agentv" => agentv_model(name, entry)?,
        "claude-sdk" => Provider::Agent(Box::new(super::agent::AgentConfig::parse(
            super::agent::AgentKind::ClaudeSdk,
            entry,
            base_dir,
        )?)),
        "copilot-sdk" | "copilot_sdk" => Provider::Agent(Box::new(
            super::agent::AgentConfig::parse(super::agent::AgentKind::CopilotSdk, entry, base_dir)?,
        )),
        "pi" | "pi-coding-agent" => Provider::Agent(Box::new(super::agent::AgentConfig::parse(
            super::agent::AgentKind::PiAgent,
            entry,
            base_dir,
        )?)),
        "vscode" | "vscode-insiders" => {
            Provider::Agent(Box::new(super::agent::AgentConfig::parse(
                super::agent::AgentKind::VsCode {
                    insiders: provider_name == "vscode-insiders",
                },
                entry,
                base_dir,
            )?))
        }
        "transcript" => Provider::Unsupported(provider_name.clone()),
        other => discovered(other, entry, base_dir)?,
    };
    let default = Retry::default();
    let retry = Retry {
        // Past u32 it means "retry for ever" no more than u32::MAX does.
        max_retries: get_u64(entry, "max_retries")?.map_or(default.max_retries, |n| {
            u32::try_from(n).unwrap_or(u32::MAX)
        }),
        initial_delay: match get_u64(entry, "retry_initial_delay_ms")? {
            None => default.initial_delay,
            Some(ms) => seconds_field("retry_initial_delay_ms", ms as f64 / 1000.0)?,
        },
        max_delay: match get_u64(entry, "retry_max_delay_ms")? {
            None => default.max_delay,
            Some(ms) => seconds_field("retry_max_delay_ms", ms as f64 / 1000.0)?,
        },
        factor: match get_f64(entry, "retry_backoff_factor")? {
            None => default.factor,
            Some(f) if f.is_finite() && (1.0..=100.0).contains(&f) => f,
            Some(f) => {
                return Err((
                    "retry_backoff_factor".into(),
                    format!("`retry_backoff_factor` must be between 1 and 100, got {f}"),
                ));
            }
        },
    };
    if retry.max_retries > 100 {
        return Err((
            "max_retries".into(),
            format!(
                "`max_retries` must be at most 100, got {}",
                retry.max_retries
            ),
        ));
    }
    let fallback_targets = match entry.get("fallback_targets") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(other) => {
            return Err((
                "fallback_targets".into(),
                format!(
                    "`fallback_targets` must be a list of names, got {}",
                    kind(other)
                ),
            ));
        }
    };
    let isolate = parse_isolate(entry.get("isolate"), base_dir)?;
    Ok(Target {
        name: name.to_owned(),
        provider,
        grader_target: get_str(entry, "grader_target")?.or(get_str(entry, "judge_target")?),
        fallback_targets,
        retry,
        base_dir: base_dir.to_path_buf(),
        isolate,
    })
}

/// A target's `isolate: {env: [NAMES], read: [PATHS], network: BOOL}`:
/// `read` paths relative to the targets file, `~/` the operator's home.
fn parse_isolate(
    value: Option<&Value>,
    base_dir: &Path,
) -> Result<super::TargetIsolation, (String, String)> {
    let mut out = super::TargetIsolation::default();
    let map = match value {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err((
                "isolate".into(),
                format!(
                    "`isolate` must be a mapping of `env`, `read` and `network`, got {}",
                    kind(other)
                ),
            ));
        }
    };
    let names = |key: &str| -> Result<Vec<String>, (String, String)> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => Ok(items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()),
            Some(other) => Err((
                "isolate".into(),
                format!(
                    "`isolate.{key}` must be a list of strings, got {}",
                    kind(other)
                ),
            )),
        }
    };
    const SETTINGS: [&str; 5] = ["env", "read", "network", "memory", "processes"];
    for key in map.keys() {
        if !SETTINGS.contains(&key.as_str()) {
            // A near spelling, or a longer word for one (`environment`).
            let near = crate::diag::nearest(key, SETTINGS)
                .or_else(|| SETTINGS.into_iter().find(|k| key.starts_with(k)))
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            return Err((
                "isolate".into(),
                format!(
                    "`isolate.{key}` is not a setting: env, read, network, memory or processes{near}"
                ),
            ));
        }
    }
    out.env = names("env")?;
    out.read = names("read")?
        .into_iter()
        .map(|p| match p.strip_prefix("~/") {
            Some(rest) => dirs::home_dir().unwrap_or_default().join(rest),
            None => base_dir.join(p),
        })
        .collect();
    out.network = match map.get("network") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(true)) => Some(crate::isolate::Network::Host),
        Some(Value::Bool(false)) => Some(crate::isolate::Network::None),
        Some(Value::Array(_)) => Some(crate::isolate::Network::Hosts(names("network")?)),
        Some(other) => {
            return Err((
                "isolate".into(),
                format!(
                    "`isolate.network` must be false (none), a list of hosts (`[api.openai.com, \"*.anthropic.com\"]`) or true (the host's whole network), got {}",
                    kind(other)
                ),
            ));
        }
    };
    let memory = match map.get("memory") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => {
            Some(crate::isolate::limits::parse_bytes(text).ok_or_else(|| {
                (
                    "isolate".to_owned(),
                    format!("`isolate.memory: {text}` is not a size (write `4GiB`, `512MiB`)"),
                )
            })?)
        }
        Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => n.as_u64(),
        Some(other) => {
            return Err((
                "isolate".into(),
                format!(
                    "`isolate.memory` must be a size (`4GiB`, `512MiB`), got {}",
                    kind(other)
                ),
            ));
        }
    };
    let processes = match map.get("processes") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n))
            if n.as_u64()
                .is_some_and(|n| (1..=u64::from(u32::MAX)).contains(&n)) =>
        {
            n.as_u64().map(|n| n as u32)
        }
        Some(other) => {
            return Err((
                "isolate".into(),
                format!(
                    "`isolate.processes` must be a positive number of processes, got {}",
                    kind(other)
                ),
            ));
        }
    };
    if memory.is_some() || processes.is_some() {
        let d = crate::isolate::Limits::default();
        out.limits = Some(crate::isolate::Limits {
            memory: memory.unwrap_or(d.memory),
            processes: processes.unwrap_or(d.processes),
        });
    }
    Ok(out)
}
