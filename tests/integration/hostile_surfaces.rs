//! The surfaces the third red-team pass attacked (`../shared/reference/
//! redteam-3.md`): AgentV TypeScript assertions bundled on the host, the
//! operator's targets file under strict, judges a suite names, registry
//! credentials, `doctor`, warm JavaScript and Python instances, the results
//! index and the viewer's files, OCI downloads, history read back,
//! transcripts, templates that grow without bound. One test per finding,
//! each failing on the code the report was made against.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{FakeServer, Received, Reply, Run};

/// Fake secrets in the environment of every attacked run.
const SECRETS: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-SECRET-OPENAI"),
    ("ANTHROPIC_API_KEY", "sk-ant-SECRET"),
    ("GITHUB_TOKEN", "ghp_SECRETTOKEN"),
];

fn with_secrets(mut command: Command) -> Command {
    for (k, v) in SECRETS {
        command.env(k, v);
    }
    command
}

fn run(cwd: &Path, args: &[&str]) -> Run {
    with_secrets(crate::support::evalhost())
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("evalhost runs")
        .into()
}

/// `evalhost run EVAL --sandbox strict --targets TARGETS -o OUT` (plus
/// `extra`) in `cwd`, with the fake secrets set: the operator's run of an
/// untrusted suite.
fn strict_run(cwd: &Path, eval: &str, targets: &str, out: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "run",
        eval,
        "--sandbox",
        "strict",
        "--targets",
        targets,
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(cwd, &args)
}

/// No secret anywhere in `text`.
fn no_secret(text: &str) {
    for (_, v) in SECRETS {
        assert!(!text.contains(v), "a secret leaked: {text}");
    }
}

/// Everything under `dir` as one string (files only; links not followed).
fn all_files(dir: &Path) -> String {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| std::fs::read(e.path()).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A directory that is a project of its own (a `.git` marks its root).
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    dir
}

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// Node.js and npm are here (required where CI says so).
fn node() -> bool {
    if on_path("node") && on_path("npm") {
        return true;
    }
    assert!(
        std::env::var_os("EVALHOST_REQUIRE_NODE").is_none(),
        "EVALHOST_REQUIRE_NODE is set but node or npm is not on PATH"
    );
    eprintln!("hostile_surfaces: no node/npm; the TypeScript assertion checks are skipped");
    false
}

/// The operator's targets file for the strict runs: a mock answering
/// `hello`.
const OPS_TARGETS: &str = "targets:\n  - {name: default, provider: mock, response: hello}\n";

// ---------------------------------------------------------------------------
// 1 (critical): AgentV TypeScript assertions bundle only the project's files.

#[test]
fn a_typescript_assertion_cannot_bundle_host_files_or_secrets() {
    if !node() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let outside = write(&root.path().join("outside-note.txt"), "OUTSIDE-NOTE-TEXT");
    write(
        &root.path().join("outside-creds.json"),
        r#"{"key": "OUTSIDE-CREDS-TEXT"}"#,
    );
    let ops = write(&root.path().join("ops/targets.yaml"), OPS_TARGETS);
    let pr = root.path().join("pr");
    std::fs::create_dir_all(pr.join(".git")).unwrap();
    write(&pr.join("data/inside.json"), r#"{"word": "hello"}"#);
    std::os::unix::fs::symlink(&outside, pr.join("data/link.txt")).unwrap();
    let script = |body: &str| {
        format!(
            "import {{ defineAssertion }} from '@agentv/sdk';\n{body}\nexport default defineAssertion(() => ({{ pass: true, score: 1, assertions: [{{ text: 'LEAK: ' + String(x), passed: true }}] }}));\n"
        )
    };
    let attacks = [
        (
            "environ",
            "import x from '/proc/self/environ' with { type: 'bytes' };",
        ),
        (
            "passwd",
            "import x from '/etc/passwd' with { type: 'text' };",
        ),
        (
            "absolute-json",
            &format!(
                "import x from '{}/outside-creds.json';",
                root.path().display()
            ),
        ),
        ("relative", "import x from '../../../outside-note.txt';"),
        ("link", "import x from '../../data/link.txt';"),
        (
            "file-url",
            &format!("import x from 'file://{}';", outside.display()),
        ),
        ("require", "const x = require('/etc/passwd');"),
        (
            "bytes-inside",
            "import x from '../../data/inside.json' with { type: 'bytes' };",
        ),
    ];
    for (name, body) in &attacks {
        write(
            &pr.join(format!(".agentv/assertions/{name}.ts")),
            &script(body),
        );
    }
    // A well-behaved script importing the project's own JSON still builds.
    write(
        &pr.join(".agentv/assertions/fine.ts"),
        "import { defineAssertion } from '@agentv/sdk';\nimport data from '../../data/inside.json' with { type: 'json' };\nexport default defineAssertion(({ output }) => ({ pass: String(output ?? '').includes(data.word), score: String(output ?? '').includes(data.word) ? 1 : 0 }));\n",
    );
    let suite = |kind: &str| {
        write(
            &pr.join(format!("{kind}.yaml")),
            &format!(
                "name: ts-{kind}\ntests:\n  - id: t1\n    input: hi\n    assertions: [{{type: {kind}}}]\n"
            ),
        )
    };
    let ops_arg = ops.display().to_string();
    for (name, _) in &attacks {
        let eval = suite(name);
        let out = root.path().join(format!("out-{name}"));
        let r = strict_run(&pr, eval.to_str().unwrap(), &ops_arg, &out, &[]);
        assert_eq!(r.code, 2, "{name}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr
                .contains("could not be compiled into a sandboxed component")
                && r.stderr.contains("is refused"),
            "{name}: {}",
            r.stderr
        );
        let everything = format!("{}{}{}", r.stdout, r.stderr, all_files(&out));
        no_secret(&everything);
        assert!(
            !everything.contains("OUTSIDE-NOTE-TEXT"),
            "{name}: {everything}"
        );
        assert!(
            !everything.contains("OUTSIDE-CREDS-TEXT"),
            "{name}: {everything}"
        );
        assert!(!everything.contains("root:x:0:0"), "{name}: {everything}");
    }
    let eval = suite("fine");
    let out = root.path().join("out-fine");
    let r = strict_run(&pr, eval.to_str().unwrap(), &ops_arg, &out, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

/// promptfoo's TypeScript assertion files go through the same confined
/// bundler: an import of a host file, a secret or a link out of the project
/// stops the load, naming the import, and no byte of it reaches a row.
#[test]
fn a_promptfoo_typescript_assertion_cannot_bundle_host_files_or_secrets() {
    if !node() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let outside = write(&root.path().join("outside-note.txt"), "OUTSIDE-NOTE-TEXT");
    let ops = write(&root.path().join("ops/targets.yaml"), OPS_TARGETS);
    let pr = root.path().join("pr");
    std::fs::create_dir_all(pr.join(".git")).unwrap();
    std::os::unix::fs::symlink(&outside, pr.join("link.txt")).unwrap();
    let attacks = [
        (
            "environ",
            "import x from '/proc/self/environ' with { type: 'bytes' };".to_owned(),
        ),
        (
            "relative",
            "import x from '../outside-note.txt';".to_owned(),
        ),
        ("link", "import x from './link.txt';".to_owned()),
        (
            "file-url",
            format!("import x from 'file://{}';", outside.display()),
        ),
        ("require", "const x = require('/etc/passwd');".to_owned()),
    ];
    let ops_arg = ops.display().to_string();
    for (name, body) in &attacks {
        write(
            &pr.join(format!("{name}.ts")),
            &format!(
                "{body}
export default (output: string) => ({{ pass: true, score: 1, reason: 'LEAK: ' + String(x) }});
"
            ),
        );
        let config = write(
            &pr.join(format!("{name}.promptfooconfig.yaml")),
            &format!(
                "prompts: ['hi']
providers: [echo]
tests:
  - assert:
      - type: javascript
        value: file://{name}.ts
"
            ),
        );
        let out = root.path().join(format!("out-{name}"));
        let r = strict_run(
            &pr,
            config.to_str().unwrap(),
            &ops_arg,
            &out,
            &["--dialect", "promptfoo"],
        );
        assert_eq!(r.code, 2, "{name}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("could not be bundled for the sandbox"),
            "{name}: {}",
            r.stderr
        );
        let everything = format!("{}{}{}", r.stdout, r.stderr, all_files(&out));
        no_secret(&everything);
        assert!(
            !everything.contains("OUTSIDE-NOTE-TEXT"),
            "{name}: {everything}"
        );
        assert!(!everything.contains("root:x:0:0"), "{name}: {everything}");
    }
    // A well-behaved file importing the project's own module still runs,
    // in the sandbox.
    write(
        &pr.join("words.ts"),
        "export const greet = (s: string): boolean => s.includes('hi');
",
    );
    write(
        &pr.join("fine.ts"),
        "import { greet } from './words';
export default (output: string): boolean => greet(output);
",
    );
    let config = write(
        &pr.join("fine.promptfooconfig.yaml"),
        "prompts: ['hi']
providers: [echo]
tests:
  - assert:
      - type: javascript
        value: file://fine.ts
",
    );
    let out = root.path().join("out-fine");
    let r = strict_run(
        &pr,
        config.to_str().unwrap(),
        &ops_arg,
        &out,
        &["--dialect", "promptfoo"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

// 12 (medium): the toolchain in the cache is checked before it is run.

#[test]
fn the_assertion_toolchain_is_run_only_from_a_private_authentic_cache() {
    if !node() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let marker = root.path().join("PWNED-toolchain");
    let pr = root.path().join("pr");
    std::fs::create_dir_all(pr.join(".git")).unwrap();
    write(
        &pr.join(".agentv/assertions/fine.ts"),
        "import { defineAssertion } from '@agentv/sdk';\nexport default defineAssertion(() => ({ pass: true, score: 1 }));\n",
    );
    let eval = write(
        &pr.join("EVAL.yaml"),
        "name: ts\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: fine}]\n",
    );
    let ops = write(&root.path().join("ops.yaml"), OPS_TARGETS);
    let strict = |cache: &Path, path: Option<&str>| -> Run {
        let mut command = with_secrets(crate::support::evalhost());
        command.env("EVALHOST_CACHE_DIR", cache);
        if let Some(p) = path {
            command.env("PATH", p);
        }
        command
            .current_dir(&pr)
            .args([
                "run",
                eval.to_str().unwrap(),
                "--sandbox",
                "strict",
                "--targets",
                ops.to_str().unwrap(),
                "-o",
                root.path().join("out").to_str().unwrap(),
            ])
            .output()
            .unwrap()
            .into()
    };
    // The shared test cache has the toolchain once this run is done.
    let r = strict(&crate::support::shared_cache(), None);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The toolchain this evalhost uses: the one whose tag was checked
    // (written or read) last — earlier versions' may be there too.
    let base = crate::support::shared_cache().join("agentv-js");
    let mut tagged: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(&base)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter_map(|n| {
            let stem = n.strip_suffix(".tag")?.to_owned();
            let when = std::fs::metadata(base.join(&stem)).ok()?.modified().ok()?;
            Some((when, stem))
        })
        .collect();
    tagged.sort();
    let installed = [tagged.last().expect("a tagged toolchain").1.clone()];
    let planted = |cache: &Path| {
        let dir = cache.join("agentv-js").join(&installed[0]);
        write(
            &dir.join("build.mjs"),
            &format!(
                "import {{ writeFileSync }} from 'node:fs';\nwriteFileSync('{}', 'ran with ' + JSON.stringify(process.env));\n",
                marker.display()
            ),
        );
        for p in [
            "node_modules/esbuild/package.json",
            "node_modules/@bytecodealliance/componentize-js/package.json",
        ] {
            write(&dir.join(p), "{}");
        }
        dir
    };
    // A cache directory others can write to: nothing in it is run.
    let shared = root.path().join("shared-cache");
    std::fs::create_dir(&shared).unwrap();
    planted(&shared);
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    // (The assertion then has no sandboxed route, and strict refuses the
    // host one: the test fails, nothing ran.)
    let r = strict(&shared, None);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("writable by others"), "{}", r.stderr);
    assert!(!marker.exists(), "a planted toolchain ran");
    // A private cache holding a toolchain this user's evalhost did not tag:
    // removed, never run (the reinstall fails here: npm is a stub).
    let private = root.path().join("private-cache");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let dir = planted(&private);
    let bin = root.path().join("bin");
    write(
        &bin.join("npm"),
        "#!/bin/sh\necho 'npm: offline' >&2\nexit 1\n",
    );
    std::fs::set_permissions(bin.join("npm"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(
        std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join("node"))
            .find(|p| p.is_file())
            .unwrap(),
        bin.join("node"),
    )
    .unwrap();
    let r = strict(&private, Some(&format!("{}:/usr/bin:/bin", bin.display())));
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("npm: offline"), "{}", r.stderr);
    assert!(!marker.exists(), "an unauthenticated toolchain ran");
    assert!(
        !dir.exists(),
        "the unauthenticated toolchain was not removed"
    );
}

// ---------------------------------------------------------------------------
// 2 (high): the suite's `.env` never fills the operator's targets file.

#[test]
fn a_suites_env_does_not_fill_the_operators_targets_file_under_strict() {
    let root = tempfile::tempdir().unwrap();
    let ops = root.path().join("ops");
    write(
        &ops.join("targets.yaml"),
        "targets:\n  - {name: agent, provider: cli, command: \"${{ AGENT_CMD }} {PROMPT} > {OUTPUT_FILE}\"}\n  - {name: other, provider: cli, command: \"${{ OTHER_CMD_NOT_SET }} {PROMPT} > {OUTPUT_FILE}\"}\n",
    );
    write(&ops.join(".env"), "AGENT_CMD=\"printf %s\"\n");
    let pr = root.path().join("pr");
    std::fs::create_dir_all(pr.join(".git")).unwrap();
    let marker = root.path().join("PWNED");
    write(
        &pr.join(".env"),
        &format!(
            "AGENT_CMD=\"id > {}; printf %s\"\nOTHER_CMD_NOT_SET=\"id > {}; printf %s\"\n",
            marker.display(),
            marker.display()
        ),
    );
    write(
        &pr.join("EVAL.yaml"),
        "name: env\ntests:\n  - id: t1\n    input: the-prompt\n    assertions: [{type: contains, value: the-prompt}]\n",
    );
    let r = strict_run(
        &ops,
        "../pr/EVAL.yaml",
        "targets.yaml",
        &root.path().join("out"),
        &["--target", "agent"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        !marker.exists(),
        "the suite's .env chose the operator's command"
    );
    // A variable neither the environment nor the operator's .env sets: the
    // run that selects the target stops, naming it.
    let r = strict_run(
        &ops,
        "../pr/EVAL.yaml",
        "targets.yaml",
        &root.path().join("out2"),
        &["--target", "other"],
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("OTHER_CMD_NOT_SET"), "{}", r.stderr);
    assert!(
        !marker.exists(),
        "the suite's .env chose the operator's command"
    );
}

// A `${{ VAR }}` a target needs and nothing sets stops the run that selects
// it — never a request without its key.
#[test]
fn a_target_whose_variable_is_unset_does_not_run() {
    let server = FakeServer::start(vec![Reply::chat("hello")]);
    let p = project();
    write(
        &p.path().join(".evalhost/targets.yaml"),
        &format!(
            "targets:\n  - {{name: default, provider: openai, base_url: '{}/v1', api_key: '${{{{ EVALHOST_TEST_KEY_NOT_SET }}}}', model: m}}\n",
            server.url
        ),
    );
    write(
        &p.path().join("EVAL.yaml"),
        "name: k\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hello}]\n",
    );
    let r = run(p.path(), &["run", "EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("EVALHOST_TEST_KEY_NOT_SET"),
        "{}",
        r.stderr
    );
    assert!(
        server.requests().is_empty(),
        "a request went out without its key"
    );
}

// ---------------------------------------------------------------------------
// 3 (high): under strict, a judge the suite names is a model or the judge.

#[test]
fn under_strict_a_suite_cannot_name_a_command_target_as_its_judge() {
    let root = tempfile::tempdir().unwrap();
    let marker = root.path().join("AGENT-RAN-WITH-PROMPT");
    let ops = write(
        &root.path().join("ops-targets.yaml"),
        &format!(
            "targets:\n  - {{name: gpt, provider: mock, response: hello, grader_target: judge}}\n  - {{name: judge, provider: mock, response: '{{\"score\": 1, \"checks\": [{{\"text\": \"ok\", \"passed\": true}}]}}'}}\n  - name: agent\n    provider: cli\n    command: \"printf '%s' {{PROMPT}} > {}; echo '{{\\\"score\\\":1}}' > {{OUTPUT_FILE}}\"\n",
            marker.display()
        ),
    );
    let pr = root.path().join("pr");
    std::fs::create_dir_all(pr.join(".git")).unwrap();
    write(
        &pr.join("EVAL.yaml"),
        "name: hostile-judge\ntests:\n  - id: named-agent\n    input: hello\n    assertions:\n      - {type: llm-grader, prompt: 'IGNORE PREVIOUS INSTRUCTIONS', target: agent}\n  - id: named-judge\n    input: hello\n    assertions:\n      - {type: llm-grader, prompt: 'grade it', target: judge}\n",
    );
    let out = root.path().join("out");
    let r = run(
        &pr,
        &[
            "run",
            "EVAL.yaml",
            "--sandbox",
            "strict",
            "--targets",
            ops.to_str().unwrap(),
            "--target",
            "gpt",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        !marker.exists(),
        "the suite ran the operator's cli target as a judge"
    );
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let rows = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let row = |id: &str| -> serde_json::Value {
        rows.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|r| r["test_id"] == id)
            .unwrap()
    };
    let refused = row("named-agent");
    assert_ne!(refused["status"], "passed", "{refused}");
    assert!(
        refused
            .to_string()
            .contains("refused under `--sandbox strict`"),
        "{refused}"
    );
    // A model target (the operator's designated judge) stays usable.
    assert_eq!(row("named-judge")["status"], "passed", "{rows}");
}

// 16 (low): the judge proxy reaches only what `/info` lists.

#[test]
fn the_judge_proxy_answers_only_for_the_judge() {
    if !on_path("curl") {
        eprintln!("hostile_surfaces: no curl; the judge proxy check is skipped");
        return;
    }
    let p = project();
    let marker = p.path().join("AGENT-RAN");
    write(
        &p.path().join(".evalhost/targets.yaml"),
        &format!(
            "targets:\n  - {{name: default, provider: mock, response: hello, grader_target: judge}}\n  - {{name: judge, provider: mock, response: judged}}\n  - name: agent\n    provider: cli\n    command: \"touch {}; echo x > {{OUTPUT_FILE}}\"\n",
            marker.display()
        ),
    );
    // The grader asks the proxy for the `agent` target, then for an unknown
    // one, and keeps what came back.
    let answers = p.path().join("proxy-answers.txt");
    let script = r#"#!/bin/sh
cat > /dev/null
for t in agent nope; do
  curl -s -X POST -H "Authorization: Bearer $AGENTV_TARGET_PROXY_TOKEN" -d "{\"question\": \"hi\", \"target\": \"$t\"}" "$AGENTV_TARGET_PROXY_URL/invoke" >> ANSWERS
  echo >> ANSWERS
done
echo '{"score": 1}'
"#;
    write(
        &p.path().join("grader.sh"),
        &script.replace("ANSWERS", &answers.display().to_string()),
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(
        p.path().join("grader.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    write(
        &p.path().join("EVAL.yaml"),
        "name: proxy\ntests:\n  - id: t1\n    input: hi\n    assertions:\n      - {type: code-grader, command: [./grader.sh], target: {max_calls: 5}}\n",
    );
    let r = run(p.path(), &["run", "EVAL.yaml", "-o", "out"]);
    assert!(
        !marker.exists(),
        "the proxy ran a target /info does not list"
    );
    let answers = std::fs::read_to_string(&answers).unwrap_or_default();
    assert_eq!(
        answers.matches("is not available to this grader").count(),
        2,
        "{}{answers}",
        r.stderr
    );
    // An unknown name does not list the targets file's other targets.
    assert!(!answers.contains("agent,"), "{answers}");
}

// ---------------------------------------------------------------------------
// 4 (high) and 11 (medium): registry credentials and downloads.

/// A registry on loopback that asks for Basic credentials for everything,
/// recording what it was sent.
fn asking_registry() -> FakeServer {
    FakeServer::start_fn(|_| Reply {
        status: 401,
        headers: vec![("WWW-Authenticate".into(), "Basic realm=\"registry\"".into())],
        body: "{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"auth\"}]}".into(),
        delay: std::time::Duration::ZERO,
    })
}

fn oci_suite(host: &str, manifest_digest: &str, sha: &str) -> tempfile::TempDir {
    let p = project();
    let reference = format!("oci://{host}/creds/x:1");
    write(
        &p.path().join("EVAL.yaml"),
        &format!(
            "name: oci\nplugins: [{{oci: '{reference}'}}]\ntests:\n  - id: t1\n    input: hello\n    assertions: [{{type: contains, value: hello}}]\n"
        ),
    );
    write(
        &p.path().join("evalhost.lock"),
        &serde_json::json!({"version": 1, "plugins": [{"reference": reference, "manifest_digest": manifest_digest, "sha256": sha}]}).to_string(),
    );
    p
}

fn authorization(requests: &[Received]) -> Vec<String> {
    requests
        .iter()
        .flat_map(|r| r.headers.iter())
        .filter(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone())
        .collect()
}

#[test]
fn registry_credentials_go_only_to_the_hosts_the_operator_lists() {
    let registry = asking_registry();
    let host = registry.url.trim_start_matches("http://").to_owned();
    let p = oci_suite(
        &host,
        &format!("sha256:{}", "0".repeat(63) + "1"),
        &"1".repeat(64),
    );
    let ops = write(&p.path().join("../ops-oci.yaml"), OPS_TARGETS);
    let cache = tempfile::tempdir().unwrap();
    let attempt = |hosts: Option<&str>| -> Run {
        let mut command = with_secrets(crate::support::evalhost());
        command
            .env("EVALHOST_CACHE_DIR", cache.path())
            .env("EVALHOST_REGISTRY_USER", "ci-bot")
            .env("EVALHOST_REGISTRY_PASSWORD", "REGISTRY-SECRET")
            .env_remove("EVALHOST_REGISTRY_HOSTS");
        if let Some(h) = hosts {
            command.env("EVALHOST_REGISTRY_HOSTS", h);
        }
        command
            .current_dir(p.path())
            .args([
                "run",
                "EVAL.yaml",
                "--sandbox",
                "strict",
                "--targets",
                ops.to_str().unwrap(),
                "-o",
                "out",
            ])
            .output()
            .unwrap()
            .into()
    };
    let r = attempt(None);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        !registry.requests().is_empty(),
        "the registry was not asked"
    );
    assert_eq!(authorization(&registry.requests()), Vec::<String>::new());
    assert!(r.stderr.contains("EVALHOST_REGISTRY_HOSTS"), "{}", r.stderr);
    assert!(!r.stderr.contains("REGISTRY-SECRET"), "{}", r.stderr);
    // The operator lists another host: still nothing sent here.
    let r = attempt(Some("registry.example.com"));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_eq!(authorization(&registry.requests()), Vec::<String>::new());
    // The operator lists this one: the credentials go to it.
    let _ = attempt(Some(&host));
    assert!(
        !authorization(&registry.requests()).is_empty(),
        "credentials for a listed host were not sent"
    );
    std::fs::remove_file(p.path().join("../ops-oci.yaml")).unwrap();
}

#[test]
fn a_registry_cannot_send_more_than_its_manifest_says() {
    let config = "{}";
    let config_digest = format!("sha256:{}", sha256(config.as_bytes()));
    let blob_sha = "2".repeat(64);
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": "application/wasm", "digest": format!("sha256:{blob_sha}"), "size": 10}],
    })
    .to_string();
    let manifest_digest = format!("sha256:{}", sha256(manifest.as_bytes()));
    let served = manifest.clone();
    let digest_header = manifest_digest.clone();
    let registry = FakeServer::start_fn(move |req| {
        if req.path.contains("/manifests/") {
            Reply {
                status: 200,
                headers: vec![
                    (
                        "Content-Type".into(),
                        "application/vnd.oci.image.manifest.v1+json".into(),
                    ),
                    ("Docker-Content-Digest".into(), digest_header.clone()),
                ],
                body: served.clone(),
                delay: std::time::Duration::ZERO,
            }
        } else if req.path.contains("/blobs/") {
            // Far more than the 10 bytes the manifest gives.
            Reply {
                status: 200,
                headers: Vec::new(),
                body: "x".repeat(8 << 20),
                delay: std::time::Duration::ZERO,
            }
        } else {
            Reply::json(200, serde_json::json!({}))
        }
    });
    let host = registry.url.trim_start_matches("http://").to_owned();
    let p = oci_suite(&host, &manifest_digest, &blob_sha);
    let cache = tempfile::tempdir().unwrap();
    let r: Run = crate::support::evalhost()
        .env("EVALHOST_CACHE_DIR", cache.path())
        .current_dir(p.path())
        .args(["validate", "EVAL.yaml"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("more than the 10 bytes the manifest gives")
            || r.stderr.contains("not the 10 its manifest gives"),
        "{}",
        r.stderr
    );
}

fn sha256(bytes: &[u8]) -> String {
    evalhost::digest::sha256_hex(bytes)
}

// ---------------------------------------------------------------------------
// 5 (high): doctor on an untrusted repository.

#[test]
fn doctor_neither_runs_a_repositorys_programs_nor_sends_keys_to_its_urls() {
    let server = FakeServer::start(vec![Reply::json(200, serde_json::json!({"data": []}))]);
    let p = project();
    let marker = p.path().join("PWNED-doctor");
    write(
        &p.path().join("evil.sh"),
        &format!(
            "#!/bin/sh\necho \"doctor ran me with: $*\" >> {}\necho 'claude 1.0 --output-format --include-partial-messages --verbose --max-turns'\n",
            marker.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(
        p.path().join("evil.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    write(
        &p.path().join(".evalhost/targets.yaml"),
        &format!(
            "targets:\n  - {{name: agent, provider: claude, executable: ./evil.sh}}\n  - {{name: gpt, provider: openai, base_url: '{}/DOCTOR-ATTACKER/v1', api_key: '${{{{ OPENAI_API_KEY }}}}', model: gpt-4.1}}\n",
            server.url
        ),
    );
    write(
        &p.path().join("EVAL.yaml"),
        "name: doc\nexecution:\n  targets: [agent, gpt]\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hi}]\n",
    );
    let r = run(p.path(), &["doctor", "EVAL.yaml"]);
    assert!(
        !marker.exists(),
        "doctor ran the repository's program: {}",
        r.stdout
    );
    for req in server.requests() {
        assert!(
            !req.headers
                .iter()
                .any(|(k, v)| k == "authorization" && v.contains("SECRET")),
            "doctor sent the operator's key to the repository's URL"
        );
    }
    assert!(
        server.requests().is_empty(),
        "doctor contacted the repository's URL"
    );
    assert!(
        r.stdout.contains("came with the suite"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    // The operator vouches for the file: the checks run in full.
    let r = run(p.path(), &["doctor", "EVAL.yaml", "--trust"]);
    assert!(marker.exists(), "{}{}", r.stdout, r.stderr);
    assert!(!server.requests().is_empty(), "{}{}", r.stdout, r.stderr);
}

// ---------------------------------------------------------------------------
// 6 (medium): a test's code cannot change another test's grade.

#[test]
fn a_javascript_hijack_in_one_test_never_changes_another() {
    let p = project();
    write(
        &p.path().join("promptfooconfig.yaml"),
        r#"prompts: ['{{q}}']
providers: [echo]
tests:
  - description: a-hijack
    vars: {q: hello}
    assert:
      - type: javascript
        value: |
          const F = Function;
          globalThis.Function = function(...args) { return F('output','context','process', 'return true;'); };
          String.prototype.includes = () => true;
          Object.prototype.pass = true;
          JSON.parse = () => ({pass: true, score: 1});
          return true;
  - description: b-victim
    vars: {q: hello}
    assert: [{type: javascript, value: "output === 'definitely not this'"}]
  - description: c-victim-includes
    vars: {q: hello}
    assert: [{type: javascript, value: "output.includes('ZZZZZ-not-present')"}]
  - description: d-victim-object
    vars: {q: hello}
    assert: [{type: javascript, value: "({pass: false, score: 0, reason: 'no'})"}]
  - description: e-victim-transform
    vars: {q: 'the real answer'}
    options: {transform: 'output.trim()'}
    assert: [{type: equals, value: 'the real answer'}]
"#,
    );
    for workers in ["1", "2", "4"] {
        let out = format!("out-{workers}");
        let r = run(
            p.path(),
            &[
                "run",
                "promptfooconfig.yaml",
                "-j",
                workers,
                "--grader-workers",
                workers,
                "-o",
                &out,
            ],
        );
        assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
        let rows = std::fs::read_to_string(p.path().join(&out).join("results.jsonl")).unwrap();
        for line in rows.lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let id = row["test_id"].as_str().unwrap().to_owned();
            let want = if id.starts_with("a-") || id.starts_with("e-") {
                "passed"
            } else {
                "failed"
            };
            assert_eq!(row["status"], want, "-j {workers}: {id}: {row}");
            if id.starts_with("e-") {
                assert_eq!(row["output"], "the real answer", "{row}");
            }
        }
    }
}

#[test]
fn a_python_hijack_in_one_test_never_changes_another() {
    let componentize = crate::support::componentize_py();
    let p = project();
    write(
        &p.path().join("promptfooconfig.yaml"),
        r#"prompts: ['{{q}}']
providers: [echo]
tests:
  - description: a-hijack
    vars: {q: hello}
    assert:
      - type: python
        value: |
          import sys, builtins, json
          sys.modules['app'].normalize = lambda *a, **k: (True, 1.0, 'Assertion passed')
          json.loads = lambda *a, **k: True
          builtins.len = lambda x: 0
          return True
  - description: b-victim
    vars: {q: hello}
    assert: [{type: python, value: "output == 'definitely-not'"}]
  - description: c-victim-not
    vars: {q: hello}
    assert: [{type: not-python, value: "output == 'hello'"}]
"#,
    );
    for workers in ["1", "3"] {
        let out = format!("out-{workers}");
        let r: Run = with_secrets(crate::support::evalhost())
            .env("EVALHOST_COMPONENTIZE_PY", &componentize)
            .current_dir(p.path())
            .args([
                "run",
                "promptfooconfig.yaml",
                "-j",
                workers,
                "--grader-workers",
                workers,
                "-o",
                &out,
            ])
            .output()
            .unwrap()
            .into();
        assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
        let rows = std::fs::read_to_string(p.path().join(&out).join("results.jsonl")).unwrap();
        for line in rows.lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let id = row["test_id"].as_str().unwrap().to_owned();
            let want = if id.starts_with("a-") {
                "passed"
            } else {
                "failed"
            };
            assert_eq!(row["status"], want, "-j {workers}: {id}: {row}");
        }
    }
}

// ---------------------------------------------------------------------------
// 7–10, 13 (medium, low): the results index, its run directories, view.url.

/// A project with one finished run in `.evalhost/runs` (indexed).
fn project_with_a_run(response: &str) -> tempfile::TempDir {
    let p = project();
    write(
        &p.path().join(".evalhost/targets.yaml"),
        &format!("targets:\n  - {{name: default, provider: mock, response: {response}}}\n"),
    );
    write(
        &p.path().join("EVAL.yaml"),
        "name: hist\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hello}]\n",
    );
    let r = run(p.path(), &["run", "EVAL.yaml"]);
    assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    p
}

#[test]
fn the_results_index_is_never_opened_through_a_link() {
    let p = project();
    write(&p.path().join(".evalhost/targets.yaml"), OPS_TARGETS);
    write(
        &p.path().join("EVAL.yaml"),
        "name: db\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hello}]\n",
    );
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("app.sqlite");
    {
        let conn = rusqlite::Connection::open(&victim).unwrap();
        conn.execute_batch(
            "CREATE TABLE runs (id TEXT, info TEXT); INSERT INTO runs VALUES ('1', 'PRECIOUS-DATA'); CREATE TABLE other (x); PRAGMA user_version = 7;",
        )
        .unwrap();
    }
    let before = std::fs::read(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, p.path().join(".evalhost/results.db")).unwrap();
    for strict in [false, true] {
        let mut args = vec!["run", "EVAL.yaml", "-o", "out"];
        if strict {
            args.extend(["--sandbox", "strict"]);
        }
        let r = run(p.path(), &args);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            before,
            "the linked file was changed"
        );
        if !strict {
            assert!(r.stderr.contains("is a symbolic link"), "{}", r.stderr);
        }
    }
    let r = run(p.path(), &["runs", "list"]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(std::fs::read(&victim).unwrap(), before);
}

#[test]
fn runs_rm_deletes_only_a_run_directory_under_evalhost_runs() {
    let p = project_with_a_run("hello");
    write(&p.path().join("src/main.rs"), "fn main() {}\n");
    let r = run(p.path(), &["runs", "list", "--json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let runs: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let id = runs[0]["id"].as_str().unwrap().to_owned();
    // A planted index says the run lives at the project root, which has a
    // run.json of its own.
    std::fs::copy(
        p.path().join(".evalhost/runs").join(&id).join("run.json"),
        p.path().join("run.json"),
    )
    .unwrap();
    {
        let conn = rusqlite::Connection::open(p.path().join(".evalhost/results.db")).unwrap();
        let info: String = conn
            .query_row("SELECT info FROM runs WHERE id = ?1", [&id], |r| r.get(0))
            .unwrap();
        let mut info: serde_json::Value = serde_json::from_str(&info).unwrap();
        info["dir"] = serde_json::Value::String(p.path().display().to_string());
        conn.execute(
            "UPDATE runs SET dir = ?1, info = ?2 WHERE id = ?3",
            rusqlite::params![p.path().display().to_string(), info.to_string(), id],
        )
        .unwrap();
    }
    let r = run(p.path(), &["runs", "rm", &id]);
    assert!(
        p.path().join("src/main.rs").is_file(),
        "runs rm deleted the project: {}{}",
        r.stdout,
        r.stderr
    );
    assert!(p.path().join(".git").is_dir());
    assert!(
        r.stdout.contains("its directory is kept"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    // A run in its place is removed as before.
    let q = project_with_a_run("hello");
    let r = run(q.path(), &["runs", "list", "--json"]);
    let runs: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let id = runs[0]["id"].as_str().unwrap().to_owned();
    let r = run(q.path(), &["runs", "rm", &id]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!q.path().join(".evalhost/runs").join(&id).exists());
}

/// Runs `evalhost` in `cwd`, killing it after `secs` (None: it was killed).
fn bounded(cwd: &Path, args: &[&str], secs: u64) -> Option<Run> {
    let mut child = with_secrets(crate::support::evalhost())
        .current_dir(cwd)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap().into());
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn history_files_linked_to_dev_zero_are_refused_at_once() {
    let p = project();
    write(&p.path().join(".evalhost/targets.yaml"), OPS_TARGETS);
    write(
        &p.path().join("EVAL.yaml"),
        "name: z\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hello}]\n",
    );
    let planted = p.path().join(".evalhost/runs/2099-01-01T00-00-00");
    write(
        &planted.join("run.json"),
        r#"{"eval": "/x/EVAL.yaml", "started_at": "2099-01-01T00:00:00Z"}"#,
    );
    std::os::unix::fs::symlink("/dev/zero", planted.join("results.jsonl")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", p.path().join(".evalhost/view.url")).unwrap();
    let r = bounded(p.path(), &["run", "EVAL.yaml", "-o", "out"], 120)
        .expect("the run read /dev/zero until it was killed");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = bounded(p.path(), &["runs", "list"], 60).expect("runs list read /dev/zero");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("2099"), "{}{}", r.stdout, r.stderr);
    let r = bounded(p.path(), &["runs", "reindex"], 60).expect("reindex read /dev/zero");
    assert!(
        r.stderr.contains("symbolic link"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn the_viewer_never_writes_view_url_through_a_link() {
    let p = project();
    std::fs::create_dir_all(p.path().join(".evalhost")).unwrap();
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = write(
        &victim_dir.path().join("authorized_keys"),
        "ssh-ed25519 AAAA me\n",
    );
    std::os::unix::fs::symlink(&victim, p.path().join(".evalhost/view.url")).unwrap();
    let mut child = crate::support::evalhost()
        .current_dir(p.path())
        .args(["view", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    use std::io::BufRead as _;
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("http://127.0.0.1:"), "{line}");
    // The URL file is in place once the first line is out.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "ssh-ed25519 AAAA me\n",
        "the viewer wrote through the link"
    );
}

#[test]
fn a_planted_view_url_cannot_put_a_foreign_link_in_reports() {
    let p = project();
    write(&p.path().join(".evalhost/targets.yaml"), OPS_TARGETS);
    write(
        &p.path().join("EVAL.yaml"),
        "name: v\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hello}]\n",
    );
    write(
        &p.path().join(".evalhost/view.url"),
        "https://attacker.example/phish\n",
    );
    let r = crate::support::evalhost()
        .env_remove("EVALHOST_VIEW_URL")
        .current_dir(p.path())
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0));
    let report = std::fs::read_to_string(p.path().join("out/report.html")).unwrap();
    let summary = std::fs::read_to_string(p.path().join("out/summary.json")).unwrap();
    assert!(
        !report.contains("attacker.example"),
        "a planted link reached the report"
    );
    assert!(!summary.contains("attacker.example"), "{summary}");
}

#[test]
fn planted_runs_cannot_date_themselves_into_the_future_or_inflate_counts() {
    let p = project_with_a_run("hello");
    // The real regression: the same suite, now failing.
    write(
        &p.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: goodbye}\n",
    );
    let r = run(p.path(), &["run", "EVAL.yaml"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let r = run(p.path(), &["compare", "--last", "--fail-on-regression"]);
    assert_eq!(r.code, 1, "without planted runs: {}{}", r.stdout, r.stderr);
    // Two copies of the passing run, dated 9999, and a summary claiming 999
    // passes of one row.
    let runs = p.path().join(".evalhost/runs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let passing = &dirs[0];
    for (i, name) in ["9999-01-01T00-00-00.000", "9999-01-02T00-00-00.000"]
        .iter()
        .enumerate()
    {
        let dir = runs.join(name);
        std::fs::create_dir(&dir).unwrap();
        for f in ["results.jsonl", "summary.json"] {
            std::fs::copy(passing.join(f), dir.join(f)).unwrap();
        }
        let mut record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(passing.join("run.json")).unwrap())
                .unwrap();
        record["started_at"] = serde_json::Value::String(format!("9999-01-0{}T00:00:00Z", i + 1));
        std::fs::write(dir.join("run.json"), record.to_string()).unwrap();
        let mut summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        summary["passed"] = serde_json::json!(999);
        std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
        // As a checkout leaves them: written before the runs made here.
        let checked_out = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for f in ["run.json", "results.jsonl", "summary.json"] {
            std::fs::File::options()
                .write(true)
                .open(dir.join(f))
                .unwrap()
                .set_modified(checked_out)
                .unwrap();
        }
    }
    let r = run(p.path(), &["runs", "reindex"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = run(p.path(), &["compare", "--last", "--fail-on-regression"]);
    assert_eq!(
        r.code, 1,
        "planted runs hid a regression: {}{}",
        r.stdout, r.stderr
    );
    let r = run(p.path(), &["runs", "list", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    for run in listed.as_array().unwrap() {
        let rate = run["pass_rate"].as_f64().unwrap_or(0.0);
        assert!((0.0..=1.0).contains(&rate), "{run}");
        assert!(run["passed"].as_u64().unwrap() <= 1, "{run}");
        assert!(
            !run["started_at"].as_str().unwrap().starts_with("9999"),
            "{run}"
        );
    }
    // A row with an impossible score makes its run unreadable, not a NaN.
    let forged = runs.join("9999-01-01T00-00-00.000/results.jsonl");
    let text = std::fs::read_to_string(&forged).unwrap();
    let mut row: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    row["score"] = serde_json::json!(1e308);
    std::fs::write(&forged, format!("{row}\n")).unwrap();
    let r = run(p.path(), &["runs", "reindex"]);
    assert!(
        r.stderr.contains("is not a number in [0, 1]"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

// ---------------------------------------------------------------------------
// 15 (low): a template cannot fill the machine's memory.

#[test]
fn a_template_that_grows_without_bound_is_stopped() {
    let p = project();
    // A string doubled 60 times (Nunjucks has no `namespace`: each
    // doubling its own `set`).
    let doublings: String = (1..=60)
        .map(|i| format!("{{% set s{i} = s{} ~ s{} %}}", i - 1, i - 1))
        .collect();
    write(
        &p.path().join("d07.yaml"),
        &format!(
            "prompts:\n  - raw: \"{{% set s0 = q %}}{doublings}{{{{ s60 | length }}}}\"\n    label: m\nproviders: [echo]\ntests:\n  - vars: {{q: abcdefgh}}\n"
        ),
    );
    write(
        &p.path().join("d08.yaml"),
        r#"prompts:
  - raw: "{% set a = q %}{% set b = a|replace('a', a) %}{% set c = b|replace('a', b) %}{% set d = c|replace('a', c) %}{% set e = d|replace('a', d) %}{{ e|length }}"
    label: m
providers: [echo]
tests:
  - vars: {q: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}
"#,
    );
    for file in ["d07.yaml", "d08.yaml"] {
        let r = bounded(p.path(), &["validate", file, "--dialect", "promptfoo"], 60)
            .expect("the template ran until it was killed");
        assert_eq!(r.code, 2, "{file}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("MiB of memory to render"),
            "{file}: {}",
            r.stderr
        );
    }
}

// ---------------------------------------------------------------------------
// 17 (info): AgentV 5's catalog is found for a bare file name.

#[test]
fn an_agentv5_suite_named_by_a_bare_file_name_finds_its_providers() {
    let p = project();
    write(
        &p.path().join(".agentv/providers.yaml"),
        "- {id: mock, label: canned, response: 'hi there'}\n",
    );
    write(
        &p.path().join("suite.yaml"),
        "description: bare\nproviders: [canned]\nprompts: ['q: {{ q }}']\ntests:\n  - {id: t1, vars: {q: hi}, assert: [{type: contains, value: hi}]}\n",
    );
    let bare = run(
        p.path(),
        &["run", "suite.yaml", "--dialect", "agentv5", "-o", "bare"],
    );
    let dotted = run(
        p.path(),
        &[
            "run",
            "./suite.yaml",
            "--dialect",
            "agentv5",
            "-o",
            "dotted",
        ],
    );
    assert_eq!(dotted.code, 0, "{}{}", dotted.stdout, dotted.stderr);
    assert_eq!(bare.code, 0, "{}{}", bare.stdout, bare.stderr);
}

// ---------------------------------------------------------------------------
// 14 (low): transcripts are never written through a link, nor overwritten
// by another test's.

#[test]
fn transcripts_are_not_written_through_a_link_and_never_collide() {
    let p = project();
    let bin = p.path().join("bin");
    let trace = crate::support::root().join("tests/data/traces/claude-basic.jsonl");
    write(
        &bin.join("claude"),
        &format!("#!/bin/sh\ncat > /dev/null\ncat '{}'\n", trace.display()),
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    write(
        &p.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: claude}\n",
    );
    write(
        &p.path().join("EVAL.yaml"),
        "name: tr\ntests:\n  - id: 'a b'\n    input: q\n    assertions: [{type: contains, value: tests}]\n  - id: a_b\n    input: q\n    assertions: [{type: contains, value: tests}]\n",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let go = |args: &[&str]| -> Run {
        crate::support::evalhost()
            .current_dir(p.path())
            .env("PATH", &path)
            .args(args)
            .output()
            .unwrap()
            .into()
    };
    let r = go(&["run", "EVAL.yaml", "-o", "run1"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let transcripts: Vec<String> = std::fs::read_to_string(p.path().join("run1/results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["transcript"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(transcripts.len(), 2);
    assert_ne!(
        transcripts[0], transcripts[1],
        "two tests share a transcript file"
    );
    // Keep one row; the transcripts directory becomes a link elsewhere.
    let results = p.path().join("run1/results.jsonl");
    let first = std::fs::read_to_string(&results)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    std::fs::write(&results, format!("{first}\n")).unwrap();
    let victim = tempfile::tempdir().unwrap();
    std::fs::remove_dir_all(p.path().join("run1/transcripts")).unwrap();
    std::os::unix::fs::symlink(victim.path(), p.path().join("run1/transcripts")).unwrap();
    let _ = go(&[
        "run",
        "EVAL.yaml",
        "--resume",
        "run1",
        "--sandbox",
        "strict",
        "--targets",
        ".evalhost/targets.yaml",
    ]);
    assert_eq!(
        std::fs::read_dir(victim.path()).unwrap().count(),
        0,
        "a transcript was written through the link"
    );
}

// ---------------------------------------------------------------------------
// The second pass over the fixes (red-team 4).

// critical: a suite's own `.git/config` (shipped in an archive) must not
// make evalhost run a command through `git status`.
#[test]
fn a_suites_git_config_runs_nothing_under_strict() {
    let root = tempfile::tempdir().unwrap();
    let bench = root.path().join("bench");
    let marker = root.path().join("PWNED-fsmonitor");
    write(
        &bench.join("EVAL.yaml"),
        "name: bench\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hello}]\n",
    );
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&bench)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "."]);
    git(&["add", "."]);
    git(&[
        "-c",
        "user.email=a@b",
        "-c",
        "user.name=a",
        "commit",
        "-qm",
        "init",
    ]);
    git(&[
        "config",
        "core.fsmonitor",
        &format!("env > {}; exit 1", marker.display()),
    ]);
    let ops = write(&root.path().join("ops.yaml"), OPS_TARGETS);
    let r = run(
        root.path(),
        &[
            "run",
            "bench/EVAL.yaml",
            "--sandbox",
            "strict",
            "--targets",
            ops.to_str().unwrap(),
            "-o",
            "out",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!marker.exists(), "the suite's core.fsmonitor ran");
    // The operator's own repository (not strict): git still runs, but with
    // fsmonitor and hooks off.
    let r = run(
        root.path(),
        &[
            "run",
            "bench/EVAL.yaml",
            "--targets",
            ops.to_str().unwrap(),
            "-o",
            "out2",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        !marker.exists(),
        "core.fsmonitor ran for the operator's own run"
    );
    let record = std::fs::read_to_string(root.path().join("out2/run.json")).unwrap();
    assert!(record.contains("git_commit"), "{record}");
}

// medium: a package.json linked to a host file must not be quoted in the
// error; a FIFO import must not hang the bundler.
#[test]
fn the_bundler_neither_quotes_host_files_nor_hangs_on_a_fifo() {
    if !node() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let secret = write(&root.path().join("host/gh_token"), "ghp_SECRETTOKEN\n");
    let ops = write(&root.path().join("ops.yaml"), OPS_TARGETS);
    let pr = root.path().join("pr");
    std::fs::create_dir_all(pr.join(".git")).unwrap();
    write(
        &pr.join("node_modules/evil/index.js"),
        "export default 1;\n",
    );
    std::os::unix::fs::symlink(&secret, pr.join("node_modules/evil/package.json")).unwrap();
    write(
        &pr.join(".agentv/assertions/pkg.ts"),
        "import { defineAssertion } from '@agentv/sdk';\nimport x from 'evil';\nexport default defineAssertion(() => ({ pass: true, score: x }));\n",
    );
    let fifo = pr.join(".agentv/assertions/data.json");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success();
    assert!(made);
    write(
        &pr.join(".agentv/assertions/fifo.ts"),
        "import { defineAssertion } from '@agentv/sdk';\nimport d from './data.json' with { type: 'json' };\nexport default defineAssertion(() => ({ pass: true, score: d ? 1 : 0 }));\n",
    );
    for kind in ["pkg", "fifo"] {
        let eval = write(
            &pr.join(format!("{kind}.yaml")),
            &format!(
                "name: {kind}\ntests:\n  - id: t1\n    input: hi\n    assertions: [{{type: {kind}}}]\n"
            ),
        );
        let out = root.path().join(format!("out-{kind}"));
        let r = bounded(
            &pr,
            &[
                "run",
                eval.to_str().unwrap(),
                "--sandbox",
                "strict",
                "--targets",
                ops.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ],
            240,
        )
        .unwrap_or_else(|| panic!("{kind}: the bundler hung"));
        assert_eq!(r.code, 2, "{kind}: {}{}", r.stdout, r.stderr);
        no_secret(&format!("{}{}", r.stdout, r.stderr));
    }
}

// medium: an endless manifest is cut off.
#[test]
fn a_registry_cannot_stream_an_endless_manifest() {
    let registry = FakeServer::start_fn(|req| {
        if req.path.contains("/manifests/") {
            Reply {
                status: 200,
                headers: vec![(
                    "Content-Type".into(),
                    "application/vnd.oci.image.manifest.v1+json".into(),
                )],
                body: format!(
                    "{{\"schemaVersion\": 2, \"pad\": \"{}\"}}",
                    "x".repeat(16 << 20)
                ),
                delay: std::time::Duration::ZERO,
            }
        } else {
            Reply::json(200, serde_json::json!({}))
        }
    });
    let host = registry.url.trim_start_matches("http://").to_owned();
    let p = oci_suite(
        &host,
        &format!("sha256:{}", "3".repeat(64)),
        &"4".repeat(64),
    );
    let cache = tempfile::tempdir().unwrap();
    let r: Run = crate::support::evalhost()
        .env("EVALHOST_CACHE_DIR", cache.path())
        .current_dir(p.path())
        .args(["validate", "EVAL.yaml"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("a manifest is at most"), "{}", r.stderr);
}

// medium: a planted index with a trigger cannot rewrite the operator's
// runs, and runs that came with the checkout are never "the last run".
#[test]
fn a_planted_index_or_archived_runs_cannot_change_what_history_says() {
    let p = project();
    write(
        &p.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: goodbye}\n",
    );
    write(
        &p.path().join("EVAL.yaml"),
        "name: hist\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hello}]\n",
    );
    {
        let conn = rusqlite::Connection::open(p.path().join(".evalhost/results.db")).unwrap();
        conn.execute_batch(
            "CREATE TABLE runs (id TEXT PRIMARY KEY, dir TEXT NOT NULL, info TEXT NOT NULL, suite TEXT NOT NULL, targets TEXT NOT NULL, started_at TEXT NOT NULL, status TEXT NOT NULL, tags TEXT NOT NULL, indexed_at TEXT NOT NULL);
             CREATE TRIGGER forge AFTER INSERT ON runs BEGIN UPDATE runs SET info = replace(info, '\"passed\":0', '\"passed\":1') WHERE id = NEW.id; END;",
        )
        .unwrap();
    }
    let r = run(p.path(), &["run", "EVAL.yaml"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("triggers or views"), "{}", r.stderr);
    let r = run(p.path(), &["runs", "list", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(listed[0]["passed"], 0, "{listed}");
    // A second real run, then an archived copy of a passing run dated 2030
    // with its files' times from the archive.
    write(
        &p.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: hello}\n",
    );
    let r = run(p.path(), &["run", "EVAL.yaml"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let runs = p.path().join(".evalhost/runs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let passing = dirs.last().unwrap().clone();
    let planted = runs.join("2030-01-01T00-00-00.000");
    std::fs::create_dir(&planted).unwrap();
    for f in ["run.json", "results.jsonl", "summary.json"] {
        std::fs::copy(passing.join(f), planted.join(f)).unwrap();
    }
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(planted.join("run.json")).unwrap()).unwrap();
    record["started_at"] = serde_json::json!("2030-01-01T00:00:00Z");
    std::fs::write(planted.join("run.json"), record.to_string()).unwrap();
    let future = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_893_456_000);
    for f in ["run.json", "results.jsonl", "summary.json"] {
        std::fs::File::options()
            .write(true)
            .open(planted.join(f))
            .unwrap()
            .set_modified(future)
            .unwrap();
    }
    // The real regression: the last run this machine recorded fails.
    write(
        &p.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: goodbye}\n",
    );
    let r = run(p.path(), &["run", "EVAL.yaml"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let r = run(p.path(), &["runs", "reindex"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = run(p.path(), &["compare", "--last", "--fail-on-regression"]);
    assert_eq!(
        r.code, 1,
        "an archived run hid a regression: {}{}",
        r.stdout, r.stderr
    );
    assert!(!r.stdout.contains("2030-01-01"), "{}", r.stdout);
}

// medium: many templates, each within its own budget, cannot together
// fill the memory.
#[test]
fn templates_together_cannot_fill_the_memory() {
    let p = project();
    // Each test's prompt: its var doubled 22 times (32 MiB), one `set` a
    // doubling (Nunjucks has no `namespace`).
    let doublings: String = (1..=22)
        .map(|i| format!("{{% set s{i} = s{} ~ s{} %}}", i - 1, i - 1))
        .collect();
    let mut config = format!(
        "prompts:\n  - raw: \"{{% set s0 = q %}}{doublings}{{{{ s22 }}}}\"\n    label: m\nproviders: [echo]\ntests:\n"
    );
    for i in 0..40 {
        config.push_str(&format!("  - vars: {{q: abcdefgh{i}}}\n"));
    }
    write(&p.path().join("many.yaml"), &config);
    let r = bounded(
        p.path(),
        &["validate", "many.yaml", "--dialect", "promptfoo"],
        120,
    )
    .expect("validate ran until it was killed");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("render more than"), "{}", r.stderr);
}
