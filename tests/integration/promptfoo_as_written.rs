//! promptfoo configs as their users write them (issue 52): what promptfoo
//! reads, evalhost reads the same way; what it refuses, evalhost refuses
//! at the same key. The scores themselves are checked against recordings
//! of the real promptfoo in `tests/data/promptfoo-conformance`
//! (`bare-prompt-files`, `test-prompts`).

use crate::support::{Project, run_in};

/// A test's `prompts:` naming no prompt is refused, as promptfoo's
/// `validateTestPromptReferences` refuses it, at the test's key, with the
/// prompts there are.
#[test]
fn a_test_naming_a_prompt_that_is_not_there_is_refused_at_its_line() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts:\n  - {id: 'Short: {{q}}', label: short}\n  - {id: 'Long: {{q}}', label: long}\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    prompts: [shrt]\n    assert: [{type: contains, value: hi}]\n",
    );
    let r = run_in(
        project.path(),
        &["run", "promptfooconfig.yaml", "-o", "out"],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(
            "promptfooconfig.yaml:7:5: error: references prompt \"shrt\" which does not exist"
        ) && r.stderr.contains("Available prompts: [long, short]")
            && r.stderr.contains("at `tests[0].prompts`")
            && r.stderr.contains("hint:"),
        "{}",
        r.stderr
    );
}

/// `prompts: [chat.json]` is the file (promptfoo's `maybeFilePath` knows
/// the extension), not the text `chat.json` sent to the model.
#[test]
fn a_bare_json_prompt_file_is_read() {
    let project = Project::with_mock("x");
    project.write(
        "chat.json",
        "[\n  {\"role\": \"user\", \"content\": \"Tell me about {{ topic }}\"}\n]\n",
    );
    project.write(
        "promptfooconfig.yaml",
        "prompts: [chat.json]\nproviders: [echo]\ntests:\n  - vars: {topic: tides}\n    assert: [{type: contains, value: tides}]\n",
    );
    let r = run_in(
        project.path(),
        &["run", "promptfooconfig.yaml", "-o", "out"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let rows = project.rows();
    assert!(
        rows[0]["output"].as_str().unwrap().contains("\"role\""),
        "{}",
        rows[0]
    );
}

/// A config outside a git checkout naming `../prompts/x.txt`: promptfoo
/// reads it, and so does a trusted run; `--sandbox strict` keeps a suite
/// inside its project, refused at the prompt's line. A secret outside is
/// never read.
#[test]
fn a_prompt_file_beside_the_configs_folder_is_read_outside_strict() {
    let project = Project::with_mock("x");
    project.write("prompts/greet.txt", "Greet {{name}} warmly.\n");
    project.write(
        "evals/promptfooconfig.yaml",
        "prompts: [file://../prompts/greet.txt]\nproviders: [echo]\ntests:\n  - vars: {name: Ada}\n    assert: [{type: contains, value: Ada}]\n",
    );
    let dir = project.path().join("evals");
    let r = run_in(&dir, &["run", "promptfooconfig.yaml", "-o", "out"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("out/results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[0]["output"], "Greet Ada warmly.", "{}", rows[0]);

    let r = run_in(
        &dir,
        &[
            "run",
            "promptfooconfig.yaml",
            "-o",
            "out2",
            "--sandbox",
            "strict",
        ],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("promptfooconfig.yaml:1:")
            && r.stderr.contains("outside the suite's project root"),
        "{}",
        r.stderr
    );
    let r = run_in(
        &dir,
        &["validate", "--sandbox", "strict", "promptfooconfig.yaml"],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);

    // Never a secret: another folder's `.env`.
    project.write("prompts/.env", "OPENAI_API_KEY=sk-secret\n");
    project.write(
        "evals/promptfooconfig.yaml",
        "prompts: [file://../prompts/.env]\nproviders: [echo]\ntests:\n  - vars: {name: Ada}\n    assert: [{type: contains, value: Ada}]\n",
    );
    let r = run_in(&dir, &["run", "promptfooconfig.yaml", "-o", "out3"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("sk-secret"), "{}", r.stderr);
    assert!(r.stderr.contains("secrets"), "{}", r.stderr);
}

/// The clock: a config's code reads the wall clock as in Node (the
/// conformance config `clock` checks it against promptfoo); under
/// `--sandbox strict` it is frozen at 1970, said at load and in each row
/// whose code ran without it.
#[test]
fn code_reads_the_clock_except_under_strict_where_it_says_so() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['hi']\nproviders: [echo]\ntests:\n  - assert: [{type: javascript, value: 'new Date().getFullYear() >= 2026'}]\n",
    );
    let r = run_in(
        project.path(),
        &["run", "promptfooconfig.yaml", "-o", "out"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("frozen clock"), "{}", r.stderr);
    let r = run_in(
        project.path(),
        &[
            "run",
            "promptfooconfig.yaml",
            "-o",
            "out2",
            "--sandbox",
            "strict",
        ],
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(
            "under --sandbox strict the suite's JavaScript and Python see a frozen clock"
        ),
        "{}",
        r.stderr
    );
    let row: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(project.path().join("out2/results.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(
        row["scores"][0]["details"]["clock"]
            .as_str()
            .is_some_and(|c| c.contains("1970-01-01")),
        "{row}"
    );
}

/// Node's runtime in a `javascript` assertion: Intl, `toLocaleString`,
/// `Buffer`, `structuredClone` answer as Node answers (the conformance
/// config `javascript-runtime`, recorded with promptfoo); what Boa would
/// format differently from Node — dates, currency/percent/unit numbers —
/// throws a RangeError saying so, warned at load at the assertion's line,
/// never a different string.
#[test]
fn what_boa_formats_differently_from_node_is_refused_loudly() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['x']\nproviders: [echo]\ntests:\n  - assert:\n      - type: javascript\n        value: \"new Intl.NumberFormat('en-US', {style: 'percent'}).format(0.256) === '26%'\"\n      - type: javascript\n        value: \"new Date(0).toLocaleDateString('en-US') === '1/1/1970'\"\n      - type: javascript\n        value: \"(1234.5).toLocaleString() === '1,234.5' && Buffer.from('hi').toString('base64') === 'aGk='\"\n",
    );
    let r = run_in(
        project.path(),
        &["run", "promptfooconfig.yaml", "-o", "out"],
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("promptfooconfig.yaml:6:9: warning: this assertion calls `Intl.NumberFormat` with a currency, percent or unit style")
            && r.stderr.contains("promptfooconfig.yaml:8:9: warning: this assertion calls `toLocaleDateString`"),
        "{}",
        r.stderr
    );
    let rows = project.rows();
    let scores = rows[0]["scores"].as_array().unwrap();
    for s in &scores[..2] {
        assert!(
            s["assertions"][0]["text"]
                .as_str()
                .unwrap()
                .contains("is not formatted as Node formats it by the evalhost sandbox's engine"),
            "{s}"
        );
    }
    assert_eq!(scores[2]["score"], 1.0, "{}", scores[2]);
}
