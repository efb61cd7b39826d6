//! LLM judges as plugins: `rubrics` and `llm-grader` ask the judge through
//! the host's `llm` capability. The judge here is an OpenAI-compatible
//! server on loopback that returns scripted replies and records every
//! request, so each test can check what the plugin sent.

use serde_json::{Value, json};

use crate::support::{FakeServer, Project, Reply, score};

/// A project whose target answers `answer` and whose judge is `server`.
fn judged(server: &FakeServer, answer: &str, suite: &str) -> (Project, tempfile::TempDir) {
    let project = Project::with_mock("unused");
    let targets = format!(
        "targets:\n  - {{name: default, provider: mock, response: {answer:?}, grader_target: judge}}\n  - {{name: judge, provider: openai, base_url: '{}/v1', model: judge-model, api_key: '${{{{ EVALHOST_JUDGE_KEY }}}}', temperature: 0, retry_initial_delay_ms: 10}}\n",
        server.url
    );
    std::fs::write(project.path().join(".evalhost/targets.yaml"), targets).unwrap();
    project.write("EVAL.yaml", suite);
    (project, tempfile::tempdir().unwrap())
}

fn run(
    project: &Project,
    cache: &tempfile::TempDir,
    out: &str,
    extra: &[&str],
) -> crate::support::Run {
    let mut args = vec!["run", "EVAL.yaml", "-o", out];
    args.extend_from_slice(extra);
    crate::support::evalhost()
        .current_dir(project.path())
        .env("EVALHOST_CACHE_DIR", cache.path())
        .env(
            "EVALHOST_COMPILE_CACHE_DIR",
            crate::support::shared_compile_cache(),
        )
        .env("EVALHOST_JUDGE_KEY", "sk-judge-secret")
        .args(&args)
        .output()
        .unwrap()
        .into()
}

fn rows(project: &Project, out: &str) -> Vec<Value> {
    std::fs::read_to_string(project.path().join(out).join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn checklist(items: &[(&str, bool)]) -> Reply {
    let checks: Vec<Value> = items
        .iter()
        .map(|(id, ok)| json!({"id": id, "satisfied": ok, "reasoning": format!("{id} looked at")}))
        .collect();
    Reply::chat(&format!(
        "```json\n{}\n```\nThat is my verdict.",
        json!({"checks": checks, "overall_reasoning": "done"})
    ))
}

const RUBRIC_SUITE: &str = r#"tests:
  - id: capital
    input: What is the capital of France?
    expected_output: Paris
    criteria: Names the capital.
    assertions:
      - type: rubrics
        criteria:
          - {id: names-paris, outcome: Names Paris as the capital, weight: 3, required: false}
          - {id: brief, outcome: Answers in one sentence, weight: 1, required: false}
"#;

#[test]
fn rubrics_send_the_criteria_and_score_the_weighted_checklist() {
    let server = FakeServer::start(vec![checklist(&[("names-paris", true), ("brief", false)])]);
    let (project, cache) = judged(
        &server,
        "Paris is the capital of France, a city of 2 million.",
        RUBRIC_SUITE,
    );
    let r = run(&project, &cache, "out", &[]);
    assert_eq!(r.code, 1, "0.75 < 0.8: {}", r.stderr);
    let row = &rows(&project, "out")[0];
    let s = score(row, "rubrics");
    assert_eq!(s["score"], 0.75);
    assert_eq!(
        s["assertions"][0]["text"],
        "[names-paris] Names Paris as the capital"
    );
    assert_eq!(
        (
            s["assertions"][0]["passed"].as_bool(),
            s["assertions"][1]["passed"].as_bool()
        ),
        (Some(true), Some(false))
    );
    assert_eq!(s["judge"]["calls"], 1);
    assert_eq!(s["judge"]["input_tokens"], 11);
    // What the plugin sent, through the host, to the judge:
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(body["model"], "judge-model");
    let user = body["messages"][1]["content"].as_str().unwrap();
    for part in [
        "[[ ## question ## ]]\nWhat is the capital of France?",
        "[[ ## reference_answer ## ]]\nParis",
        "[[ ## answer ## ]]\nParis is the capital",
        "- [names-paris] (weight: 3): Names Paris as the capital",
        "- [brief]: Answers in one sentence",
    ] {
        assert!(user.contains(part), "{part:?} not in\n{user}");
    }
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(body["response_format"]["json_schema"]["schema"]["properties"]["checks"].is_object());
    assert!(
        requests[0]
            .headers
            .contains(&("authorization".into(), "Bearer sk-judge-secret".into()))
    );
    let results = std::fs::read_to_string(project.path().join("out/results.jsonl")).unwrap();
    assert!(!results.contains("sk-judge-secret"));
}

#[test]
fn a_second_identical_run_makes_no_judge_requests() {
    let server = FakeServer::start(vec![checklist(&[("names-paris", true), ("brief", true)])]);
    let (project, cache) = judged(&server, "Paris.", RUBRIC_SUITE);
    assert_eq!(run(&project, &cache, "first", &[]).code, 0);
    assert_eq!(server.requests().len(), 1);
    assert_eq!(run(&project, &cache, "second", &[]).code, 0);
    assert_eq!(server.requests().len(), 1, "the judge cache answered");
    let s = score(&rows(&project, "second")[0], "rubrics").clone();
    assert_eq!(
        (s["judge"]["calls"].as_u64(), s["judge"]["cached"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        run(&project, &cache, "third", &["--no-judge-cache"]).code,
        0
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn an_unusable_judge_reply_is_a_judge_failure_never_a_pass() {
    let server = FakeServer::start(vec![Reply::chat("I think the answer is pretty good!")]);
    let (project, cache) = judged(&server, "Paris.", RUBRIC_SUITE);
    let r = run(&project, &cache, "out", &[]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let row = &rows(&project, "out")[0];
    let s = score(row, "rubrics");
    assert_eq!(
        (s["failure_class"].as_str(), s["score"].as_f64()),
        (Some("judge"), Some(0.0))
    );
    assert!(
        s["error"]
            .as_str()
            .unwrap()
            .contains("judge reply unusable after 3 attempts and 1 repair"),
        "{s}"
    );
    assert_eq!(
        server.requests().len(),
        4,
        "3 attempts, then one repair request"
    );
    let repair: Value = serde_json::from_str(&server.requests()[3].body).unwrap();
    assert!(
        repair["messages"][3]["content"]
            .as_str()
            .unwrap()
            .contains("could not be used: the reply has no JSON object")
    );
    assert_eq!(row["failure_class"], "judge");
    // A judge that answers an error is a judge failure too.
    let server = FakeServer::start(vec![Reply::json(400, json!({"error": "bad request"}))]);
    let (project, cache) = judged(&server, "Paris.", RUBRIC_SUITE);
    assert_eq!(run(&project, &cache, "out", &[]).code, 3);
    let s = score(&rows(&project, "out")[0], "rubrics").clone();
    assert!(
        s["error"]
            .as_str()
            .unwrap()
            .contains("the judge failed: judge `judge`"),
        "{s}"
    );
}

#[test]
fn llm_grader_uses_the_default_template_clamps_and_is_the_implicit_grader() {
    let server = FakeServer::start(vec![Reply::chat(
        "{\"score\": 1.4, \"assertions\": [{\"text\": \"names Paris\", \"passed\": \"true\", \"evidence\": \"Paris\"}]}",
    )]);
    let suite =
        "tests:\n  - id: implicit\n    input: Capital of France?\n    criteria: Names Paris.\n";
    let (project, cache) = judged(&server, "Paris.", suite);
    let r = run(&project, &cache, "out", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = score(&rows(&project, "out")[0], "llm-grader").clone();
    assert_eq!(
        (s["score"].as_f64(), s["details"]["clamped_from"].as_f64()),
        (Some(1.0), Some(1.4))
    );
    assert_eq!(
        (
            s["assertions"][0]["text"].as_str(),
            s["assertions"][0]["passed"].as_bool()
        ),
        (Some("names Paris"), Some(true))
    );
    let body: Value = serde_json::from_str(&server.requests()[0].body).unwrap();
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("[[ ## criteria ## ]]\nNames Paris.")
            && user.contains("[[ ## answer ## ]]\nParis."),
        "{user}"
    );
}

#[test]
fn a_custom_prompt_file_with_variables_replaces_the_template() {
    let server = FakeServer::start(vec![Reply::chat("{\"score\": 0.9}")]);
    let suite = "tests:\n  - id: custom\n    input: Capital of France?\n    expected_output: Paris\n    assertions:\n      - {type: llm-grader, prompt: file://judge.md, tone: strict}\n";
    let (project, cache) = judged(&server, "Paris.", suite);
    project.write(
        "judge.md",
        "Compare {{ output }} with {{expected_output}}. Unknown {{nope}} stays.\n",
    );
    assert_eq!(run(&project, &cache, "out", &[]).code, 0);
    let body: Value = serde_json::from_str(&server.requests()[0].body).unwrap();
    assert_eq!(
        body["messages"][1]["content"],
        "Compare Paris. with Paris. Unknown {{nope}} stays.\n"
    );
    project.write("judge.md", "No variables here.\n");
    let r = run(&project, &cache, "bad", &[]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("uses neither {{output}} nor {{expected_output}}"),
        "{}",
        r.stderr
    );
}

#[test]
fn judge_samples_report_mean_spread_and_agreement() {
    let server = FakeServer::start(vec![
        checklist(&[("names-paris", true), ("brief", true)]),
        checklist(&[("names-paris", true), ("brief", false)]),
        checklist(&[("names-paris", true), ("brief", true)]),
    ]);
    let suite = RUBRIC_SUITE.replace(
        "      - type: rubrics\n",
        "      - type: rubrics\n        judge_samples: 3\n",
    );
    let (project, cache) = judged(&server, "Paris.", &suite);
    let r = run(&project, &cache, "out", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = score(&rows(&project, "out")[0], "rubrics").clone();
    let samples = &s["details"]["samples"];
    assert_eq!(samples["scores"], json!([1.0, 0.75, 1.0]));
    assert!((s["score"].as_f64().unwrap() - 2.75 / 3.0).abs() < 1e-9);
    assert_eq!(samples["agreement"], 0.5, "brief was split");
    assert_eq!(
        s["assertions"][1]["evidence"],
        "2/3 samples: brief looked at"
    );
    let seeds: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| serde_json::from_str::<Value>(&r.body).unwrap()["seed"].clone())
        .collect();
    assert_eq!(
        seeds,
        [json!(0), json!(100), json!(200)],
        "each sample is its own request"
    );
}

#[test]
fn a_failed_required_criterion_scores_as_in_agentv_and_zeroes_only_on_request() {
    // AgentV's example: weights 5 and 3 (checklist items are required by
    // default), the 3 unmet: the rubric keeps 0.625 and fails its verdict.
    let server =
        FakeServer::start_fn(|_| checklist(&[("names-paris", true), ("cites-source", false)]));
    let suite = "tests:\n  - id: weighted\n    input: q\n    assertions:\n      - type: rubrics\n        criteria:\n          - {id: names-paris, outcome: Names Paris, weight: 5}\n          - {id: cites-source, outcome: Cites a source, weight: 3}\n  - id: strict\n    input: q\n    assertions:\n      - type: rubrics\n        zero_on_required_failure: true\n        criteria:\n          - {id: names-paris, outcome: Names Paris, weight: 5}\n          - {id: cites-source, outcome: Cites a source, weight: 3}\n";
    let (project, cache) = judged(&server, "Paris.", suite);
    assert_eq!(run(&project, &cache, "out", &[]).code, 1);
    let rows = rows(&project, "out");
    let weighted = rows.iter().find(|r| r["test_id"] == "weighted").unwrap();
    let s = score(weighted, "rubrics").clone();
    assert_eq!(s["score"], 0.625);
    assert_eq!(
        s["verdict"], "fail",
        "a failed required item fails the verdict: {s}"
    );
    assert_eq!(s["details"]["failed_required"], json!(["cites-source"]));
    assert_eq!(weighted["score"], 0.625);
    let strict = rows.iter().find(|r| r["test_id"] == "strict").unwrap();
    assert_eq!(score(strict, "rubrics")["score"], 0.0, "{strict}");
}

/// A rubric that scores at least 0.8 with a failed required item still
/// fails its verdict (`details.verdict`), as in AgentV, though the test
/// score keeps the weighted mean.
#[test]
fn a_failed_required_item_fails_the_verdict_above_the_threshold() {
    let server = FakeServer::start_fn(|_| checklist(&[("a", true), ("b", false)]));
    let suite = "tests:\n  - id: t\n    input: q\n    assertions:\n      - type: rubrics\n        criteria:\n          - {id: a, outcome: A, weight: 9, required: false}\n          - {id: b, outcome: B, weight: 1}\n";
    let (project, cache) = judged(&server, "Paris.", suite);
    let r = run(&project, &cache, "out", &[]);
    let row = &rows(&project, "out")[0];
    let s = score(row, "rubrics");
    assert_eq!(s["score"], 0.9);
    assert_eq!(s["verdict"], "fail", "{s}");
    assert_eq!(row["score"], 0.9);
    assert_eq!(
        row["status"], "passed",
        "the test score is the weighted mean: {}",
        r.stderr
    );
}

#[test]
fn the_rubric_example_runs_against_an_openai_compatible_endpoint() {
    // One loopback server plays the model under test and the judge: a
    // request with a grader system prompt gets a checklist satisfying every
    // rubric id it names; anything else gets a support answer.
    let server = FakeServer::start_fn(|request| {
        let body: Value = serde_json::from_str(&request.body).unwrap();
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("expert grader") {
            let user = body["messages"][1]["content"].as_str().unwrap_or_default();
            let ids: Vec<&str> = user
                .lines()
                .filter_map(|l| l.strip_prefix("- [").and_then(|r| r.split(']').next()))
                .collect();
            let checks: Vec<Value> = ids
                .iter()
                .map(|id| json!({"id": id, "satisfied": true, "reasoning": "ok"}))
                .collect();
            Reply::chat(&json!({"checks": checks, "overall_reasoning": "fine"}).to_string())
        } else {
            Reply::chat(
                "Use the Forgot password link; we email you a reset link. Sorry, the 30-day refund window has passed, but we can offer store credit.",
            )
        }
    });
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let run = |dir: &str| -> crate::support::Run {
        crate::support::evalhost()
            .current_dir(crate::support::root())
            .env("EVALHOST_CACHE_DIR", cache.path())
            .env(
                "EVALHOST_COMPILE_CACHE_DIR",
                crate::support::shared_compile_cache(),
            )
            .env("EVALHOST_BASE_URL", format!("{}/v1", server.url))
            .env("EVALHOST_MODEL", "support-model")
            .env("EVALHOST_JUDGE_MODEL", "judge-model")
            .env("EVALHOST_API_KEY", "sk-example")
            .args([
                "run",
                "examples/rubrics/EVAL.yaml",
                "-o",
                out.path().join(dir).to_str().unwrap(),
            ])
            .output()
            .unwrap()
            .into()
    };
    let r = run("first");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let requests = server.requests().len();
    assert_eq!(requests, 4, "two answers, two judgements");
    let r = run("second");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        server.requests().len(),
        requests + 2,
        "the second run asks the model again but not the judge"
    );
}

/// Issue 17.1: a conversation turn's string criteria go to the judge as one
/// `turn-rubrics` (ids `criterion-<n>`, not required), with the turn's
/// history; the judge's checklist scores the turn.
#[test]
fn a_conversation_turns_criteria_go_to_the_judge_with_the_history() {
    let server =
        FakeServer::start_fn(|_| checklist(&[("criterion-1", true), ("criterion-2", false)]));
    let suite = "tests:\n  - id: chat\n    mode: conversation\n    input: [{role: system, content: You are a tutor.}]\n    turns:\n      - input: What is 15% of 200?\n        assertions:\n          - Correctly calculates 30\n          - Shows the steps\n";
    let (project, cache) = judged(&server, "It is 30.", suite);
    let r = run(&project, &cache, "out", &[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let row = &rows(&project, "out")[0];
    let turn = &row["scores"][0];
    assert_eq!(turn["name"], "turn-1");
    assert_eq!(turn["scores"][0]["name"], "turn-rubrics");
    assert_eq!(
        turn["score"], 0.5,
        "1 of 2 criteria, neither required: {turn}"
    );
    assert_eq!(row["score"], 0.5);
    let asked = &server.requests()[0].body;
    assert!(
        asked.contains("criterion-1") && asked.contains("Correctly calculates 30"),
        "{asked}"
    );
    assert!(
        asked.contains("What is 15% of 200?") && asked.contains("It is 30."),
        "{asked}"
    );
}

/// A target that answers with a file block: `generated/report.xlsx`
/// (binary) in the directory it runs in.
fn file_answering(server: &FakeServer, suite: &str) -> (Project, tempfile::TempDir) {
    let project = Project::with_mock("unused");
    let targets = format!(
        "targets:\n  - {{name: default, provider: cli, command: 'sh ./agent.sh {{OUTPUT_FILE}}', cwd: '..', grader_target: judge}}\n  - {{name: judge, provider: openai, base_url: '{}/v1', model: judge-model, api_key: '${{{{ EVALHOST_JUDGE_KEY }}}}', temperature: 0, retry_initial_delay_ms: 10}}\n",
        server.url
    );
    std::fs::write(project.path().join(".evalhost/targets.yaml"), targets).unwrap();
    project.write(
        "agent.sh",
        "mkdir -p generated\nprintf '\\000\\237\\222' > generated/report.xlsx\nprintf 'col\\n1\\n' > generated/notes.md\n\
         printf '%s' '{\"output\": [{\"role\": \"assistant\", \"content\": [{\"type\": \"text\", \"text\": \"Report attached.\"}, \
         {\"type\": \"file\", \"media_type\": \"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet\", \"path\": \"generated/report.xlsx\"}, \
         {\"type\": \"file\", \"media_type\": \"text/markdown\", \"path\": \"generated/notes.md\"}]}]}' > \"$1\"\n",
    );
    project.write(
        "scripts/xlsx-to-csv.sh",
        "payload=$(cat)\ncase \"$payload\" in *'\"path\":'*report.xlsx*) ;; *) echo \"no path in $payload\" >&2; exit 3;; esac\necho 'spreadsheet: revenue,total'\necho 'Q1,42'\n",
    );
    project.write("EVAL.yaml", suite);
    (project, tempfile::tempdir().unwrap())
}

const PREPROCESSED_SUITE: &str = "preprocessors:\n  - type: xlsx\n    command: [sh, /scripts/xlsx-to-csv.sh]\ntests:\n  - id: spreadsheet\n    input: Generate the spreadsheet report\n    assertions:\n      - Output contains the revenue rows\n";

#[test]
fn preprocessors_turn_file_output_into_text_before_the_judge_sees_it() {
    let server = FakeServer::start_fn(|r| checklist(&[("rubric-1", r.body.contains("Q1,42"))]));
    let (project, cache) = file_answering(&server, PREPROCESSED_SUITE);
    let r = run(&project, &cache, "out", &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let asked = &server.requests()[0].body;
    for part in [
        "Report attached.",
        "[[ file: generated/report.xlsx ]]",
        "spreadsheet: revenue,total",
        "[[ file: generated/notes.md ]]",
    ] {
        assert!(
            asked.contains(&part.replace('"', "\\\"")),
            "{part} not in {asked}"
        );
    }
    let row = &rows(&project, "out")[0];
    assert_eq!(row["score"], 1.0, "{row}");
}

#[test]
fn without_a_preprocessor_a_binary_file_reaches_the_judge_as_a_warning() {
    let server = FakeServer::start_fn(|r| checklist(&[("rubric-1", r.body.contains("Q1,42"))]));
    let suite = PREPROCESSED_SUITE.replace("type: xlsx", "type: pdf");
    let (project, cache) = file_answering(&server, &suite);
    let r = run(&project, &cache, "out", &[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let asked = &server.requests()[0].body;
    assert!(
        asked.contains("[file preprocessing warning] generated/report.xlsx")
            && asked.contains("configure a preprocessor"),
        "{asked}"
    );
    assert_eq!(rows(&project, "out")[0]["score"], 0.0);
}

#[test]
fn a_failing_preprocessor_is_a_warning_the_judge_sees_and_strict_refuses_it() {
    let server = FakeServer::start_fn(|r| checklist(&[("rubric-1", r.body.contains("Q1,42"))]));
    let (project, cache) = file_answering(&server, PREPROCESSED_SUITE);
    project.write(
        "scripts/xlsx-to-csv.sh",
        "echo 'cannot parse the workbook' >&2\nexit 4\n",
    );
    let r = run(&project, &cache, "out", &[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let asked = &server.requests()[0].body;
    assert!(asked.contains("cannot parse the workbook"), "{asked}");

    let targets = project.path().join(".evalhost/targets.yaml");
    let r = run(
        &project,
        &cache,
        "strict",
        &[
            "--sandbox",
            "strict",
            "--targets",
            targets.to_str().unwrap(),
        ],
    );
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let row = &rows(&project, "strict")[0];
    let score = &row["scores"][0];
    assert_eq!(
        (&score["verdict"], &score["score"]),
        (&json!("fail"), &json!(0.0)),
        "{row}"
    );
    assert!(
        score["error"]
            .as_str()
            .is_some_and(|e| e.contains("`--sandbox strict` refuses the preprocessor command `sh ")),
        "{row}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "the judge is not asked under strict"
    );
}

const AGGREGATED_SUITE: &str = r#"tests:
  - id: capital
    input: What is the capital of France?
    assertions:
      - name: gate
        type: composite
        assertions:
          - {name: names-paris, type: contains, value: Paris}
          - {name: names-lyon, type: contains, value: Lyon}
        aggregator:
          type: code-grader
          path: sh ./aggregate.sh
"#;

#[test]
fn a_code_grader_aggregator_reads_the_members_results_and_its_verdict_stands() {
    let server = FakeServer::start(vec![]);
    let (project, cache) = judged(&server, "Paris.", AGGREGATED_SUITE);
    // Passes on its own say, below 0.8, as AgentV lets it; the members'
    // results arrive as AgentV's `{"results": {<name>: {score, verdict,
    // assertions}}}`.
    project.write(
        "aggregate.sh",
        "payload=$(cat)\ncase \"$payload\" in\n  *'\"results\"'*'\"names-lyon\"'*'\"verdict\": \"fail\"'*) echo '{\"score\": 0.5, \"verdict\": \"pass\", \"assertions\": [{\"text\": \"lyon is optional\", \"passed\": true}]}';;\n  *) echo \"unexpected: $payload\" >&2; exit 2;;\nesac\n",
    );
    let r = run(&project, &cache, "out", &[]);
    // The test's score is still 0.5, under its 0.8 threshold (as AgentV).
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let row = &rows(&project, "out")[0];
    assert_eq!(row["score"], 0.5);
    let gate = &row["scores"][0];
    assert_eq!(
        (&gate["score"], &gate["verdict"]),
        (&json!(0.5), &json!("pass")),
        "{gate}"
    );
    assert_eq!(gate["assertions"][0]["text"], "lyon is optional");
    assert_eq!(
        gate["scores"].as_array().map(Vec::len),
        Some(2),
        "members kept: {gate}"
    );

    // A failing aggregator fails the composite with its reason (AgentV: 0,
    // "Code aggregator failed").
    project.write("aggregate.sh", "echo 'no results today' >&2\nexit 3\n");
    let r = run(&project, &cache, "failing", &[]);
    assert_eq!(r.code, 3, "an execution error: {}{}", r.stdout, r.stderr);
    let gate = &rows(&project, "failing")[0]["scores"][0];
    assert_eq!(
        (&gate["score"], &gate["verdict"]),
        (&json!(0.0), &json!("fail")),
        "{gate}"
    );
    assert!(
        gate["error"].as_str().is_some_and(|e| e.contains("Code aggregator failed") && e.contains("no results today")),
        "{gate}"
    );

    // Under --sandbox strict the command does not run.
    let r = run(
        &project,
        &cache,
        "strict",
        &[
            "--sandbox",
            "strict",
            "--targets",
            project
                .path()
                .join(".evalhost/targets.yaml")
                .to_str()
                .unwrap(),
        ],
    );
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let gate = &rows(&project, "strict")[0]["scores"][0];
    assert_eq!(gate["verdict"], "fail", "{gate}");
    assert!(
        gate["error"]
            .as_str()
            .is_some_and(|e| e.contains("--sandbox strict")),
        "{gate}"
    );
}

#[test]
fn an_llm_grader_aggregator_asks_the_judge_with_the_members_results() {
    let server = FakeServer::start_fn(|_| {
        Reply::chat(
            "{\"score\": 0.9, \"assertions\": [{\"text\": \"paris named, lyon irrelevant\", \"passed\": true}]}",
        )
    });
    let suite = AGGREGATED_SUITE.replace(
        "type: code-grader\n          path: sh ./aggregate.sh",
        "type: llm-grader\n          prompt: \"Weigh these: {{EVALUATOR_RESULTS_JSON}} Reply with JSON.\"",
    );
    let (project, cache) = judged(&server, "Paris.", &suite);
    let r = run(&project, &cache, "out", &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let gate = &rows(&project, "out")[0]["scores"][0];
    assert_eq!(
        (&gate["score"], &gate["verdict"]),
        (&json!(0.9), &json!("pass")),
        "{gate}"
    );
    let asked = &server.requests()[0].body;
    assert!(asked.contains("Weigh these: {"), "{asked}");
    assert!(
        asked.contains("names-lyon") && asked.contains("Reply with JSON."),
        "{asked}"
    );
    assert!(!asked.contains("{{EVALUATOR_RESULTS_JSON}}"), "{asked}");
}

#[test]
fn an_llm_grader_prompt_script_computes_the_whole_prompt() {
    let server = FakeServer::start_fn(|r| {
        let ok = r.body.contains("PROMPT FROM SCRIPT") && r.body.contains("strict-mode-on");
        Reply::chat(&format!("{{\"score\": {}}}", if ok { 1 } else { 0 }))
    });
    let suite = "tests:\n  - id: t\n    input: Explain async\n    criteria: Explains promises\n    assertions:\n      - name: custom\n        type: llm-grader\n        prompt:\n          command: [sh, ../prompts/grader.sh]\n          config: {mode: strict-mode-on}\n";
    let (project, cache) = judged(&server, "Promises resolve later.", suite);
    std::fs::create_dir_all(project.path().join("sub")).unwrap();
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    std::fs::rename(
        project.path().join("EVAL.yaml"),
        project.path().join("sub/EVAL.yaml"),
    )
    .unwrap();
    // Runs in its own directory; the case arrives on stdin.
    project.write(
        "prompts/grader.sh",
        "test -f ./grader.sh || { echo 'not in its directory' >&2; exit 5; }\npayload=$(cat)\necho 'PROMPT FROM SCRIPT'\nprintf '%s\\n' \"$payload\" | grep -o 'strict-mode-on' | head -1\nprintf '%s\\n' \"$payload\" | grep -q '\"answer\": \"Promises resolve later.\"' && echo 'answer seen'\n",
    );
    let r = crate::support::evalhost()
        .current_dir(project.path())
        .env("EVALHOST_CACHE_DIR", cache.path())
        .env(
            "EVALHOST_COMPILE_CACHE_DIR",
            crate::support::shared_compile_cache(),
        )
        .env("EVALHOST_JUDGE_KEY", "k")
        .args(["run", "sub/EVAL.yaml", "-o", "out"])
        .output()
        .unwrap();
    let r: crate::support::Run = r.into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let asked = &server.requests()[0].body;
    assert!(asked.contains("answer seen"), "{asked}");
    assert!(
        !asked.contains("Explains promises"),
        "the script's prompt replaces the default template: {asked}"
    );

    // A script that fails fails the grader, with its reason.
    project.write("prompts/grader.sh", "echo 'template broke' >&2\nexit 1\n");
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("EVALHOST_CACHE_DIR", cache.path())
        .env(
            "EVALHOST_COMPILE_CACHE_DIR",
            crate::support::shared_compile_cache(),
        )
        .env("EVALHOST_JUDGE_KEY", "k")
        .args(["run", "sub/EVAL.yaml", "-o", "failing"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let score = &rows(&project, "failing")[0]["scores"][0];
    assert_eq!(score["verdict"], "fail");
    assert!(
        score["error"].as_str().is_some_and(
            |e| e.contains("Prompt template execution failed") && e.contains("template broke")
        ),
        "{score}"
    );
}

/// A grader script that talks HTTP with bash alone (no curl in CI).
const PROXY_CLIENT: &str = r#"
call() { # method path body [token]
  port=${AGENTV_TARGET_PROXY_URL##*:}
  exec 3<>/dev/tcp/127.0.0.1/$port
  printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' "$1" "$2" "${4-$AGENTV_TARGET_PROXY_TOKEN}" ${#3} "$3" >&3
  cat <&3
  exec 3<&-
}
"#;

#[test]
fn a_code_grader_with_target_calls_the_judge_through_the_loopback_proxy() {
    let server = FakeServer::start_fn(|r| {
        Reply::chat(if r.body.contains("capital of France") {
            "yes, Paris"
        } else {
            "no"
        })
    });
    let suite = "tests:\n  - id: t\n    input: What is the capital of France?\n    assertions:\n      - name: asks-judge\n        type: code-grader\n        command: [bash, ./grader.sh]\n        target: {max_calls: 2}\n";
    let (project, cache) = judged(&server, "Paris.", suite);
    project.write(
        "grader.sh",
        &format!(
            "{PROXY_CLIENT}\ncat > /dev/null\n\
             first=$(call POST /invoke '{{\"question\": \"Is Paris the capital of France?\"}}')\n\
             openai=$(call POST /v1/chat/completions '{{\"model\": \"x\", \"messages\": [{{\"role\": \"user\", \"content\": \"capital of France?\"}}]}}')\n\
             third=$(call POST /invoke '{{\"question\": \"One more?\"}}')\n\
             info=$(call GET /info '')\n\
             stranger=$(call GET /info '' wrong-token)\n\
             leaked=$(env | grep -c sk-judge-secret)\n\
             ok() {{ case \"$1\" in *\"$2\"*) echo true;; *) echo false;; esac; }}\n\
             printf '{{\"assertions\": [{{\"text\": \"invoke\", \"passed\": %s}}, {{\"text\": \"openai\", \"passed\": %s}}, {{\"text\": \"max_calls\", \"passed\": %s}}, {{\"text\": \"info\", \"passed\": %s}}, {{\"text\": \"token\", \"passed\": %s}}, {{\"text\": \"no key: %s\", \"passed\": %s}}]}}' \
               $(ok \"$first\" '\"rawText\":\"yes, Paris\"') $(ok \"$openai\" '\"content\":\"yes, Paris\"') $(ok \"$third\" '429') \
               $(ok \"$info\" '\"maxCalls\":2') $(ok \"$stranger\" '401 Unauthorized') \"$leaked\" $( [ \"$leaked\" = 0 ] && echo true || echo false)\n"
        ),
    );
    let r = run(&project, &cache, "out", &[]);
    let row = &rows(&project, "out")[0];
    let score = &row["scores"][0];
    assert_eq!(r.code, 0, "{score}\n{}{}", r.stdout, r.stderr);
    assert_eq!(score["score"], 1.0, "{score}");
    // Two calls reached the judge (the third was over max_calls), and they
    // are the assertion's judge usage.
    assert_eq!(server.requests().len(), 2);
    assert_eq!(score["judge"]["calls"], 2, "{score}");
    assert!(
        server.requests()[0]
            .body
            .contains("Is Paris the capital of France?")
    );

    // Under --sandbox strict the command, and so the proxy, is refused.
    let targets = project.path().join(".evalhost/targets.yaml");
    let r = run(
        &project,
        &cache,
        "strict",
        &[
            "--sandbox",
            "strict",
            "--targets",
            targets.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let score = &rows(&project, "strict")[0]["scores"][0];
    assert!(
        score["error"]
            .as_str()
            .is_some_and(|e| e.contains("--sandbox strict")),
        "{score}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_code_grader_target_must_be_true_or_max_calls() {
    let server = FakeServer::start(vec![]);
    let suite = "tests:\n  - id: t\n    input: hi\n    assertions:\n      - {type: code-grader, command: [bash, ./g.sh], target: judge}\n";
    let (project, cache) = judged(&server, "hi", suite);
    project.write("g.sh", "echo '{\"score\": 1}'\n");
    let r = run(&project, &cache, "out", &[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("`target` must be true or {max_calls: n}"),
        "{}",
        r.stderr
    );
}

/// The scripted judge of the prompt-shape measurement: it reads the
/// criterion's cities ("Names A and B.") and the answer's line
/// ("Visited: …") wherever the prompt puts them, and scores the share of
/// the cities the answer names — the same decision whatever the wording
/// around them, as a careful judge would make.
fn city_judge(request: &crate::support::Received) -> Reply {
    let body: Value = serde_json::from_str(&request.body).unwrap_or_default();
    let text: String = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let wanted: Vec<&str> = text
        .split_once("Names ")
        .map(|(_, rest)| rest.split(['.', '\n']).next().unwrap_or_default())
        .unwrap_or_default()
        .split(" and ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let answer = text
        .lines()
        .find(|l| l.contains("Visited:"))
        .unwrap_or_default();
    let found = wanted.iter().filter(|c| answer.contains(*c)).count();
    let score = if wanted.is_empty() || answer.is_empty() {
        0.0
    } else {
        found as f64 / wanted.len() as f64
    };
    Reply::chat(
        &json!({
            "score": score,
            "pass": score >= 1.0,
            "reason": format!("{found} of {} named", wanted.len()),
            "assertions": wanted.iter().map(|c| json!({"text": c, "passed": answer.contains(c)})).collect::<Vec<_>>(),
        })
        .to_string(),
    )
}

/// The rows of tests `c0` … `c{n-1}`, in that order.
fn in_case_order(rows: &[Value], n: usize) -> Vec<&Value> {
    (0..n)
        .map(|i| {
            rows.iter()
                .find(|r| r["test_id"] == format!("c{i}"))
                .unwrap_or_else(|| panic!("no row for c{i}"))
        })
        .collect()
}

/// Each case scored as expected with evalhost's prompt, and the same with
/// the user's.
fn same_scores(cases: &[(&str, f64)], evalhosts: &[f64], users: &[f64]) {
    for (i, (criteria, expected)) in cases.iter().enumerate() {
        assert!(
            (evalhosts[i] - expected).abs() < 1e-9,
            "{criteria}: {evalhosts:?}"
        );
        assert!(
            (users[i] - evalhosts[i]).abs() < 1e-9,
            "{criteria}: {users:?} vs {evalhosts:?}"
        );
    }
}

/// Issue 37.6: evalhost's judge prompts are its own words; a user who
/// wants their tool's exact wording points the grader at their own prompt
/// file (`prompt:` for AgentV's llm-grader, `rubricPrompt` for promptfoo's
/// llm-rubric). Measured with a scripted judge on five criteria: evalhost's
/// prompt and the user's file lead to the same score on every case, in both
/// dialects, and the judge saw the criterion and the answer in both.
#[test]
fn a_users_own_judge_prompt_and_evalhosts_lead_to_the_same_scores() {
    let cases = [
        ("Names Paris.", 1.0),
        ("Names Rome.", 0.0),
        ("Names Paris and Rome.", 0.5),
        ("Names Berlin and Paris.", 1.0),
        ("Names Madrid and Berlin and Oslo.", 1.0 / 3.0),
    ];
    let server = FakeServer::start_fn(city_judge);
    // AgentV: the implicit llm-grader (evalhost's template) and the same
    // tests with the user's prompt file.
    let mut implicit = String::from("tests:\n");
    let mut own = String::from("tests:\n");
    for (i, (criteria, _)) in cases.iter().enumerate() {
        implicit.push_str(&format!(
            "  - {{id: c{i}, input: Where did you go?, criteria: '{criteria}'}}\n"
        ));
        own.push_str(&format!(
            "  - {{id: c{i}, input: Where did you go?, criteria: '{criteria}', assertions: [{{type: llm-grader, prompt: file://my-judge.md}}]}}\n"
        ));
    }
    let (project, cache) = judged(&server, "Visited: Paris, Berlin.", &implicit);
    project.write(
        "my-judge.md",
        "You grade answers for our team, in our words.\n\nThe requirement: {{criteria}}\nThe answer under review:\n{{output}}\n\nReply with JSON: {\"score\": 0 to 1, \"assertions\": [{\"text\": ..., \"passed\": ...}]}\n",
    );
    let r = run(&project, &cache, "template", &["--no-judge-cache"]);
    assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    project.write("EVAL.yaml", &own);
    let r = run(&project, &cache, "own", &["--no-judge-cache"]);
    assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    let scores = |out: &str| -> Vec<f64> {
        in_case_order(&rows(&project, out), cases.len())
            .into_iter()
            .map(|row| score(row, "llm-grader")["score"].as_f64().unwrap())
            .collect()
    };
    let (template, mine) = (scores("template"), scores("own"));
    same_scores(&cases, &template, &mine);
    let bodies: Vec<String> = server.requests().iter().map(|r| r.body.clone()).collect();
    assert_eq!(bodies.len(), 2 * cases.len());
    assert!(
        bodies.iter().filter(|b| b.contains("in our words")).count() == cases.len(),
        "the user's file was sent for each case"
    );

    // promptfoo: llm-rubric with evalhost's rubric prompt, then with the
    // user's `rubricPrompt` file.
    let pf = tempfile::tempdir().unwrap();
    let config = |rubric_prompt: &str| {
        let mut c = format!(
            "prompts: ['Visited: {{{{places}}}}.']\nproviders: [echo]\ndefaultTest:\n  options:\n    provider: {{id: 'openai:chat:judge-model', config: {{apiBaseUrl: '{}/v1'}}}}\n{rubric_prompt}tests:\n",
            server.url
        );
        for (i, (criteria, _)) in cases.iter().enumerate() {
            c.push_str(&format!(
                "  - description: c{i}\n    vars: {{places: 'Paris, Berlin'}}\n    assert: [{{type: llm-rubric, value: '{criteria}'}}]\n"
            ));
        }
        c
    };
    std::fs::write(
        pf.path().join("rubric.txt"),
        "Our rubric: {{rubric}}\nThe output:\n{{output}}\nAnswer as JSON with reason, pass and score.\n",
    )
    .unwrap();
    let pf_scores = |rubric_prompt: &str, out: &str| -> Vec<f64> {
        std::fs::write(
            pf.path().join("promptfooconfig.yaml"),
            config(rubric_prompt),
        )
        .unwrap();
        let r: crate::support::Run = crate::support::evalhost()
            .current_dir(pf.path())
            .env("OPENAI_API_KEY", "sk-judge")
            .env("EVALHOST_CACHE_DIR", cache.path())
            .args(["run", "promptfooconfig.yaml", "-o", out, "--no-judge-cache"])
            .output()
            .unwrap()
            .into();
        assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
        let rows: Vec<Value> = std::fs::read_to_string(pf.path().join(out).join("results.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .collect();
        in_case_order(&rows, cases.len())
            .into_iter()
            .map(|row| row["scores"][0]["score"].as_f64().unwrap())
            .collect()
    };
    let theirs = pf_scores("", "pf-template");
    let own = pf_scores("    rubricPrompt: file://rubric.txt\n", "pf-own");
    same_scores(&cases, &theirs, &own);
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.body.contains("Our rubric:"))
            .count(),
        cases.len()
    );
}

/// Code review B2 (b): under `--isolate` the preprocessor's sandbox did not
/// hold the case's workspace, so the file it was to convert did not exist
/// inside, and the judge graded the answer without it (a warning line in
/// its prompt, no error anywhere). Now the preprocessor reads the
/// workspace and the file, and the judge sees the converted text.
#[test]
fn an_isolated_preprocessor_reads_the_file_in_the_cases_workspace() {
    if !crate::isolation::bwrap_works() {
        return;
    }
    let server = FakeServer::start_fn(|r| checklist(&[("rubric-1", r.body.contains("Q1,42"))]));
    let suite = format!("workspace:\n  template: ./tpl\n{}", PREPROCESSED_SUITE);
    let (project, cache) = file_answering(&server, &suite);
    project.write("tpl/README", "workspace\n");
    let agent = project.path().join("agent.sh").display().to_string();
    let targets = format!(
        "targets:\n  - {{name: default, provider: cli, command: 'sh {agent} {{OUTPUT_FILE}}', grader_target: judge}}\n  - {{name: judge, provider: openai, base_url: '{}/v1', model: judge-model, api_key: '${{{{ EVALHOST_JUDGE_KEY }}}}', temperature: 0, retry_initial_delay_ms: 10}}\n",
        server.url
    );
    std::fs::write(project.path().join(".evalhost/targets.yaml"), targets).unwrap();
    // The preprocessor reads the file it is given, as a real converter does.
    project.write(
        "scripts/xlsx-to-csv.sh",
        "python3 -c 'import json, sys; open(json.load(sys.stdin)[\"path\"], \"rb\").read()' || exit 3\necho 'spreadsheet: revenue,total'\necho 'Q1,42'\n",
    );
    let r = run(&project, &cache, "out", &["--isolate"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let asked = &server.requests()[0].body;
    assert!(asked.contains("spreadsheet: revenue,total"), "{asked}");
    assert!(!asked.contains("file preprocessing warning"), "{asked}");
}

/// Second red-team pass, finding 6: a FIFO the target made and named in its
/// answer hung the preprocessor (and evalhost, reading it without one) for
/// the whole 600 s command limit, past the test's `timeout_ms`. Now only a
/// regular file is read or handed on: the judge is told why, at once.
#[test]
fn a_fifo_named_in_an_answer_is_refused_not_read() {
    let server = FakeServer::start_fn(|r| checklist(&[("rubric-1", r.body.contains("Q1,42"))]));
    let (project, cache) = file_answering(&server, PREPROCESSED_SUITE);
    project.write(
        "agent.sh",
        "mkdir -p generated\nrm -f generated/report.xlsx\nmkfifo generated/report.xlsx\n\
         printf '%s' '{\"output\": [{\"role\": \"assistant\", \"content\": [{\"type\": \"text\", \"text\": \"Report attached.\"}, \
         {\"type\": \"file\", \"media_type\": \"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet\", \"path\": \"generated/report.xlsx\"}]}]}' > \"$1\"\n",
    );
    let mut child = crate::support::evalhost()
        .current_dir(project.path())
        .env("EVALHOST_CACHE_DIR", cache.path())
        .env(
            "EVALHOST_COMPILE_CACHE_DIR",
            crate::support::shared_compile_cache(),
        )
        .env("EVALHOST_JUDGE_KEY", "sk-judge-secret")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("evalhost waited on the FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let asked = &server.requests()[0].body;
    assert!(asked.contains("not a regular file"), "{asked}");
}
