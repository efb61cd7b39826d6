//! The models that grade: promptfoo's default grading provider, the ones
//! tests and assertions name, the embedding model, `rubricPrompt` and
//! factuality settings — each a judge target.

use super::*;

impl Reader {
    /// The model that grades `llm-rubric` (promptfoo's grading provider):
    /// `defaultTest.options.provider`, else promptfoo's default OpenAI
    /// grader (0.121.20's `gpt-5.5-2026-04-23`, JSON replies; see docs/dialects.md on 0.123.1's) on the OpenAI endpoint
    /// the environment names. It becomes the judge of every provider.
    pub(super) fn grader_target(&mut self, inline: &mut Vec<InlineTarget>, renderer: &Renderer) {
        let top = KeyPath::default();
        // promptfoo's default graders: one asked for JSON (`llm-rubric`),
        // one for text (`model-graded-closedqa`).
        let (graders, at) = match self.grading_provider.clone() {
            Some((Value::String(id), at)) => (
                vec![
                    (GRADER, id.clone(), Map::new()),
                    (GRADER_JSON, id, Map::new()),
                ],
                at,
            ),
            Some((Value::Object(o), at)) if o.get("id").is_some_and(Value::is_string) => {
                let id = o["id"].as_str().unwrap_or_default().to_owned();
                let config = o
                    .get("config")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                (
                    vec![
                        (GRADER, id.clone(), config.clone()),
                        (GRADER_JSON, id, config),
                    ],
                    at,
                )
            }
            Some((_, at)) => {
                self.error(
                    &at,
                    "a grading `provider` must be a provider id or `{id, config}`",
                );
                return;
            }
            None => {
                let mut json_config = Map::new();
                json_config.insert("response_format".into(), json!({"type": "json_object"}));
                let id = "openai:chat:gpt-5.5-2026-04-23".to_owned();
                (
                    vec![
                        (GRADER, id.clone(), Map::new()),
                        (GRADER_JSON, id, json_config),
                    ],
                    top.key("defaultTest"),
                )
            }
        };
        for target in inline.iter_mut() {
            target
                .entry
                .insert("grader_target".into(), Value::String(GRADER.into()));
        }
        let mut graders = graders;
        if self.uses_embedder {
            graders.push((
                EMBEDDER,
                "openai:embedding:text-embedding-3-large".to_owned(),
                Map::new(),
            ));
        }
        let named = std::mem::take(&mut self.named_graders);
        let graders = graders
            .into_iter()
            .map(|(name, id, config)| (name.to_owned(), id, config, at.clone()))
            .chain(named.iter().enumerate().filter_map(|(i, g)| {
                let (id, config) = grader_spec(&g.spec)?;
                Some((format!("{GRADER}-{}", i + 1), id, config, g.at.clone()))
            }));
        for (name, id, config, at) in graders.collect::<Vec<_>>() {
            let Some(mut entry) = self.provider_entry(&id, &config, &at, renderer) else {
                continue;
            };
            entry.insert("name".into(), Value::String(name));
            inline.push(InlineTarget {
                entry,
                loc: self.loc(&at),
                unset_env: Vec::new(),
            });
        }
    }

    /// The judge target of a model-graded assertion: the provider the
    /// assertion or its test names (promptfoo's `provider` in the grading
    /// options), else the config's grading model (`json`: the one asked for
    /// JSON, which `llm-rubric` uses).
    pub(super) fn judge(&mut self, json: bool, provider: Option<(Value, KeyPath)>) -> String {
        self.uses_grader = true;
        let Some((spec, at)) = provider else {
            return if json { GRADER_JSON } else { GRADER }.to_owned();
        };
        // A map by output type (`{text: …, embedding: …}`): the text one.
        let spec = match &spec {
            Value::Object(o) if !o.contains_key("id") && o.contains_key("text") => {
                o["text"].clone()
            }
            _ => spec,
        };
        if grader_spec(&spec).is_none() {
            self.error(
                &at,
                "a grading `provider` must be a provider id, `{id, config}`, or a map by type (`text: …`)",
            );
        }
        self.named(spec, at)
    }

    /// The judge target of a provider a test or an assertion names, one
    /// per distinct provider.
    pub(super) fn named(&mut self, spec: Value, at: KeyPath) -> String {
        let key = serde_json::to_string(&spec).unwrap_or_default();
        let i = match self.named_graders.iter().position(|g| g.key == key) {
            Some(i) => i,
            None => {
                self.named_graders.push(NamedGrader { key, spec, at });
                self.named_graders.len() - 1
            }
        };
        format!("{GRADER}-{}", i + 1)
    }

    /// The grader of `search-rubric`: the provider the assertion or its
    /// test names, else `defaultTest.options.provider`, which must search
    /// the web. Of promptfoo's web-search graders evalhost runs OpenAI's
    /// chat search models (`gpt-4o-search-preview`, `gpt-4o-mini-search-preview`,
    /// `gpt-5-search-api`); promptfoo's own default is its Responses API
    /// with the web-search tool, which evalhost does not run, so one must be
    /// named.
    pub(super) fn search_judge(
        &mut self,
        provider: Option<(Value, KeyPath)>,
        assertion: &KeyPath,
    ) -> Option<String> {
        self.uses_grader = true;
        let Some((spec, at)) = provider.or_else(|| self.grading_provider.clone()) else {
            self.error(
                &assertion.key("type"),
                "`search-rubric` needs a grading model that searches the web; promptfoo's default one runs on OpenAI's Responses API, which evalhost does not run",
            )
            .hint = Some("name one evalhost runs: `provider: openai:chat:gpt-4o-search-preview` on the assertion, the test's options or `defaultTest.options`".into());
            return None;
        };
        let spec = match &spec {
            Value::Object(o) if !o.contains_key("id") && o.contains_key("text") => {
                o["text"].clone()
            }
            _ => spec,
        };
        let searches = grader_spec(&spec).is_some_and(|(id, config)| {
            let model = config
                .get("passthrough")
                .and_then(|p| p.get("model"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| id.strip_prefix("openai:chat:").map(str::to_owned));
            id.starts_with("openai:chat:") && model.is_some_and(|m| is_search_model(&m))
        });
        if !searches {
            self.error(
                &at,
                "`search-rubric` needs a grading model that searches the web (promptfoo: \"search-rubric assertion requires a grading provider with web search capabilities\"); of those, evalhost runs OpenAI's chat search models",
            )
            .hint = Some("`provider: openai:chat:gpt-4o-search-preview` (or gpt-4o-mini-search-preview, gpt-5-search-api)".into());
            return None;
        }
        Some(self.named(spec, at))
    }

    /// The embedding model of `similar` and `answer-relevance`, as
    /// promptfoo picks it: the assertion's or the test's `provider` (its
    /// `embedding` entry, when it is a map by type), which must be an
    /// embedding model; else `defaultTest.options.provider` when it is one;
    /// else promptfoo's default, OpenAI's `text-embedding-3-large`.
    pub(super) fn embedder(&mut self, provider: Option<(Value, KeyPath)>) -> Option<String> {
        self.uses_grader = true;
        let by_type = |v: Value| match &v {
            Value::Object(o) if o.contains_key("embedding") => o["embedding"].clone(),
            _ => v,
        };
        if let Some((spec, at)) = provider {
            let spec = by_type(spec);
            let id = grader_spec(&spec).map(|(id, _)| id);
            if !id.as_deref().is_some_and(is_embedding_id) {
                self.error(
                    &at,
                    format!(
                        "{} is not an embedding model evalhost can ask (promptfoo fails the assertion: \"not a valid embedding provider\")",
                        id.map_or("this provider".to_owned(), |id| format!("`{id}`"))
                    ),
                )
                .hint = Some("name an OpenAI-compatible one, `openai:embedding:<model>` (with `config.apiBaseUrl` for another endpoint)".into());
                return None;
            }
            return Some(self.named(spec, at));
        }
        if let Some((default, at)) = self.grading_provider.clone() {
            let candidate = match &default {
                Value::Object(o) if !o.contains_key("id") && o.get("text").is_some() => {
                    o["text"].clone()
                }
                _ => default,
            };
            let candidate = by_type(candidate);
            if grader_spec(&candidate).is_some_and(|(id, _)| is_embedding_id(&id)) {
                return Some(self.named(candidate, at));
            }
        }
        self.uses_embedder = true;
        Some(EMBEDDER.to_owned())
    }

    /// `options.factuality`: a number per category name promptfoo knows.
    pub(super) fn factuality_scores(
        &mut self,
        v: &Value,
        at: &KeyPath,
    ) -> Option<Map<String, Value>> {
        const CATEGORIES: [&str; 5] = [
            "subset",
            "superset",
            "agree",
            "disagree",
            "differButFactual",
        ];
        let Value::Object(o) = v else {
            self.error(at, "`options.factuality` must be a mapping of category scores (subset, superset, agree, disagree, differButFactual)");
            return None;
        };
        for (k, score) in o {
            if !CATEGORIES.contains(&k.as_str()) {
                self.error(&at.key(k), format!("`{k}` is not a factuality category; promptfoo reads subset, superset, agree, disagree and differButFactual"))
                    .hint = crate::diag::nearest(k, CATEGORIES.iter().copied()).map(|n| format!("did you mean `{n}`?"));
            } else if !score.is_number() {
                self.error(
                    &at.key(k),
                    format!("a factuality score must be a number, got {score}"),
                );
            }
        }
        Some(o.clone())
    }

    /// A `rubricPrompt` as promptfoo's `loadRubricPrompt` reads it: a
    /// `file://` reference is that file's text (a JavaScript one is run by
    /// promptfoo, and refused here); text, a list of messages or a mapping
    /// is the prompt itself.
    pub(super) fn rubric_prompt(&mut self, prompt: &Value, at: &KeyPath) -> Option<Value> {
        let Value::String(text) = prompt else {
            return Some(prompt.clone());
        };
        let Some(rest) = text.strip_prefix("file://") else {
            return Some(prompt.clone());
        };
        let (file, _) = file_and_function(text);
        let lower = file.to_ascii_lowercase();
        if [".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"]
            .iter()
            .any(|e| lower.ends_with(e))
        {
            self.error(
                at,
                format!("`{text}`: promptfoo runs this JavaScript file on the host to build the grading prompt, and evalhost does not run host code for a prompt"),
            )
            .hint = Some("write the prompt in a .txt or .json file, or inline".into());
            return None;
        }
        let path = self.relative(file, &format!("`file://{rest}`"), at)?;
        let text = self.read_file(&path, at)?;
        Some(Value::String(text))
    }
}

/// A grading provider written as an id or `{id, config}`: the id and its
/// config.
pub(super) fn grader_spec(spec: &Value) -> Option<(String, Map<String, Value>)> {
    match spec {
        Value::String(id) => Some((id.clone(), Map::new())),
        Value::Object(o) => Some((
            o.get("id")?.as_str()?.to_owned(),
            o.get("config")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        )),
        _ => None,
    }
}

/// The types graded by a model, which read `provider` and `rubricPrompt`.
pub(super) const MODEL_GRADED: &[&str] = &[
    "llm-rubric",
    "model-graded-closedqa",
    "factuality",
    "model-graded-factuality",
    "g-eval",
    "context-recall",
    "context-relevance",
    "context-faithfulness",
    "answer-relevance",
    "search-rubric",
    "select-best",
];

/// promptfoo's test for an OpenAI chat model that searches the web:
/// `gpt-5-search-api`, `gpt-4o-search-preview` or
/// `gpt-4o-mini-search-preview`, at the start or after `/` or `:`, then the
/// end or `-`.
pub(super) fn is_search_model(model: &str) -> bool {
    [
        "gpt-5-search-api",
        "gpt-4o-search-preview",
        "gpt-4o-mini-search-preview",
    ]
    .iter()
    .any(|name| {
        model.match_indices(name).any(|(i, _)| {
            (i == 0 || model[..i].ends_with(['/', ':']))
                && matches!(model[i + name.len()..].chars().next(), None | Some('-'))
        })
    })
}

/// An OpenAI embedding model's provider id.
pub(super) fn is_embedding_id(id: &str) -> bool {
    id.starts_with("openai:embedding:") || id.starts_with("openai:embeddings:")
}
