//! A test-only plugin whose assertion types each misbehave in one way, so
//! that tests can prove the host contains it. Never shipped.

use evalhost_plugin_sdk::{
    AssertionType, Capability, Check, Command, CompletionRequest, Grade, GradeError, Grader,
    Plugin, Request, complete, export_grader, json, run_command,
};

/// The hostile plugin.
pub struct Hostile;

/// Text that would drive a terminal or a CI log if printed raw: OSC 52
/// (clipboard), a window title, concealed text, a carriage return and a
/// GitHub workflow command on a line of its own.
const ESCAPES: &str = "ESC-TEXT\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;title\u{7}\u{1b}[8mhidden\u{1b}[0m\r\n::stop-commands::evil\n::add-mask::x\u{9b}31m\u{202e}";

const TYPES: &[&str] = &[
    "loop-forever",
    "allocate-unbounded",
    "stack-overflow",
    "panic",
    "return-error",
    "score",
    "huge-result",
    "many-checks",
    "read-file",
    "read-env",
    "read-clock",
    "open-socket",
    "call-llm",
    "call-embed",
    "call-exec",
    "exit",
    "echo",
];

impl Grader for Hostile {
    fn describe() -> Plugin {
        let mut plugin = Plugin::new("hostile", "0.0.1");
        for name in TYPES {
            plugin = plugin.assertion_type(AssertionType::new(*name, "misbehaves on purpose"));
        }
        plugin
            .assertion_type(
                AssertionType::new("wants-llm", "declares llm").capability(Capability::Llm),
            )
            .assertion_type(AssertionType::new("escapes", ESCAPES))
            .assertion_type(
                // No check_config of its own: only the schema guards it.
                AssertionType::new("strict-config", "config checked by its JSON Schema only")
                    .schema(json!({
                        "type": "object",
                        "required": ["level"],
                        "properties": {"level": {"type": "integer", "minimum": 1}},
                    })),
            )
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        let config = &request.config;
        match request.assertion_type.as_str() {
            "loop-forever" => {
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "allocate-unbounded" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 8 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "stack-overflow" => Ok(Grade::new(recurse(std::hint::black_box(1)) as f64)),
            "panic" => panic!("hostile plugin panicked on purpose"),
            "return-error" => Err("the grader refused: on purpose".into()),
            "score" => {
                // `score: inf` arrives as a string: JSON has no infinity.
                let score = match config.get("score") {
                    Some(evalhost_plugin_sdk::Value::String(s)) => s.parse().unwrap_or(f64::NAN),
                    _ => config.optional_f64("score")?.unwrap_or(f64::NAN),
                };
                Ok(Grade::new(score).with_check(Check::pass("score")))
            }
            "huge-result" => {
                let mb = config.optional_u64("mb")?.unwrap_or(100) as usize;
                Ok(Grade::from_check(Check::pass("x".repeat(mb << 20))))
            }
            "many-checks" => {
                let n = config.optional_u64("n")?.unwrap_or(1_000_000) as usize;
                Ok(Grade::from_checks(
                    (0..n).map(|i| Check::pass(format!("check {i}"))).collect(),
                ))
            }
            "read-file" => {
                let path = config.optional_str("path")?.unwrap_or("/etc/passwd");
                match std::fs::read_to_string(path) {
                    Ok(text) => Ok(Grade::from_check(
                        Check::pass(format!("read {} bytes", text.len())).with_evidence(text),
                    )),
                    Err(err) => Err(format!("could not read {path}: {err}").into()),
                }
            }
            "read-env" => {
                let vars: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
                let args: Vec<String> = std::env::args().collect();
                Ok(Grade::new(if vars.is_empty() && args.is_empty() {
                    1.0
                } else {
                    0.0
                })
                .with_check(Check::new(vars.is_empty(), format!("env: {vars:?}")))
                .with_check(Check::new(args.is_empty(), format!("args: {args:?}"))))
            }
            "read-clock" => {
                let wall = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(u64::MAX);
                let start = std::time::Instant::now();
                let mut spin = 0u64;
                for i in 0..2_000_000u64 {
                    spin = std::hint::black_box(spin ^ i);
                }
                let elapsed = start.elapsed().as_nanos();
                // Behave differently depending on the time: pass only when the
                // clock looks frozen.
                let frozen = wall == 0 && elapsed == 0;
                Ok(Grade::from_check(Check::new(
                    frozen,
                    format!("wall={wall} elapsed_ns={elapsed}"),
                )))
            }
            "open-socket" => match std::net::TcpStream::connect("127.0.0.1:9") {
                Ok(_) => Ok(Grade::from_check(Check::pass("connected"))),
                Err(err) => Err(format!("socket refused: {err}").into()),
            },
            "call-llm" | "wants-llm" => {
                let request = CompletionRequest {
                    messages: vec![("user".into(), "hello".into())],
                    ..CompletionRequest::default()
                };
                match complete(&request) {
                    Ok(c) => Ok(Grade::from_check(Check::pass(c.text))),
                    Err(err) => Err(format!("llm refused: {err}").into()),
                }
            }
            "call-embed" => {
                let request = evalhost_plugin_sdk::EmbeddingRequest {
                    text: "hello".into(),
                    target: Some("default".into()),
                };
                match evalhost_plugin_sdk::embed(&request) {
                    Ok(e) => Ok(Grade::from_check(Check::pass(format!("{:?}", e.vector)))),
                    Err(err) => Err(format!("embed refused: {err}").into()),
                }
            }
            "call-exec" => {
                let command = Command {
                    argv: vec!["/bin/sh".into(), "-c".into(), "echo pwned".into()],
                    ..Command::default()
                };
                match run_command(&command) {
                    Ok(o) => Ok(Grade::from_check(Check::pass(String::from_utf8_lossy(
                        &o.stdout,
                    )))),
                    Err(err) => Err(format!("exec refused: {err}").into()),
                }
            }
            "exit" => std::process::exit(3),
            "strict-config" => Ok(Grade::from_check(Check::pass("level accepted"))),
            "escapes" => Ok(Grade::from_check(Check::fail(ESCAPES))),
            "echo" => Ok(
                Grade::from_check(Check::pass(request.output.clone())).with_details(json!({
                    "test_id": request.test_id,
                    "config": config.as_map(),
                })),
            ),
            other => Err(format!("unknown type {other}").into()),
        }
    }
}

#[inline(never)]
fn recurse(n: u64) -> u64 {
    let buf = std::hint::black_box([n; 64]);
    if buf[3] == u64::MAX {
        return 0;
    }
    recurse(n + 1) + 1
}

export_grader!(Hostile);
