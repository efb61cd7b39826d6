//! Which dialect a suite is read in: told from the file (keys only one
//! dialect has, the file name, promptfoo's `$schema` comment), forced with
//! `--dialect`, printed at the start of a run and recorded in `run.json`.

use crate::support::Project;

#[test]
fn the_dialect_is_printed_and_recorded() {
    let project = Project::with_mock("hello");
    project.write(
        "EVAL.yaml",
        "tests:\n  - {id: t, input: hi, assertions: [{type: contains, value: hello}]}\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("  dialect AgentV 4.42 (told from the file)"),
        "{}",
        r.stdout
    );
    let run: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("out/run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(run["dialect"], "agentv4", "{run}");
}

#[test]
fn an_ambiguous_file_is_refused_and_dialect_forces_one() {
    let project = Project::with_mock("hello");
    // Keys AgentV 5 and promptfoo share, under a name neither uses.
    project.write(
        "config.yaml",
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert: [{type: contains, value: hi}]\n",
    );
    let run = |extra: &[&str]| -> crate::support::Run {
        let mut args = vec!["validate", "config.yaml"];
        args.extend_from_slice(extra);
        crate::support::evalhost()
            .current_dir(project.path())
            .args(&args)
            .output()
            .unwrap()
            .into()
    };
    let r = run(&[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("cannot tell whether this file is AgentV 5 (next) or promptfoo 0.121"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("--dialect agentv5|promptfoo"),
        "{}",
        r.stderr
    );
    let r = run(&["--dialect", "promptfoo"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = run(&["--dialect", "agentv5"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = run(&["--dialect", "promptfu"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("`promptfu` is not a dialect: agentv4, agentv5 or promptfoo"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_file_mixing_dialects_names_the_markers_with_their_lines() {
    let project = Project::with_mock("hello");
    project.write(
        "EVAL.yaml",
        "execution: {target: default}\ndefaultTest:\n  vars: {a: 1}\ntests:\n  - {id: t, input: hi, assertions: [{type: contains, value: hello}]}\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("this file mixes suite dialects"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("line 2: top-level `defaultTest` (promptfoo 0.121)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("line 1: top-level `execution` (AgentV 4.42)"),
        "{}",
        r.stderr
    );
}

/// Vars as promptfoo's results file shows them: a string holding a JSON
/// object or list is shown re-serialized, so both sides compare parsed.
fn normal_vars(vars: &serde_json::Value) -> serde_json::Value {
    match vars {
        serde_json::Value::Object(m) => serde_json::Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match v {
                        serde_json::Value::String(s) => {
                            match serde_json::from_str::<serde_json::Value>(s) {
                                Ok(
                                    j
                                    @ (serde_json::Value::Object(_) | serde_json::Value::Array(_)),
                                ) => j,
                                _ => v.clone(),
                            }
                        }
                        other => other.clone(),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A row's assertion scores, an `assert-set` followed by its members, as
/// promptfoo lists its component results.
fn flat_scores(scores: &serde_json::Value, out: &mut Vec<f64>) {
    for s in scores.as_array().into_iter().flatten() {
        out.push(s["score"].as_f64().unwrap_or(f64::NAN));
        // An assert-set's members, a grader's nested `componentResults`:
        // promptfoo lists them after it.
        flat_scores(&s["scores"], out);
    }
}

/// promptfoo configs on the `echo` provider, run by promptfoo 0.121.20
/// (`scripts/conformance-promptfoo.py` recorded its rows beside each
/// config) and by evalhost: every row's pass, score and assertion scores
/// are the same.
/// A JSON value as text with every object's keys sorted (request bodies are
/// compared whatever order each tool writes keys in).
fn canonical(v: &serde_json::Value) -> String {
    fn sorted(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                serde_json::Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&o[k])))
                        .collect(),
                )
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

#[test]
fn promptfoo_configs_score_as_promptfoo() {
    let dir = crate::support::root().join("tests/data/promptfoo-conformance");
    let mut configs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("promptfoo.json").is_file())
        .collect();
    configs.sort();
    assert!(configs.len() >= 3);
    let (mut rows, mut components, mut metrics, mut differ) = (0, 0, 0, Vec::new());
    let mut versions = std::collections::BTreeSet::new();
    // `python` assertions: evalhost builds its sandboxed runner with the
    // pinned componentize-py (installed into the target directory).
    let componentize = crate::support::componentize_py();
    // TypeScript assertion files are bundled with Node.js and npm (the
    // toolchain of AgentV's sandboxed assertions).
    let has = |p: &str| {
        std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(p).is_file()))
    };
    let node = has("node") && has("npm");
    assert!(
        node || std::env::var_os("EVALHOST_REQUIRE_NODE").is_none(),
        "EVALHOST_REQUIRE_NODE is set but node or npm is not on PATH"
    );
    for config in &configs {
        let typescript = std::fs::read_dir(config)
            .unwrap()
            .any(|e| e.unwrap().path().extension().is_some_and(|x| x == "ts"));
        if typescript && !node {
            eprintln!(
                "{}: no node/npm; its TypeScript assertions are not bundled",
                config.display()
            );
            continue;
        }
        let work = tempfile::tempdir().unwrap();
        for entry in walkdir::WalkDir::new(config).min_depth(1) {
            let entry = entry.unwrap();
            let dest = work.path().join(entry.path().strip_prefix(config).unwrap());
            if entry.file_type().is_dir() {
                std::fs::create_dir_all(&dest).unwrap();
            } else {
                std::fs::copy(entry.path(), &dest).unwrap();
            }
        }
        // A config on an OpenAI-compatible API talks to a loopback server
        // answering from `openai-replies.json`, by the same rule as the
        // recording script's: the reply whose `match` is the last message.
        let mut cmd = crate::support::evalhost();
        cmd.env("EVALHOST_COMPONENTIZE_PY", &componentize);
        let openai_replies = std::fs::read_to_string(config.join("openai-replies.json")).ok();
        let anthropic_replies = std::fs::read_to_string(config.join("anthropic-replies.json")).ok();
        let responses_replies = std::fs::read_to_string(config.join("responses-replies.json")).ok();
        let _server = (openai_replies.is_some()
            || anthropic_replies.is_some()
            || responses_replies.is_some())
        .then(|| {
                let parse = |t: Option<String>| -> Vec<serde_json::Value> {
                    t.map(|t| serde_json::from_str(&t).unwrap()).unwrap_or_default()
                };
                let replies = parse(openai_replies);
                let anthropic = parse(anthropic_replies);
                let responses = parse(responses_replies);
                let server = crate::support::FakeServer::start_fn(move |req| {
                    let body: serde_json::Value =
                        serde_json::from_str(&req.body).unwrap_or_default();
                    // OpenAI's Responses API: the reply whose `contains` is
                    // in the input (a string, or the items as JSON).
                    if req.path.trim_end_matches('/').ends_with("/v1/responses") {
                        let text = match &body["input"] {
                            serde_json::Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        return match responses.iter().find(|r| {
                            r.get("model").is_none_or(|m| *m == body["model"])
                                && r["contains"].as_str().is_some_and(|c| text.contains(c))
                        }) {
                            Some(r) => crate::support::Reply::json(200, r["body"].clone()),
                            None => crate::support::Reply::json(
                                404,
                                serde_json::json!({"error": {"message": "no reply"}}),
                            ),
                        };
                    }
                    // Anthropic's Messages API: the last message's text
                    // blocks, matched by the same rule.
                    if req.path.trim_end_matches('/').ends_with("/v1/messages") {
                        let last: String = body["messages"]
                            .as_array()
                            .and_then(|m| m.last())
                            .and_then(|m| m["content"].as_array())
                            .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect())
                            .unwrap_or_default();
                        return match anthropic.iter().find(|r| {
                            r.get("model").is_none_or(|m| *m == body["model"])
                                && (r["match"] == last.as_str()
                                    || r["contains"].as_str().is_some_and(|c| last.contains(c)))
                        }) {
                            Some(r) => crate::support::Reply::json(200, r["body"].clone()),
                            None => crate::support::Reply::json(
                                404,
                                serde_json::json!({"type": "error", "error": {"type": "not_found_error", "message": "no reply"}}),
                            ),
                        };
                    }
                    if body.get("input").is_some() && body.get("messages").is_none() {
                        let text = match &body["input"] {
                            serde_json::Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        return match replies
                            .iter()
                            .find(|r| {
                                r["embed"].as_str().is_some_and(|e| text.contains(e))
                                    && r.get("model").is_none_or(|m| *m == body["model"])
                            })
                        {
                            Some(r) => crate::support::Reply::json(
                                200,
                                serde_json::json!({"object": "list", "model": body["model"],
                                    "data": [{"object": "embedding", "index": 0, "embedding": r["vector"]}],
                                    "usage": {"prompt_tokens": 3, "total_tokens": 3}}),
                            ),
                            None => crate::support::Reply::json(
                                404,
                                serde_json::json!({"error": {"message": "no embedding"}}),
                            ),
                        };
                    }
                    // Ollama's and Google's own APIs: the OpenAI reply's
                    // text, found by the same rule, in their shape.
                    let path = req.path.as_str();
                    if path.contains("/api/generate")
                        || path.contains("/api/chat")
                        || path.ends_with(":generateContent")
                    {
                        let last: String = if path.contains("/api/generate") {
                            body["prompt"].as_str().unwrap_or_default().to_owned()
                        } else if path.contains("/api/chat") {
                            body["messages"]
                                .as_array()
                                .and_then(|m| m.last())
                                .and_then(|m| m["content"].as_str())
                                .unwrap_or_default()
                                .to_owned()
                        } else {
                            body["contents"]
                                .as_array()
                                .and_then(|c| c.last())
                                .and_then(|c| c["parts"].as_array())
                                .map(|p| p.iter().filter_map(|p| p["text"].as_str()).collect())
                                .unwrap_or_default()
                        };
                        let Some(r) = replies.iter().find(|r| {
                            r["match"] == last.as_str()
                                || r["contains"].as_str().is_some_and(|c| last.contains(c))
                        }) else {
                            return crate::support::Reply::json(
                                404,
                                serde_json::json!({"error": "no reply"}),
                            );
                        };
                        let text = r["body"]["choices"][0]["message"]["content"].clone();
                        let usage = &r["body"]["usage"];
                        let n = |k: &str| usage[k].as_u64().unwrap_or(0);
                        let payload = if path.contains("/api/generate") {
                            serde_json::json!({"model": body["model"], "response": text, "done": true,
                                "prompt_eval_count": n("prompt_tokens"), "eval_count": n("completion_tokens")})
                        } else if path.contains("/api/chat") {
                            serde_json::json!({"model": body["model"], "message": {"role": "assistant", "content": text}, "done": true,
                                "prompt_eval_count": n("prompt_tokens"), "eval_count": n("completion_tokens")})
                        } else {
                            serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
                                "usageMetadata": {"promptTokenCount": n("prompt_tokens"), "candidatesTokenCount": n("completion_tokens"), "totalTokenCount": n("total_tokens")}})
                        };
                        return crate::support::Reply::json(200, payload);
                    }
                    let last = body["messages"]
                        .as_array()
                        .and_then(|m| m.last())
                        .map(|m| m["content"].clone())
                        .unwrap_or_default();
                    let contains = |r: &serde_json::Value| {
                        r["contains"]
                            .as_str()
                            .zip(last.as_str())
                            .is_some_and(|(c, l)| l.contains(c))
                    };
                    let model = |r: &serde_json::Value| {
                        r.get("model").is_none_or(|m| *m == body["model"])
                    };
                    match replies
                        .iter()
                        .find(|r| model(r) && (r["match"] == last || contains(r)))
                    {
                        Some(r) => crate::support::Reply::json(200, r["body"].clone()),
                        None => crate::support::Reply::json(
                            404,
                            serde_json::json!({"error": {"message": "no reply"}}),
                        ),
                    }
                });
                cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url))
                    .env("OPENAI_API_KEY", "sk-loopback")
                    .env("ANTHROPIC_BASE_URL", &server.url)
                    .env("ANTHROPIC_API_KEY", "sk-ant-loopback")
                    // promptfoo's other hosted providers, at the same server.
                    .env("LOOPBACK_URL", format!("{}/v1", server.url))
                    .env("AZURE_API_BASE_URL", &server.url)
                    .env("AZURE_API_KEY", "az-loopback")
                    .env("OPENROUTER_API_KEY", "or-loopback")
                    .env("OLLAMA_BASE_URL", &server.url)
                    .env("GOOGLE_API_BASE_URL", &server.url)
                    .env("GOOGLE_API_KEY", "g-loopback");
                server
            });
        let r: crate::support::Run = cmd
            .current_dir(work.path())
            // Without caches, as promptfoo was recorded (`--no-cache`): every
            // grading request is sent, as often as promptfoo sent it.
            .args([
                "run",
                "promptfooconfig.yaml",
                "-o",
                "out",
                "--no-cache",
                "--no-judge-cache",
            ])
            .output()
            .unwrap()
            .into();
        assert!(
            r.code == 0 || r.code == 1,
            "{}: {}{}",
            config.display(),
            r.stdout,
            r.stderr
        );
        let ours: Vec<serde_json::Value> =
            std::fs::read_to_string(work.path().join("out/results.jsonl"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        let recorded: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(config.join("promptfoo.json")).unwrap())
                .unwrap();
        let name = config.file_name().unwrap().to_string_lossy().into_owned();
        versions.insert(recorded["promptfoo"].as_str().unwrap_or("?").to_owned());
        // The graders are asked as promptfoo asks them: its default model,
        // JSON replies for llm-rubric, text for model-graded-closedqa.
        if name == "llm-rubric" {
            let received = _server.as_ref().unwrap().received.lock().unwrap().clone();
            let bodies: Vec<serde_json::Value> = received
                .iter()
                .map(|r| serde_json::from_str(&r.body).unwrap())
                .collect();
            let asks = |marker: &str| {
                bodies
                    .iter()
                    .filter(|b| b.to_string().contains(marker))
                    .collect::<Vec<_>>()
            };
            assert!(!asks("RUBRIC-A").is_empty() && !asks("CRIT-1").is_empty());
            for b in asks("RUBRIC-") {
                assert_eq!(b["model"], "gpt-5.5-2026-04-23", "{b}");
                assert_eq!(b["response_format"]["type"], "json_object", "{b}");
            }
            for b in asks("CRIT-") {
                assert_eq!(b["model"], "gpt-5.5-2026-04-23", "{b}");
                assert!(b.get("response_format").is_none(), "{b}");
            }
        }
        // The requests promptfoo sent, where recorded: evalhost's are the
        // same bodies to the same paths, in any order.
        if let Ok(text) = std::fs::read_to_string(config.join("promptfoo-requests.json")) {
            let mut want: Vec<String> = serde_json::from_str::<Vec<serde_json::Value>>(&text)
                .unwrap()
                .iter()
                .map(canonical)
                .collect();
            let mut got: Vec<String> = _server
                .as_ref()
                .unwrap()
                .received
                .lock()
                .unwrap()
                .iter()
                .map(|r| {
                    canonical(&serde_json::json!({
                        "path": r.path,
                        "body": serde_json::from_str::<serde_json::Value>(&r.body).unwrap_or_default(),
                    }))
                })
                .collect();
            want.sort();
            got.sort();
            // Embeddings are compared as sets: promptfoo embeds a text once
            // per comparison, evalhost once per assertion (the same vectors,
            // fewer calls).
            for list in [&mut want, &mut got] {
                list.dedup_by(|a, b| a == b && a.contains("\"path\":\"/v1/embeddings\""));
            }
            if want != got {
                // As multisets: a request sent more or fewer times than
                // promptfoo sent it is named too.
                let mut missing = want.clone();
                let mut extra = Vec::new();
                for g in &got {
                    match missing.iter().position(|w| w == g) {
                        Some(p) => {
                            missing.remove(p);
                        }
                        None => extra.push(g.clone()),
                    }
                }
                differ.push(format!(
                    "{name}: requests differ from promptfoo's\n  promptfoo sent, evalhost did not: {missing:?}\n  evalhost sent, promptfoo did not: {extra:?}"
                ));
            }
        }
        // Named and derived metrics per prompt and provider.
        if let Some(prompts) = recorded["prompts"].as_array() {
            let summary: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(work.path().join("out/summary.json")).unwrap(),
            )
            .unwrap();
            for want in prompts {
                let got = summary["metrics"].as_array().and_then(|ms| {
                    ms.iter()
                        .find(|m| m["target"] == want["provider"] && m["prompt"] == want["label"])
                });
                let Some(got) = got else {
                    differ.push(format!(
                        "{name}: no metrics for {} {}",
                        want["label"], want["provider"]
                    ));
                    continue;
                };
                let mut ours = std::collections::HashMap::new();
                for pair in got["named"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .chain(got["derived"].as_array().into_iter().flatten())
                {
                    ours.insert(
                        pair[0].as_str().unwrap_or_default().to_owned(),
                        pair[1].as_f64(),
                    );
                }
                for (metric, value) in want["namedScores"].as_object().unwrap() {
                    metrics += 1;
                    let theirs = value.as_f64().unwrap_or(f64::NAN);
                    match ours.get(metric) {
                        Some(Some(v)) if (v - theirs).abs() < 1e-9 => {}
                        other => differ.push(format!(
                            "{name} {}: metric {metric} evalhost {other:?} promptfoo {theirs}",
                            want["label"]
                        )),
                    }
                }
            }
        }
        if ours.len() != recorded["rows"].as_array().unwrap().len() {
            differ.push(format!(
                "{name}: evalhost wrote {} rows, promptfoo {}",
                ours.len(),
                recorded["rows"].as_array().unwrap().len()
            ));
        }
        let mut verdicts = std::collections::BTreeMap::new();
        for want in recorded["rows"].as_array().unwrap() {
            rows += 1;
            // An object output (a script provider's) is its JSON text in
            // evalhost, as promptfoo's assertions read it.
            let want_output = match &want["output"] {
                serde_json::Value::String(_) | serde_json::Value::Null => want["output"].clone(),
                other => serde_json::Value::String(other.to_string()),
            };
            let Some(got) = ours.iter().find(|g| {
                g["target"] == want["provider"]
                    // An error row has no output in promptfoo's results.
                    && (g["output"] == want_output || want_output.is_null())
                    && normal_vars(&g["metadata"]["vars"]) == normal_vars(&want["vars"])
                    // Tests with the same vars are told apart by their
                    // description.
                    && (want["description"].is_null()
                        || g["metadata"]["description"] == want["description"])
            }) else {
                differ.push(format!(
                    "{name}: no row for {} {}",
                    want["provider"], want["output"]
                ));
                continue;
            };
            let id = got["test_id"].as_str().unwrap_or_default();
            // Under `repeat` each trial is a row of promptfoo's; the test
            // passes only when all of them do.
            let verdict = verdicts
                .entry((
                    id.to_owned(),
                    got["target"].as_str().unwrap_or_default().to_owned(),
                ))
                .or_insert(true);
            *verdict &= want["success"].as_bool() == Some(true);
            let passed = got["status"] == "passed";
            if Some(passed) != want["success"].as_bool() {
                differ.push(format!(
                    "{name} {id}: evalhost {} promptfoo success {}",
                    got["status"], want["success"]
                ));
            }
            let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
            let (g, w) = (
                got["score"].as_f64().unwrap(),
                want["score"].as_f64().unwrap(),
            );
            if !close(g, w) {
                differ.push(format!("{name} {id}: score evalhost {g} promptfoo {w}"));
            }
            // An assertion that throws makes the whole row an error in
            // promptfoo (no component results); in evalhost the row is an
            // error too.
            if want["components"].as_array().is_some_and(Vec::is_empty) && want["error"].is_string()
            {
                if got["status"] != "error" {
                    differ.push(format!(
                        "{name} {id}: evalhost {} where promptfoo has an error row",
                        got["status"]
                    ));
                }
                continue;
            }
            let mut flat = Vec::new();
            flat_scores(&got["scores"], &mut flat);
            let theirs: Vec<f64> = want["components"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["score"].as_f64().unwrap_or(f64::NAN))
                .collect();
            components += theirs.len();
            if flat.len() != theirs.len() || flat.iter().zip(&theirs).any(|(a, b)| !close(*a, *b)) {
                differ.push(format!(
                    "{name} {id}: assertion scores evalhost {flat:?} promptfoo {theirs:?}"
                ));
            }
        }
        // Each test's outcome (its trials combined) is promptfoo's verdict.
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(work.path().join("out/summary.json")).unwrap(),
        )
        .unwrap();
        for ((id, target), want) in &verdicts {
            let outcome = summary["tests"].as_array().and_then(|ts| {
                ts.iter()
                    .find(|t| t["test_id"] == id.as_str() && t["target"] == target.as_str())
            });
            match outcome {
                Some(o) if (o["status"] == "passed") == *want => {}
                other => differ.push(format!(
                    "{name} {id}: outcome evalhost {other:?}, promptfoo's rows all passed: {want}"
                )),
            }
        }
    }
    eprintln!(
        "promptfoo conformance: {} configs, {rows} rows, {components} assertion scores and {metrics} named or derived metrics compared with promptfoo {}; {} differ",
        configs.len(),
        versions.into_iter().collect::<Vec<_>>().join(", "),
        differ.len()
    );
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn a_run_exports_promptfoo_json() {
    let dir = crate::support::root().join("tests/data/promptfoo-conformance/basics");
    let work = tempfile::tempdir().unwrap();
    std::fs::copy(
        dir.join("promptfooconfig.yaml"),
        work.path().join("promptfooconfig.yaml"),
    )
    .unwrap();
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(work.path())
        .args([
            "run",
            "promptfooconfig.yaml",
            "-o",
            "out",
            "--export",
            "promptfoo-json",
            "pf.json",
        ])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.path().join("pf.json")).unwrap())
            .unwrap();
    assert_eq!(doc["results"]["version"], 3);
    let rows = doc["results"]["results"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(doc["results"]["stats"]["successes"], 4);
    let threshold_row = rows
        .iter()
        .find(|r| r["testCase"]["description"] == "threshold row")
        .unwrap();
    assert_eq!(threshold_row["prompt"]["raw"], "Say hi to Bob");
    assert_eq!(threshold_row["prompt"]["label"], "Say {{word}} to {{name}}");
    assert_eq!(threshold_row["provider"]["id"], "echo");
    assert_eq!(threshold_row["vars"]["name"], "Bob");
    let components = threshold_row["gradingResult"]["componentResults"]
        .as_array()
        .unwrap();
    assert_eq!(components.len(), 3);
    assert_eq!(components[2]["pass"], false);
    assert_eq!(
        components[2]["reason"],
        "Expected output to start with \"Nope\""
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(work.path())
        .args([
            "run",
            "promptfooconfig.yaml",
            "-o",
            "out2",
            "--export",
            "csv",
            "x.csv",
        ])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("the export formats are: promptfoo-json"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_agentv5_suite_runs_with_its_provider_catalog_and_script_protocol() {
    let project = crate::support::Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        ".agentv/providers.yaml",
        "- id: mock\n  label: canned\n  response: 'Hello Ada, your order 42 shipped.'\n",
    );
    project.write(
        "grade.sh",
        "payload=$(cat)\ncase \"$payload\" in\n  *'order 42'*) echo '{\"pass\": true, \"checks\": [{\"text\": \"mentions the order\", \"pass\": true}, {\"text\": \"polite\", \"pass\": true, \"score\": 0.5}]}';;\n  *) echo '{\"pass\": false, \"reason\": \"no order\"}';;\nesac\n",
    );
    project.write(
        "evals/suite.yaml",
        "providers: [canned]\nprompts: ['{{ input }}']\ndefault_test:\n  assert:\n    - {type: icontains, value: hello, metric: greets}\ntests:\n  - id: order\n    assert:\n      - type: contains\n        value: '{{ number }}'\n      - metric: script-check\n        type: script\n        command: [sh, ../grade.sh]\n    vars:\n      number: ['42', '43']\n      input: [{role: user, content: 'Where is my order?'}]\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .args(["run", "evals/suite.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    // `number: ['42', '43']` expands into two tests; 43 is not in the answer.
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("dialect AgentV 5 (next)"), "{}", r.stdout);
    let rows: Vec<serde_json::Value> =
        std::fs::read_to_string(project.path().join("out/results.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let row = |id: &str| {
        rows.iter()
            .find(|r| r["test_id"] == id)
            .unwrap_or_else(|| panic!("{id}: {rows:?}"))
    };
    let first = row("order__vars_1");
    assert_eq!(first["target"], "canned");
    let names: Vec<&str> = first["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    // The test's own assertions first, then default_test's (AgentV 5's order).
    assert_eq!(names, ["contains-42", "script-check", "greets"]);
    // AgentV 5's script protocol: no score, so the mean of the checks.
    assert_eq!(first["scores"][1]["score"], 0.75, "{first}");
    assert_eq!(first["scores"][1]["verdict"], "pass");
    assert_eq!(first["status"], "passed");
    assert_eq!(row("order__vars_2")["status"], "failed");
}

/// AgentV's next-format example suites (`../shared/corpus/agentv-5-next`):
/// how many `evalhost validate` accepts today, as a floor that may only
/// rise (the rest name what is not read yet).
#[test]
fn agentv5_corpus_suites_validate() {
    let corpus = crate::support::root().join("../shared/corpus/agentv-5-next/features");
    if !corpus.is_dir() {
        assert!(
            std::env::var_os("EVALHOST_REQUIRE_CORPUS").is_none(),
            "the corpus is missing"
        );
        eprintln!("the corpus is missing; skipped");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("corpus");
    for entry in walkdir::WalkDir::new(&corpus) {
        let entry = entry.unwrap();
        let dest = copy.join(entry.path().strip_prefix(&corpus).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &dest).unwrap();
            let mut perms = std::fs::metadata(&dest).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&dest, perms).unwrap();
        }
    }
    std::fs::create_dir_all(copy.join(".git")).unwrap();
    let mut files: Vec<std::path::PathBuf> = walkdir::WalkDir::new(&copy)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.path().to_path_buf())
        .filter(|p| {
            let n = p
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_ascii_lowercase();
            n == "suite.yaml" || n == "eval.yaml" || n.ends_with(".eval.yaml")
        })
        .collect();
    files.sort();
    // Each file: refused, read with something evalhost ignores (that
    // AgentV 5 reads), or read whole (warnings only about the targets a
    // run needs, or keys AgentV 5 itself drops).
    let mut refused = Vec::new();
    let mut ignoring = Vec::new();
    let mut container = Vec::new();
    let mut whole = 0;
    for f in &files {
        let r: crate::support::Run = crate::support::evalhost()
            .current_dir(f.parent().unwrap())
            .args(["validate", f.file_name().unwrap().to_str().unwrap()])
            .output()
            .unwrap()
            .into();
        let name = f.strip_prefix(&copy).unwrap().display().to_string();
        let text = format!("{}{}", r.stdout, r.stderr);
        let ignores = text.lines().any(|l| {
            l.contains("warning")
                && (l.contains("is ignored") || l.contains("not read"))
                && !l.contains("as AgentV ignores it")
                && !l.contains("AgentV 5 reads only")
        });
        if r.code != 0 {
            refused.push(name);
        } else if text.contains("needs a working docker or podman") {
            // Read whole; a run needs a container runtime and refuses
            // the suite without one (never on the host).
            container.push(name);
        } else if ignores {
            ignoring.push(name);
        } else {
            whole += 1;
        }
    }
    eprintln!(
        "AgentV 5 corpus: {whole} of {} suites read whole; refused {refused:?}; read with a part ignored {ignoring:?}",
        files.len()
    );
    // The rest, each with its reason: `options.transform` scripts are not
    // run yet; prompt-template-sdk names `custom-grader.ts`, a file its
    // directory does not have (it has `custom-evaluator.ts`); Docker
    // environments need a container runtime. readme-quickstart's `openai` entry
    // takes its model from `{{ env.LOCAL_OPENAI_PROXY_MODEL }}`, unset
    // here: `validate` warns, naming it (AgentV's never builds providers),
    // and a run would refuse.
    assert_eq!(
        refused,
        [
            "file-transforms/evals/suite.yaml",
            "prompt-template-sdk/evals/suite.yaml",
        ]
    );
    assert!(ignoring.is_empty(), "{ignoring:?}");
    assert_eq!(
        container,
        ["docker-workspace/evals/docker-example.EVAL.yaml"]
    );
    // The other 64 of AgentV's 67 next-format files are read whole (with
    // copilot-transcript-replay, whose `replay` entry replays a Copilot
    // transcript: `transcripts:`).
    assert_eq!((whole, files.len()), (64, 67));
}

#[test]
fn an_agentv5_host_environment_is_its_workdir_with_setup_run_first() {
    let project = crate::support::Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        ".agentv/providers.yaml",
        "- id: cli\n  label: agent\n  command: cat marker > {OUTPUT_FILE}\n",
    );
    project.write(
        "evals/suite.yaml",
        "environment:\n  type: host\n  workdir: ../wd\n  setup:\n    command: [sh, -c, 'echo ready > marker']\n    cwd: .\nproviders: [agent]\nprompts: ['{{ input }}']\ntests:\n  - id: t\n    vars: {input: go}\n    assert: [{type: contains, value: ready}]\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .args(["run", "evals/suite.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        std::fs::read_to_string(project.path().join("wd/marker")).unwrap(),
        "ready\n",
        "the workdir is the workspace itself, kept"
    );
}

#[test]
fn sandbox_strict_refuses_a_command_provider_the_suite_defines() {
    let project = crate::support::Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        ".agentv/providers.yaml",
        "- id: cli\n  label: agent\n  command: touch PWNED > {OUTPUT_FILE}\n",
    );
    project.write(
        "evals/suite.yaml",
        "providers: [agent]\nprompts: ['{{ input }}']\ntests:\n  - id: t\n    vars: {input: go}\n    assert: [{type: contains, value: x}]\n",
    );
    let targets = project.path().join(".evalhost/targets.yaml");
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .args([
            "run",
            "evals/suite.yaml",
            "-o",
            "out",
            "--sandbox",
            "strict",
            "--targets",
        ])
        .arg(&targets)
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("`--sandbox strict` refuses the provider `agent` the suite defines itself"),
        "{}",
        r.stderr
    );
    assert!(!project.path().join("evals/PWNED").exists());
    assert!(!project.path().join("PWNED").exists());
}

/// What a hostile suite in either new dialect cannot do: read outside the
/// project, point a workspace into `.git`, hang the reader on a FIFO or a
/// template, or expand into billions of tests.
#[test]
fn hostile_dialect_files_are_refused_with_a_reason() {
    let project = crate::support::Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join("proj/.git/hooks")).unwrap();
    let validate = |file: &str| -> crate::support::Run {
        crate::support::evalhost()
            .current_dir(project.path().join("proj"))
            .args(["validate", "--sandbox", "strict", file])
            .output()
            .unwrap()
            .into()
    };
    // AgentV 5: tests from a file outside the project root.
    project.write("outside.yaml", "- vars: {q: secret}\n");
    project.write(
        "proj/v5.yaml",
        "prompts: ['{{q}}']\nproviders: [echo]\ntests: file://../outside.yaml\nassert: [{type: contains, value: x}]\n",
    );
    let r = validate("v5.yaml");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("outside the suite's project root"),
        "{}",
        r.stderr
    );
    // AgentV 4: a static workspace inside `.git`.
    project.write(
        "proj/EVAL.yaml",
        "workspace: {mode: static, path: .git/hooks}\ntests:\n  - {id: t, input: hi, assertions: [{type: contains, value: hi}]}\n",
    );
    let r = validate("EVAL.yaml");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    // Refused as one of the project's secrets (git's files) before the
    // workspace rules see it.
    assert!(
        r.stderr.contains("inside a `.git` directory")
            || r.stderr.contains("one of the project's secrets"),
        "{}",
        r.stderr
    );
    // promptfoo: an expected value loaded from a file outside the project.
    project.write(
        "proj/promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert: [{type: equals, value: 'file://../outside.yaml'}]\n",
    );
    let r = validate("promptfooconfig.yaml");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("`file://../outside.yaml`")
            && r.stderr.contains("outside the suite's project root"),
        "{}",
        r.stderr
    );
    // promptfoo: vars whose product is astronomically large.
    let many: Vec<String> = (0..1000).map(|i| format!("'{i}'")).collect();
    let list = many.join(", ");
    project.write(
        "proj/promptfooconfig.yaml",
        &format!(
            "prompts: ['{{{{a}}}}{{{{b}}}}{{{{c}}}}']\nproviders: [echo]\ntests:\n  - vars: {{a: [{list}], b: [{list}], c: [{list}]}}\n    assert: [{{type: contains, value: x}}]\n"
        ),
    );
    let r = validate("promptfooconfig.yaml");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("expand into more tests"), "{}", r.stderr);
    // promptfoo: a template that would loop for minutes, and one that
    // overflows the template engine.
    project.write(
        "proj/promptfooconfig.yaml",
        "prompts: ['{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}', '{{ range(9223372036854775807) }}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert: [{type: contains, value: x}]\n",
    );
    let r = validate("promptfooconfig.yaml");
    assert!(r.code == 0 || r.code == 2, "{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    // A FIFO as a tests file: refused, not waited on.
    #[cfg(unix)]
    {
        let fifo = project.path().join("proj/cases.yaml");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        project.write(
            "proj/promptfooconfig.yaml",
            "prompts: ['{{q}}']\nproviders: [echo]\ntests: file://cases.yaml\n",
        );
        let r = validate("promptfooconfig.yaml");
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    }
}

/// AgentV 5's trajectory and skill types grade the agent's tool calls as
/// AgentV 5 does, each `not-` form with its own rule.
#[test]
fn agentv5_trajectory_and_skill_assertions_grade_the_tool_calls() {
    let project = crate::support::Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        "agent.json",
        r#"{"output": [{"role": "assistant", "content": "done", "tool_calls": [
            {"tool": "Skill", "input": {"skill": "acme-deploy"}},
            {"tool": "search", "input": {"query": "ml", "limit": 10}},
            {"tool": "search", "input": {"query": "dl"}},
            {"tool": "fetch", "input": {"url": "x"}}]}]}"#,
    );
    project.write(
        ".agentv/providers.yaml",
        "- id: cli\n  label: agent\n  command: cp agent.json {OUTPUT_FILE}\n  cwd: ..\n",
    );
    project.write(
        "evals/suite.yaml",
        r#"providers: [agent]
prompts: ['{{ input }}']
tests:
  - id: t
    vars: {input: go}
    assert:
      - {metric: used, type: trajectory:tool-used, value: {name: search, min: 2}}
      - {metric: seq, type: trajectory:tool-sequence, value: [search, fetch]}
      - {metric: exact, type: trajectory:tool-sequence, value: {mode: exact, steps: [Skill, search, fetch]}}
      - {metric: args, type: trajectory:tool-args-match, value: {name: search, args: {query: ml}}}
      - {metric: forbidden, type: not-trajectory:tool-used, value: [delete, fetch]}
      - {metric: skill, type: skill-used, value: acme-deploy}
      - {metric: no-skill, type: not-skill-used, value: csv-analyzer}
"#,
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .args(["run", "evals/suite.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert!(r.code == 0 || r.code == 1, "{}{}", r.stdout, r.stderr);
    let row: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(project.path().join("out/results.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let score = |name: &str| -> f64 {
        row["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no score {name}: {row}"))["score"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(score("used"), 1.0, "{row}");
    assert_eq!(score("seq"), 1.0, "{row}");
    assert_eq!(score("exact"), 0.0, "{row}");
    assert_eq!(score("args"), 1.0, "{row}");
    // One of the forbidden tools was used.
    assert_eq!(score("forbidden"), 0.0, "{row}");
    assert_eq!(score("skill"), 1.0, "{row}");
    assert_eq!(score("no-skill"), 1.0, "{row}");
    let text = row.to_string();
    assert!(
        text.contains("Forbidden tool(s) were used: fetch. Actual tools: tool:Skill, tool:search, tool:search, tool:fetch"),
        "{text}"
    );
}

/// AgentV 5 `extensions`: `agentv:agent-rules` finds the workspace's rules,
/// a `file://hook.mjs:beforeAll` module runs with AgentV 5's context, both
/// before the environment's `setup`, as AgentV 5 orders them.
#[test]
fn agentv5_extensions_run_before_the_setup() {
    let have_node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_node {
        assert!(
            std::env::var_os("EVALHOST_REQUIRE_NODE").is_none(),
            "node is required here"
        );
        eprintln!("note: node is not installed; the file:// extension is not run");
        return;
    }
    let project = crate::support::Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write("ws/AGENTS.md", "be nice\n");
    project.write(
        "evals/hook.mjs",
        "import fs from 'node:fs';\nimport path from 'node:path';\nexport async function beforeAll(ctx) {\n  fs.writeFileSync(path.join(ctx.workspace_path, 'marker'), `${ctx.hook_name} ${path.basename(ctx.eval_dir)}`);\n  return { output: 'hook ran' };\n}\n",
    );
    project.write(
        ".agentv/providers.yaml",
        "- id: mock\n  label: canned\n  response: ok\n",
    );
    project.write(
        "evals/suite.yaml",
        "providers: [canned]\nextensions:\n  - agentv:agent-rules\n  - file://hook.mjs:beforeAll\nenvironment:\n  type: host\n  workdir: ../ws\n  setup:\n    command: [sh, -c, 'cp marker setup-saw-marker']\n    cwd: .\nprompts: ['{{ q }}']\ntests:\n  - id: t\n    vars: {q: hi}\n    assert: [{type: contains, value: ok}]\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .args(["run", "evals/suite.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let saw = std::fs::read_to_string(project.path().join("ws/setup-saw-marker")).unwrap();
    assert_eq!(saw, "beforeAll evals");
    let run = std::fs::read_to_string(project.path().join("out/summary.json")).unwrap();
    assert!(run.contains("rules: "), "{run}");
    assert!(run.contains("AGENTS.md"), "{run}");
    assert!(run.contains("hook ran"), "{run}");
}

/// promptfoo's JavaScript providers (a class with `callApi`, or a
/// function) run through node, with the prompt, options and context
/// promptfoo gives them; `--sandbox strict` refuses every script provider.
#[test]
fn promptfoo_script_providers_run_and_strict_refuses_them() {
    let project = crate::support::Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        "provider.js",
        "module.exports = class {\n  constructor(o) { this.o = o; }\n  async callApi(prompt, ctx) { return { output: `js ${this.o.config.tag} ${prompt} ${ctx.vars.q}`, tokenUsage: { prompt: 2, completion: 5 } }; }\n};\n",
    );
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['Q {{q}}']\nproviders:\n  - {id: file://provider.js, config: {tag: T}}\ntests:\n  - vars: {q: hi}\n    assert: [{type: equals, value: 'js T Q hi hi'}]\n",
    );
    let run = |extra: &[&str]| -> crate::support::Run {
        let mut args = vec!["run", "promptfooconfig.yaml", "-o", "out"];
        args.extend_from_slice(extra);
        crate::support::evalhost()
            .current_dir(project.path())
            .args(&args)
            .output()
            .unwrap()
            .into()
    };
    let r = run(&["--sandbox", "strict"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("`--sandbox strict` refuses the provider `file://provider.js`"),
        "{}",
        r.stderr
    );
    let have_node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_node {
        assert!(
            std::env::var_os("EVALHOST_REQUIRE_NODE").is_none(),
            "node is required here"
        );
        eprintln!("note: node is not installed; the JavaScript provider is not run");
        return;
    }
    let r = run(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let row: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(project.path().join("out/results.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(row["output"], "js T Q hi hi", "{row}");
    assert_eq!(row["token_usage"]["output"], 5, "{row}");
}

/// promptfoo's `http` provider: the request evalhost sends (method, URL and
/// header templates, the JSON body rendered with the vars and prompt) and
/// the output a property-path `transformResponse` takes; a JavaScript
/// transform is refused with its reason, and `--sandbox strict` refuses the
/// provider.
#[test]
fn promptfoo_http_provider_sends_the_rendered_request() {
    use crate::support::{FakeServer, Reply};
    let server = FakeServer::start(vec![Reply::json(
        200,
        serde_json::json!({"choices": [{"message": {"content": "You said: Hello Ada"}}]}),
    )]);
    let project = crate::support::Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        "promptfooconfig.yaml",
        &format!(
            "prompts: ['Hello {{{{name}}}}']\nproviders:\n  - id: {url}/chat?who={{{{name}}}}\n    label: api\n    config:\n      method: POST\n      headers: {{x-key: 'k-{{{{env.PF_TEST_KEY}}}}', x-who: '{{{{name}}}}'}}\n      body: {{input: '{{{{prompt}}}}', n: 3, who: ['{{{{name}}}}']}}\n      transformResponse: json.choices[0].message.content\ntests:\n  - vars: {{name: Ada}}\n    assert: [{{type: equals, value: 'You said: Hello Ada'}}]\n",
            url = server.url
        ),
    );
    let run = |extra: &[&str]| -> crate::support::Run {
        let mut args = vec!["run", "promptfooconfig.yaml", "-o", "out"];
        args.extend_from_slice(extra);
        crate::support::evalhost()
            .current_dir(project.path())
            .env("PF_TEST_KEY", "s3")
            .args(&args)
            .output()
            .unwrap()
            .into()
    };
    let r = run(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!(req.path, "/chat?who=Ada");
    let header = |k: &str| {
        req.headers
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-key").as_deref(), Some("k-s3"));
    assert_eq!(header("x-who").as_deref(), Some("Ada"));
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    let body: serde_json::Value = serde_json::from_str(&req.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"input": "Hello Ada", "n": 3, "who": ["Ada"]})
    );
    let r = run(&["--sandbox", "strict"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    // A transform that is JavaScript, not a path.
    let text = std::fs::read_to_string(project.path().join("promptfooconfig.yaml"))
        .unwrap()
        .replace(
            "json.choices[0].message.content",
            "'json.choices.map(c => c.message.content).join()'",
        );
    project.write("promptfooconfig.yaml", &text);
    let r = run(&[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("is JavaScript beyond a property path"),
        "{}",
        r.stderr
    );
}

/// A promptfoo OpenAI provider's request fields reach the API as promptfoo
/// sends them (`passthrough` merged in); a config key evalhost does not
/// send is refused at its line rather than dropped.
#[test]
fn promptfoo_openai_config_is_sent_or_refused() {
    let server = crate::support::FakeServer::start(vec![crate::support::Reply::json(
        200,
        serde_json::json!({"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}),
    )]);
    let work = tempfile::tempdir().unwrap();
    let config = |extra: &str| {
        format!(
            "prompts: ['{{{{q}}}}']\nproviders:\n  - id: openai:chat:m\n    config:\n      apiBaseUrl: {}/v1\n      top_p: 0.5\n      stop: ['END']\n      tools: [{{type: function, function: {{name: f, parameters: {{type: object}}}}}}]\n      passthrough: {{logprobs: true}}\n{extra}tests:\n  - vars: {{q: hi}}\n    assert: [{{type: finish-reason, value: stop}}]\n",
            server.url
        )
    };
    std::fs::write(work.path().join("promptfooconfig.yaml"), config("")).unwrap();
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(work.path())
        .env("OPENAI_API_KEY", "sk-loopback")
        .args(["run", "promptfooconfig.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let sent: serde_json::Value =
        serde_json::from_str(&server.received.lock().unwrap()[0].body).unwrap();
    assert_eq!(sent["top_p"], 0.5);
    assert_eq!(sent["stop"], serde_json::json!(["END"]));
    assert_eq!(sent["tools"][0]["function"]["name"], "f");
    assert_eq!(sent["logprobs"], true);
    assert_eq!(sent["model"], "m");
    std::fs::write(
        work.path().join("promptfooconfig.yaml"),
        config("      organization: org-1\n"),
    )
    .unwrap();
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(work.path())
        .args(["validate", "promptfooconfig.yaml"])
        .output()
        .unwrap()
        .into();
    assert_ne!(r.code, 0);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains("config.organization") && all.contains("promptfooconfig.yaml:"),
        "{all}"
    );
}

/// A misspelt code type gets its near miss; a `python` assertion without
/// componentize-py gets one error with the command that installs it.
#[test]
fn code_assertion_mistakes_say_what_to_do() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("promptfooconfig.yaml"),
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: a}\n    assert:\n      - {type: javascrpt, value: 'true'}\n      - {type: python, value: 'True'}\n",
    )
    .unwrap();
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(work.path())
        .env(
            "EVALHOST_COMPONENTIZE_PY",
            work.path().join("no-such-componentize-py"),
        )
        .args(["validate", "promptfooconfig.yaml"])
        .output()
        .unwrap()
        .into();
    assert_ne!(r.code, 0);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(all.contains("did you mean `javascript`?"), "{all}");
    assert!(all.contains("pip install componentize-py==0.25.1"), "{all}");
    assert!(!all.contains("unknown assertion type `python`"), "{all}");
    assert!(all.contains("promptfooconfig.yaml:7:"), "{all}");
}

/// AgentV 5's `similar`: the embedding endpoint its
/// `config.embedding_provider` names is asked (OpenAI's `/embeddings`, with
/// the key it gives), and the score is AgentV 5's `(cosine + 1) / 2`.
#[test]
fn agentv5_similar_scores_rescaled_cosine_through_its_embedding_provider() {
    let server = crate::support::FakeServer::start_fn(|req| {
        let body: serde_json::Value = serde_json::from_str(&req.body).unwrap_or_default();
        let text = body["input"].as_str().unwrap_or_default();
        // The output and the value are orthogonal: cosine 0.
        let vector = if text.contains("EXP") {
            [0.0, 1.0]
        } else {
            [1.0, 0.0]
        };
        crate::support::Reply::json(
            200,
            serde_json::json!({"data": [{"embedding": vector}], "usage": {"prompt_tokens": 2}}),
        )
    });
    let project = crate::support::Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        ".agentv/providers.yaml",
        "- id: cli\n  label: agent\n  command: echo answer > {OUTPUT_FILE}\n  cwd: ..\n",
    );
    project.write(
        "evals/suite.yaml",
        &format!(
            r#"providers: [agent]
prompts: ['{{{{ input }}}}']
tests:
  - id: t
    vars: {{input: go}}
    assert:
      - metric: half
        type: similar
        value: EXP text
        threshold: 0.5
        config: {{embedding_provider: {{base_url: "{url}/v1", model: tiny-embed, api_key: "{{{{ env.EMB_KEY }}}}"}}}}
      - metric: strict
        type: similar
        value: EXP text
        config: {{embedding_provider: {{base_url: "{url}/v1", model: tiny-embed}}}}
      - metric: inherited
        type: assert-set
        config: {{embedding_provider: {{base_url: "{url}/v1", model: tiny-embed}}}}
        assert:
          - type: similar
            value: EXP text
            threshold: 0.5
"#,
            url = server.url
        ),
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("EMB_KEY", "sk-embed")
        .args(["run", "evals/suite.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert!(r.code == 0 || r.code == 1, "{}{}", r.stdout, r.stderr);
    let row: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(project.path().join("out/results.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let score = |name: &str| {
        row["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no score {name}: {row}"))
            .clone()
    };
    assert_eq!(score("half")["score"], 0.5, "{row}");
    assert_eq!(score("half")["verdict"], "pass", "{row}");
    assert_eq!(score("strict")["verdict"], "fail", "{row}");
    // A set's `config` reaches its members, as in AgentV 5.
    assert_eq!(score("inherited")["verdict"], "pass", "{row}");
    let received = server.received.lock().unwrap().clone();
    assert!(
        received.iter().all(|r| r.path == "/v1/embeddings"),
        "{:?}",
        received.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    let first: serde_json::Value = serde_json::from_str(&received[0].body).unwrap();
    assert_eq!(first["model"], "tiny-embed");
    assert!(
        received.iter().any(|r| r
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("authorization") && v == "Bearer sk-embed")),
        "the key reaches the endpoint"
    );
    // ... and no file the run wrote.
    for entry in walkdir::WalkDir::new(project.path().join("out")) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let text = String::from_utf8_lossy(&std::fs::read(entry.path()).unwrap()).into_owned();
            assert!(
                !text.contains("sk-embed"),
                "{} holds the key",
                entry.path().display()
            );
        }
    }
}

/// AgentV 5's `llm-rubric` reads a reply in promptfoo's shape with its own
/// rules (AgentV 4's rubric grader would refuse a reply without per-item
/// checks): the reply's score, its pass, and the threshold on top.
#[test]
fn agentv5_llm_rubric_reads_promptfoo_shaped_replies() {
    let project = crate::support::Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        ".agentv/providers.yaml",
        "- id: mock\n  label: canned\n  response: 'Hello Ada.'\n- id: mock\n  label: judge\n  response: '{\"reason\": \"polite enough\", \"pass\": true, \"score\": 0.4}'\n",
    );
    project.write(
        "evals/suite.yaml",
        r#"providers: [canned]
defaults: {grader: judge}
prompts: ['{{ input }}']
tests:
  - id: t
    vars: {input: hi}
    assert:
      - {metric: plain, type: llm-rubric, value: is polite}
      - {metric: gated, type: llm-rubric, value: is polite, threshold: 0.5}
      - {metric: items, type: llm-rubric, value: [is polite, greets by name]}
      - is short
"#,
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .args(["run", "evals/suite.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert!(r.code == 0 || r.code == 1, "{}{}", r.stdout, r.stderr);
    let row: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(project.path().join("out/results.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let scores = row["scores"].as_array().unwrap();
    let by = |name: &str| {
        scores
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {row}"))
    };
    for name in ["plain", "items"] {
        assert_eq!(by(name)["score"], 0.4, "{row}");
        assert_eq!(by(name)["verdict"], "pass", "{row}");
    }
    // The threshold needs the score too.
    assert_eq!(by("gated")["score"], 0.4, "{row}");
    assert_eq!(by("gated")["verdict"], "fail", "{row}");
    // The plain-string criterion is an AgentV 5 llm-rubric too.
    let grouped = scores
        .iter()
        .find(|s| s["type"] == "rubrics" && s["name"] != "items")
        .unwrap_or_else(|| panic!("{row}"));
    assert_eq!(grouped["score"], 0.4, "{row}");
    assert!(row.to_string().contains("polite enough"), "{row}");
}

/// An AgentV 5 provider whose config names `{{ env.NAME }}` with NAME unset:
/// `validate` warns naming the variable (AgentV's never builds providers),
/// a run refuses naming it, and with it set both go on.
#[test]
fn an_agentv5_provider_waiting_for_a_variable_is_a_warning_to_validate_and_an_error_to_run() {
    let project = Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        ".agentv/providers.yaml",
        "- id: azure\n  label: llm\n  config:\n    endpoint: \"{{ env.EVH_TEST_AZURE_ENDPOINT }}\"\n    api_key: k\n    model: gpt\n",
    );
    project.write(
        "evals/suite.eval.yaml",
        "providers: [llm]\nprompts: ['{{ q }}']\ntests:\n  - {id: t, vars: {q: hi}, assert: [{type: contains, value: hi}]}\n",
    );
    let validate: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env_remove("EVH_TEST_AZURE_ENDPOINT")
        .args(["validate", "evals/suite.eval.yaml"])
        .output()
        .unwrap()
        .into();
    assert_eq!(validate.code, 0, "{}{}", validate.stdout, validate.stderr);
    assert!(
        validate.stderr.contains("warning: target `llm`")
            && validate
                .stderr
                .contains("`endpoint` is `{{ env.EVH_TEST_AZURE_ENDPOINT }}` and EVH_TEST_AZURE_ENDPOINT is not set"),
        "{}",
        validate.stderr
    );
    let run: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env_remove("EVH_TEST_AZURE_ENDPOINT")
        .args(["run", "evals/suite.eval.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("error: target `llm`")
            && run.stderr.contains("EVH_TEST_AZURE_ENDPOINT is not set"),
        "{}",
        run.stderr
    );
    let set: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env(
            "EVH_TEST_AZURE_ENDPOINT",
            "https://example.openai.azure.com",
        )
        .args(["validate", "evals/suite.eval.yaml"])
        .output()
        .unwrap()
        .into();
    assert_eq!(set.code, 0, "{}", set.stderr);
    assert!(
        !set.stderr.contains("EVH_TEST_AZURE_ENDPOINT"),
        "{}",
        set.stderr
    );
}

/// AgentV's own next-format suites (`tests/data/agentv5-wild`, its `evals/`,
/// red-team pack and showcase at commit 58f316ca): every one AgentV 5 reads,
/// evalhost reads; the ones it refuses are the ones AgentV 5 refuses too,
/// each for its reason (and two where evalhost is stricter, named).
#[test]
fn agentv_published_next_format_suites_are_read() {
    let data = crate::support::root().join("tests/data/agentv5-wild");
    let work = tempfile::tempdir().unwrap();
    for entry in walkdir::WalkDir::new(&data).min_depth(1) {
        let entry = entry.unwrap();
        let dest = work.path().join(entry.path().strip_prefix(&data).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
    // AgentV reads a suite inside its repository.
    std::fs::create_dir_all(work.path().join(".git")).unwrap();
    let mut suites: Vec<std::path::PathBuf> = walkdir::WalkDir::new(work.path())
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml")
                && !p.components().any(|c| c.as_os_str() == ".agentv")
                && std::fs::read_to_string(p)
                    .unwrap()
                    .lines()
                    .any(|l| l.starts_with("tests:"))
        })
        .collect();
    suites.sort();
    assert!(suites.len() >= 50, "{}", suites.len());
    // AgentV 5 refuses these too (validate or loader), for these reasons.
    let refused_by_agentv = [
        (
            "agent-plugin-review.eval.yaml",
            "`workspace.template` is refused",
        ),
        ("deploy-execute.eval.yaml", "`rubrics`"),
        ("output-correctness.eval.yaml", "`rubrics`"),
        ("skill-invocation.eval.yaml", "`rubrics`"),
        ("skill-selection.eval.yaml", "`rubrics`"),
        ("benchmark.eval.yaml", "`evaluate_options.repeat`"),
    ];
    let mut read = 0;
    let mut unexpected = Vec::new();
    for suite in &suites {
        let r: crate::support::Run = crate::support::evalhost()
            .current_dir(work.path())
            .args(["validate"])
            .arg(suite)
            .output()
            .unwrap()
            .into();
        let name = suite.file_name().unwrap().to_string_lossy().into_owned();
        match refused_by_agentv.iter().find(|(n, _)| *n == name) {
            Some((_, why)) => {
                if r.code == 0 || !r.stderr.contains(why) {
                    unexpected.push(format!("{name}: expected refused for {why}: {}", r.stderr));
                }
            }
            None if r.code == 0 => read += 1,
            None => unexpected.push(format!("{name}: refused: {}", r.stderr)),
        }
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
    assert_eq!(read + refused_by_agentv.len(), suites.len());
}
