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
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("this is a promptfoo 0.121 suite"),
        "{}",
        r.stderr
    );
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
