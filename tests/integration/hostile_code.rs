//! Code a promptfoo config computes its vars, prompts and filters with
//! (`transformVars`, var files, prompt functions, `nunjucksFilters`) runs
//! while the config is read — in the sandbox, never on the host: under
//! `--sandbox strict` it reads no secret, no file, starts no process and
//! writes nothing, and every attempt is a value the run shows, not a leak.

use std::path::{Path, PathBuf};

use crate::support::Run;

const SECRETS: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-SECRET-OPENAI"),
    ("ANTHROPIC_API_KEY", "sk-ant-SECRET"),
];

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

fn strict(dir: &Path, config: &str, out: &str, python: bool) -> Run {
    let ops = write(
        &dir.join("ops/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: hello}\n",
    );
    let mut cmd = crate::support::evalhost();
    for (k, v) in SECRETS {
        cmd.env(k, v);
    }
    if python {
        cmd.env(
            "EVALHOST_COMPONENTIZE_PY",
            crate::support::componentize_py(),
        );
    }
    cmd.current_dir(dir.join("pr"))
        .args([
            "run",
            config,
            "--sandbox",
            "strict",
            "--targets",
            ops.to_str().unwrap(),
            "-o",
            dir.join(out).to_str().unwrap(),
        ])
        .output()
        .unwrap()
        .into()
}

fn everything(r: &Run, out: &Path) -> String {
    let mut all = format!("{}{}", r.stdout, r.stderr);
    for e in walkdir::WalkDir::new(out)
        .into_iter()
        .filter_map(Result::ok)
    {
        if e.file_type().is_file() {
            all.push_str(&String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()));
        }
    }
    all
}

#[test]
fn javascript_a_config_computes_with_runs_in_the_sandbox() {
    let root = tempfile::tempdir().unwrap();
    let pr = root.path().join("pr");
    std::fs::create_dir_all(pr.join(".git")).unwrap();
    let marker = root.path().join("PWNED");
    let m = marker.display();
    // Each probe answers what it could reach, as text the prompt shows.
    let probe = format!(
        r#"function probe() {{
  const seen = [];
  seen.push('env=' + String(typeof process === 'undefined' ? 'none' : JSON.stringify(process.env)));
  for (const mod of ['fs', 'child_process', 'node:fs', 'http']) {{
    try {{
      const m = require(mod);
      seen.push(mod + '=LOADED');
      if (m.writeFileSync) m.writeFileSync('{m}', 'x');
      if (m.execSync) m.execSync('touch {m}');
    }} catch (e) {{ seen.push(mod + '=refused'); }}
  }}
  seen.push('fetch=' + typeof globalThis.fetch);
  seen.push('now=' + Date.now());
  return seen.join(' ');
}}
"#
    );
    write(
        &pr.join("who.js"),
        &format!(
            "{probe}module.exports = (name, prompt, vars, provider) => ({{ output: 'VAR ' + probe() }});\n"
        ),
    );
    write(
        &pr.join("prompt.js"),
        &format!(
            "{probe}module.exports = ({{ vars }}) => 'PROMPT ' + probe() + ' {{{{who}}}} {{{{t}}}} {{{{ 1 | spy }}}}';\n"
        ),
    );
    write(
        &pr.join("spy.js"),
        &format!("{probe}module.exports = (v) => 'FILTER ' + probe();\n"),
    );
    write(
        &pr.join("transform.js"),
        &format!("{probe}module.exports = (vars) => ({{ t: 'TRANSFORM ' + probe() }});\n"),
    );
    write(
        &pr.join("promptfooconfig.yaml"),
        "prompts: [file://prompt.js]\nproviders: [echo]\nnunjucksFilters: {spy: spy.js}\ntests:\n  - vars: {who: file://who.js}\n    options: {transformVars: file://transform.js}\n    assert: [{type: contains, value: PROMPT}]\n",
    );
    let r = strict(root.path(), "promptfooconfig.yaml", "out", false);
    let out = root.path().join("out");
    let all = everything(&r, &out);
    assert_eq!(r.code, 0, "{all}");
    for (_, secret) in SECRETS {
        assert!(!all.contains(secret), "a secret leaked: {all}");
    }
    assert!(!marker.exists(), "code ran on the host: {all}");
    let rows = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    // Every piece ran, and saw nothing of the machine.
    for part in ["PROMPT ", "VAR ", "FILTER ", "TRANSFORM "] {
        assert!(rows.contains(part), "{part} missing: {rows}");
    }
    assert!(!rows.contains("LOADED"), "{rows}");
    assert!(
        rows.contains("fs=refused") && rows.contains("child_process=refused"),
        "{rows}"
    );
    assert!(rows.contains("env=none"), "{rows}");
    assert!(rows.contains("fetch=undefined"), "{rows}");
    assert!(rows.contains("now=0"), "{rows}");
}

#[test]
fn python_a_config_computes_with_runs_in_the_sandbox() {
    let root = tempfile::tempdir().unwrap();
    let pr = root.path().join("pr");
    std::fs::create_dir_all(pr.join(".git")).unwrap();
    let marker = root.path().join("PWNED");
    let probe = format!(
        r#"def probe():
    import os
    seen = ["env=" + str(sorted(os.environ.keys()))]
    for path in ["/etc/passwd", "secrets.txt"]:
        try:
            open(path).read()
            seen.append(path + "=READ")
        except Exception as e:
            seen.append(path + "=refused")
    try:
        open({marker:?}, "w").write("x")
        seen.append("write=DONE")
    except Exception:
        seen.append("write=refused")
    try:
        import subprocess
        subprocess.run(["touch", {marker:?}])
        seen.append("subprocess=RAN")
    except Exception:
        seen.append("subprocess=refused")
    return " ".join(seen)
"#,
        marker = marker.display().to_string()
    );
    write(&pr.join("secrets.txt"), "sk-SECRET-OPENAI");
    write(
        &pr.join("fact.py"),
        &format!(
            "{probe}\ndef get_var(name, prompt, other):\n    return {{\"output\": \"VAR \" + probe()}}\n"
        ),
    );
    write(
        &pr.join("prompt.py"),
        &format!(
            "{probe}\ndef make(context):\n    return \"PROMPT \" + probe() + \" {{{{fact}}}} {{{{t}}}}\"\n"
        ),
    );
    write(
        &pr.join("transform.py"),
        &format!(
            "{probe}\ndef get_transform(vars, context):\n    return {{\"t\": \"TRANSFORM \" + probe()}}\n"
        ),
    );
    write(
        &pr.join("promptfooconfig.yaml"),
        "prompts: [file://prompt.py:make]\nproviders: [echo]\ntests:\n  - vars: {fact: file://fact.py}\n    options: {transformVars: file://transform.py}\n    assert: [{type: contains, value: PROMPT}]\n",
    );
    let r = strict(root.path(), "promptfooconfig.yaml", "out", true);
    let out = root.path().join("out");
    let all = everything(&r, &out);
    assert_eq!(r.code, 0, "{all}");
    for (_, secret) in SECRETS {
        assert!(!all.contains(secret), "a secret leaked: {all}");
    }
    assert!(!marker.exists(), "code ran on the host: {all}");
    let rows = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    for part in ["PROMPT ", "VAR ", "TRANSFORM "] {
        assert!(rows.contains(part), "{part} missing: {rows}");
    }
    assert!(
        !rows.contains("=READ") && !rows.contains("=DONE") && !rows.contains("=RAN"),
        "{rows}"
    );
    assert!(rows.contains("env=[]"), "{rows}");
}

#[test]
fn code_that_throws_or_returns_nothing_is_said_where_it_is_written() {
    let root = tempfile::tempdir().unwrap();
    let pr = root.path().join("pr");
    std::fs::create_dir_all(pr.join(".git")).unwrap();
    write(
        &pr.join("promptfooconfig.yaml"),
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: a}\n    options:\n      transformVars: |\n        throw new Error('no vars for you');\n  - vars: {q: b}\n    options: {transformVars: '42'}\n",
    );
    let r = strict(root.path(), "promptfooconfig.yaml", "out", false);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("promptfooconfig.yaml:6:"), "{}", r.stderr);
    assert!(
        r.stderr.contains("`transformVars` failed: no vars for you"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("promptfooconfig.yaml:9:"), "{}", r.stderr);
    assert!(
        r.stderr.contains("did not return a valid object"),
        "{}",
        r.stderr
    );
}

/// Under `--sandbox strict` a config sees only its own `env:`: promptfoo's
/// hosted providers cannot take the machine's API keys to an address the
/// config names.
#[test]
fn hosted_providers_under_strict_never_send_the_machines_keys() {
    let root = tempfile::tempdir().unwrap();
    let pr = root.path().join("pr");
    std::fs::create_dir_all(pr.join(".git")).unwrap();
    let server = crate::support::FakeServer::start_fn(|_| {
        crate::support::Reply::json(200, serde_json::json!({"choices": []}))
    });
    write(
        &pr.join("promptfooconfig.yaml"),
        &format!(
            "prompts: ['hi']\nproviders:\n  - id: azure:chat:d\n    config: {{apiBaseUrl: '{url}'}}\n  - id: openrouter:a/b\n    config: {{apiBaseUrl: '{url}/v1'}}\n  - id: google:gemini-2.0-flash\n    config: {{apiBaseUrl: '{url}'}}\ntests:\n  - assert: [{{type: contains, value: hi}}]\n",
            url = server.url
        ),
    );
    let ops = write(
        &root.path().join("ops/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: hello}\n",
    );
    let r: Run = crate::support::evalhost()
        .env("AZURE_API_KEY", "az-SECRET")
        .env("OPENROUTER_API_KEY", "or-SECRET")
        .env("OPENAI_API_KEY", "sk-SECRET-OPENAI")
        .env("GOOGLE_API_KEY", "g-SECRET")
        .current_dir(&pr)
        .args([
            "run",
            "promptfooconfig.yaml",
            "--sandbox",
            "strict",
            "--targets",
            ops.to_str().unwrap(),
            "-o",
            root.path().join("out").to_str().unwrap(),
        ])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    for name in ["azure:chat:d", "openrouter:a/b", "google:gemini-2.0-flash"] {
        assert!(r.stderr.contains(name), "{name}: {}", r.stderr);
    }
    assert!(!format!("{}{}", r.stdout, r.stderr).contains("SECRET"));
    assert!(
        server.received.lock().unwrap().is_empty(),
        "a request was sent"
    );
}
