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
