//! Execution settings: the target matrix, trials, plugins and plugin-call
//! limits.

use super::*;
use std::path::PathBuf;

impl Loader {
    pub(super) fn matrix(
        &mut self,
        doc: &Arc<Doc>,
        value: &Value,
        at: &KeyPath,
    ) -> Vec<crate::MatrixTarget> {
        let Value::Array(items) = value else {
            self.error(doc, at, format!("`execution.targets` must be a list of target names or {{name, use_target, hooks}}, got {}", kind(value)));
            return Vec::new();
        };
        let mut out: Vec<crate::MatrixTarget> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let iat = at.index(i);
            let entry = match item {
                Value::String(name) if !name.is_empty() => crate::MatrixTarget {
                    name: name.clone(),
                    use_target: name.clone(),
                    hooks: crate::workspace::Hooks::default(),
                    loc: Some(doc.loc(&iat)),
                },
                Value::Object(o) => {
                    let Some(name) = o
                        .get("name")
                        .and_then(Value::as_str)
                        .filter(|n| !n.is_empty())
                    else {
                        self.error(doc, &iat, "a matrix target needs a `name`");
                        continue;
                    };
                    self.check_keys(doc, o, fields::MATRIX_TARGET, &iat, "a matrix target");
                    let use_target = o
                        .get("use_target")
                        .and_then(Value::as_str)
                        .filter(|u| !u.is_empty())
                        .unwrap_or(name);
                    let hooks = self.hooks(doc, o.get("hooks"), &iat.key("hooks"));
                    crate::MatrixTarget {
                        name: name.to_owned(),
                        use_target: use_target.to_owned(),
                        hooks,
                        loc: Some(doc.loc(&iat)),
                    }
                }
                other => {
                    self.error(
                        doc,
                        &iat,
                        format!(
                            "a matrix target must be a name or a mapping, got {}",
                            kind(other)
                        ),
                    );
                    continue;
                }
            };
            if out.iter().any(|t| t.name == entry.name) {
                self.error(
                    doc,
                    &iat,
                    format!(
                        "target `{}` appears twice in `execution.targets`",
                        entry.name
                    ),
                );
                continue;
            }
            out.push(entry);
        }
        out
    }

    pub(super) fn trials(&mut self, doc: &Doc, value: &Value, at: &KeyPath) -> Option<Trials> {
        let Value::Object(o) = value else {
            self.error(
                doc,
                at,
                format!(
                    "`trials` must be a mapping like {{count: 3, strategy: mean}}, got {}",
                    kind(value)
                ),
            );
            return None;
        };
        let count = match o.get("count") {
            Some(Value::Number(n)) if n.as_u64().is_some_and(|c| (1..=1000).contains(&c)) => {
                n.as_u64()? as u32
            }
            other => {
                self.error(
                    doc,
                    &at.key("count"),
                    format!(
                        "`count` must be an integer from 1 to 1000, got {}",
                        other.map_or("nothing".into(), show)
                    ),
                );
                return None;
            }
        };
        let strategy = match o.get("strategy") {
            None | Some(Value::Null) => crate::model::Strategy::PassAtK,
            Some(Value::String(s)) if s == "pass_at_k" => crate::model::Strategy::PassAtK,
            Some(Value::String(s)) if s == "mean" => {
                // AgentV 4.42's `aggregateTrials` keeps the mean as the
                // score but marks the test ok when any trial was, and its
                // RESULT counts those as passed: 2 good trials of 3 pass
                // there at a mean of 0.67. evalhost passes a test on its
                // mean (≥ the threshold): said, at the key, every time.
                let why = "`strategy: mean` passes a test when the mean of its trials reaches the threshold; AgentV 4.42 counts it passed when any trial passed (its RESULT says PASS at a mean of 0.67), so verdicts differ where some trials fail";
                self.extension(doc, &at.key("strategy"), why);
                self.warning(doc, &at.key("strategy"), why).hint = Some(
                    "use `strategy: pass_at_k` for AgentV's any-trial-passes verdict; see docs/agentv-differences.md".into(),
                );
                crate::model::Strategy::Mean
            }
            Some(Value::String(s)) if s == "confidence_interval" => {
                crate::model::Strategy::ConfidenceInterval
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("strategy"),
                    format!(
                        "`strategy` must be pass_at_k, mean or confidence_interval, got {}",
                        show(other)
                    ),
                );
                return None;
            }
        };
        let cost_limit_usd = match o.get("cost_limit_usd").or(o.get("costLimitUsd")) {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64() {
                Some(c) if c.is_finite() && c > 0.0 => Some(c),
                _ => {
                    self.error(
                        doc,
                        &at.key("cost_limit_usd"),
                        format!(
                            "`cost_limit_usd` must be a positive number, got {}",
                            show(v)
                        ),
                    )
                    .hint = Some("AgentV warns and ignores it; evalhost does not guess".into());
                    None
                }
            },
        };
        for key in o.keys().filter(|k| {
            !["count", "strategy", "cost_limit_usd", "costLimitUsd"].contains(&k.as_str())
        }) {
            self.warning(
                doc,
                &at.key(key),
                format!("unknown key `{key}` in `trials`; it is ignored"),
            );
        }
        Some(Trials {
            count,
            strategy,
            cost_limit_usd,
        })
    }

    pub(super) fn plugins(
        &mut self,
        doc: &Arc<Doc>,
        value: &Value,
        at: &KeyPath,
    ) -> Vec<PluginRef> {
        let mut out = Vec::new();
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let Some(r) = self.plugin_entry(doc, item, &at.index(i), None) {
                        out.push(r);
                    }
                }
            }
            Value::Object(map) => {
                for (name, item) in map {
                    let type_name = name.replace('_', "-");
                    let valid = type_name.starts_with(|c: char| c.is_ascii_lowercase())
                        && type_name
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
                    if !valid {
                        self.error(
                            doc,
                            &at.key(name),
                            format!(
                                "`{name}` is not an assertion type name: use lowercase letters, digits, `-` or `_`"
                            ),
                        );
                        continue;
                    }
                    if let Some(r) = self.plugin_entry(doc, item, &at.key(name), Some(type_name)) {
                        out.push(r);
                    }
                }
            }
            other => {
                self.error(
                    doc,
                    at,
                    format!(
                        "`plugins` must map assertion types to plugins ({{TYPE: {{path, sha256}}}}) or list plugins ([{{path, sha256}}]), got {}",
                        kind(other)
                    ),
                );
            }
        }
        out
    }

    /// One plugin entry: a path, or `{path, sha256}`.
    pub(super) fn plugin_entry(
        &mut self,
        doc: &Arc<Doc>,
        item: &Value,
        item_path: &KeyPath,
        type_name: Option<String>,
    ) -> Option<PluginRef> {
        let (path, sha, oci) = match item {
            Value::String(p) if p.starts_with("oci://") => (None, None, Some(p.clone())),
            Value::String(p) => (Some(p.clone()), None, None),
            Value::Object(o) => {
                self.check_keys(doc, o, fields::PLUGIN, item_path, "a plugin entry");
                let path = o
                    .get("path")
                    .and_then(|v| self.string(doc, v, &item_path.key("path")));
                let sha = o
                    .get("sha256")
                    .and_then(|v| self.string(doc, v, &item_path.key("sha256")));
                let oci = o
                    .get("oci")
                    .and_then(|v| self.string(doc, v, &item_path.key("oci")));
                match (path, oci) {
                    (Some(p), None) if p.starts_with("oci://") => (None, sha, Some(p)),
                    (Some(_), Some(_)) => {
                        self.error(
                            doc,
                            &item_path.key("oci"),
                            "a plugin entry has a `path` or an `oci` reference, not both",
                        );
                        return None;
                    }
                    (path, oci) => (path, sha, oci),
                }
            }
            other => {
                self.error(
                    doc,
                    item_path,
                    format!(
                        "a plugin entry must be a path or a mapping, got {}",
                        kind(other)
                    ),
                );
                return None;
            }
        };
        if let Some(reference) = &oci {
            let rest = reference.strip_prefix("oci://").unwrap_or("");
            if !reference.starts_with("oci://") || !rest.contains('/') {
                self.error(
                    doc,
                    &item_path.key("oci"),
                    format!("`{reference}` is not a registry reference: write oci://HOST/NAME:TAG"),
                );
                return None;
            }
        }
        let path = match (path, &oci) {
            (Some(p), _) => p,
            // Named by its reference until the run resolves it.
            (None, Some(reference)) => reference.clone(),
            (None, None) => {
                self.error(
                    doc,
                    item_path,
                    "the plugin entry has no `path` (or `oci` reference)",
                );
                return None;
            }
        };
        if let Some(sha) = &sha
            && (sha.len() != 64 || !sha.chars().all(|c| c.is_ascii_hexdigit()))
        {
            self.error(
                doc,
                &item_path.key("sha256"),
                "`sha256` must be 64 hexadecimal digits",
            );
        }
        Some(PluginRef {
            path: if oci.is_some() {
                PathBuf::from(&path)
            } else {
                doc.dir.join(path)
            },
            sha256: sha.map(|s| s.to_ascii_lowercase()),
            oci,
            type_name,
            loc: doc.loc(item_path),
        })
    }

    pub(super) fn limits(&mut self, doc: &Doc, value: &Value, at: &KeyPath) -> LimitOverrides {
        let Value::Object(o) = value else {
            self.error(
                doc,
                at,
                format!(
                    "`limits` must be a mapping with `timeout_ms` and/or `memory_mb`, got {}",
                    kind(value)
                ),
            );
            return LimitOverrides::default();
        };
        self.check_keys(doc, o, fields::LIMITS, at, "`limits`");
        let mut limits = LimitOverrides {
            timeout_ms: self.positive_int(doc, o.get("timeout_ms"), at, "timeout_ms"),
            memory_mb: self.positive_int(doc, o.get("memory_mb"), at, "memory_mb"),
        };
        // A ceiling for every suite, and the defaults for an untrusted one:
        // a plugin's deadline and memory cap are the host's guarantee.
        let untrusted = self.untrusted;
        for (key, value, default, max, unit) in [
            (
                "timeout_ms",
                &mut limits.timeout_ms,
                LimitOverrides::DEFAULT_TIMEOUT_MS,
                LimitOverrides::MAX_TIMEOUT_MS,
                "ms",
            ),
            (
                "memory_mb",
                &mut limits.memory_mb,
                LimitOverrides::DEFAULT_MEMORY_MB,
                LimitOverrides::MAX_MEMORY_MB,
                "MiB",
            ),
        ] {
            let Some(v) = *value else { continue };
            if untrusted && v > default {
                self.error(
                    doc,
                    &at.key(key),
                    format!(
                        "`--sandbox strict` keeps plugin limits at most at the defaults: `{key}` can be at most {default} {unit}, got {v}"
                    ),
                );
                *value = None;
            } else if v > max {
                self.error(
                    doc,
                    &at.key(key),
                    format!("`{key}` can be at most {max} {unit}, got {v}"),
                );
                *value = None;
            }
        }
        limits
    }
}
