//! Native unit tests: the engine and promptfoo's conventions. The sandbox
//! (no files, network, environment or clock; limits) is proven on the wasm
//! build in `tests/integration/sandbox.rs`.

use super::*;
use evalhost_plugin_sdk::testing::Harness;

fn grade(code: &str, output: &str, extra: Value) -> Grade {
    let mut config = json!({"value": code});
    if let (Some(c), Value::Object(e)) = (config.as_object_mut(), extra) {
        c.extend(e);
    }
    let request = Request::new(TYPE, output)
        .with_config(config)
        .with_expected_output("unused");
    Harness::<JavascriptGrader>::new().grade(&request).unwrap()
}

fn verdict(g: &Grade) -> bool {
    g.details.as_ref().unwrap()["verdict"] == "pass"
}

#[test]
fn one_line_snippets_are_expressions() {
    assert_eq!(
        build_function_body("output.length > 3;"),
        "return output.length > 3"
    );
    assert_eq!(
        build_function_body("const n = output.length; n > 3"),
        "const n = output.length; return n > 3"
    );
    assert_eq!(
        build_function_body("let a = ';'; a"),
        "let a = ';'; return a"
    );
    let g = grade("output.includes('Paris')", "Paris is nice", json!({}));
    assert!(verdict(&g) && g.score == 1.0);
    let g = grade("output.includes('Rome')", "Paris is nice", json!({}));
    assert!(!verdict(&g));
    assert_eq!(
        g.checks[0].text,
        "Custom function returned false\noutput.includes('Rome')"
    );
}

#[test]
fn multi_line_snippets_are_function_bodies_and_may_be_async() {
    let g = grade(
        "const words = output.split(' ');\nreturn words.length === 3;\n",
        "a b c",
        json!({}),
    );
    assert!(verdict(&g));
    let g = grade(
        "return Promise.resolve({pass: true, score: 0.4, reason: 'ok'});",
        "x",
        json!({}),
    );
    // Only one line, but a `return` statement: promptfoo's body would be
    // `return return …`, a SyntaxError; a grading result needs two lines.
    assert!(!verdict(&g));
    let g = grade(
        "const r = await Promise.resolve(0.4);\nreturn {pass: r > 0.3, score: r, reason: 'r ' + r};",
        "x",
        json!({}),
    );
    assert!(
        !verdict(&g),
        "await outside an async function is a syntax error in new Function"
    );
    let g = grade(
        "const p = Promise.resolve(0.4);\nreturn p.then(r => ({pass: r > 0.3, score: r, reason: 'r ' + r}));",
        "x",
        json!({}),
    );
    assert!(verdict(&g));
    assert!((g.score - 0.4).abs() < 1e-12);
    assert_eq!(g.checks[0].text, "r 0.4");
}

#[test]
fn numbers_pass_above_zero_or_at_the_threshold() {
    assert!(verdict(&grade("0.2", "x", json!({}))));
    assert!(!verdict(&grade("0", "x", json!({}))));
    assert!(!verdict(&grade("0.2", "x", json!({"threshold": 0.5}))));
    let g = grade("0.7", "x", json!({"threshold": 0.5}));
    assert!(verdict(&g) && (g.score - 0.7).abs() < 1e-12);
    // not-javascript flips the verdict, not the score.
    let g = grade("0.7", "x", json!({"threshold": 0.5, "inverse": true}));
    assert!(!verdict(&g) && (g.score - 0.7).abs() < 1e-12);
}

#[test]
fn context_vars_and_prompt_reach_the_snippet() {
    let request = Request::new(TYPE, "Bonjour")
        .with_config(json!({"value": "output === context.vars.greeting && context.prompt === 'Say hi' && context.test.vars.greeting === 'Bonjour'"}));
    let mut request = request;
    request.metadata = json!({"vars": {"greeting": "Bonjour"}});
    request.input = vec![evalhost_plugin_sdk::Message::new("user", "Say hi")];
    let g = Harness::<JavascriptGrader>::new().grade(&request).unwrap();
    assert!(verdict(&g), "{:?}", g.checks);
    let request = Request::new(TYPE, "x")
        .with_config(json!({"value": "context.logProbs.length === 2 && context.providerResponse.finishReason === 'stop'"}))
        .with_logprobs(vec![-0.1, -0.2])
        .with_finish_reason("stop");
    assert!(verdict(
        &Harness::<JavascriptGrader>::new().grade(&request).unwrap()
    ));
}

#[test]
fn a_snippet_that_throws_or_returns_nonsense_fails_with_promptfoos_reason() {
    let g = grade("output.nope.deeper", "x", json!({}));
    assert!(!verdict(&g));
    assert!(
        g.checks[0]
            .text
            .starts_with("Custom function threw error: "),
        "{}",
        g.checks[0].text
    );
    let g = grade("'a string'", "x", json!({}));
    assert!(!verdict(&g));
    assert!(g.checks[0].text.contains(
        "Custom function must return a boolean, number, or GradingResult object. Got type string: \"a string\""
    ));
    let g = grade("{pass: true}", "x", json!({}));
    assert!(!verdict(&g), "a block, not an object: returns undefined");
}

#[test]
fn the_sandbox_shows_no_environment_modules_or_clock() {
    assert!(verdict(&grade(
        "Object.keys(process.env).length === 0",
        "x",
        json!({})
    )));
    let g = grade("require('fs').readFileSync('/etc/passwd')", "x", json!({}));
    assert!(!verdict(&g));
    assert!(
        g.checks[0].text.contains("Cannot find module 'fs'"),
        "{}",
        g.checks[0].text
    );
    let g = grade(
        "typeof fetch === 'undefined' && typeof XMLHttpRequest === 'undefined'",
        "x",
        json!({}),
    );
    assert!(verdict(&g));
}

#[test]
fn recursion_without_end_throws_range_error() {
    let g = grade("const f = n => f(n + 1); f(0)", "x", json!({}));
    assert!(!verdict(&g));
    assert!(
        g.checks[0].text.contains("RangeError"),
        "{}",
        g.checks[0].text
    );
}

#[test]
fn console_output_is_kept_with_the_result() {
    let g = grade(
        "console.log('seen', 1, {a: 2});\nreturn true;",
        "x",
        json!({}),
    );
    assert!(verdict(&g));
    assert_eq!(g.details.as_ref().unwrap()["console"], "seen 1 {\"a\":2}\n");
    assert_eq!(
        g.checks[0].evidence.as_deref(),
        Some("console:\nseen 1 {\"a\":2}")
    );
}

#[test]
fn file_scripts_call_their_function() {
    let script = |source: &str, function: Option<&str>, esm: bool| {
        let request = Request::new(TYPE, "hello world").with_config(json!({
            "__script": {"reference": "file://check.js", "source": source, "function": function, "esm": esm},
        }));
        Harness::<JavascriptGrader>::new().grade(&request)
    };
    let g = script(
        "module.exports = (output, context) => output.startsWith('hello');",
        None,
        false,
    )
    .unwrap();
    assert!(verdict(&g));
    let g = script(
        "module.exports.check = (output) => ({pass: false, score: 0.25, reason: 'too short'});",
        Some("check"),
        false,
    )
    .unwrap();
    assert!(!verdict(&g));
    assert_eq!((g.score, g.checks[0].text.as_str()), (0.25, "too short"));
    let g = script(
        "export default function (output) { return output.length; }",
        None,
        true,
    )
    .unwrap();
    assert!(verdict(&g));
    let g = script(
        "export function named(output) { return output.length > 100; }",
        Some("named"),
        true,
    )
    .unwrap();
    assert!(!verdict(&g));
    assert_eq!(
        g.checks[0].text,
        "Custom function returned false\nfile://check.js"
    );
    // No function: the row is an error, as promptfoo's is.
    let e = script("module.exports = { notAFunction: 1 };", None, false).unwrap_err();
    assert!(e.message().contains("must export a function"), "{e:?}");
    let e = script("throw new Error('at load');", None, false).unwrap_err();
    assert!(e.message().contains("at load"), "{e:?}");
}

fn transform(config: Value, output: &str) -> Result<Grade, GradeError> {
    let mut request = Request::new(TRANSFORM, output).with_config(config);
    request.metadata = json!({"vars": {"suffix": "!"}});
    Harness::<JavascriptGrader>::new().grade(&request)
}

#[test]
fn transforms_return_the_new_output_in_the_details() {
    let g = transform(
        json!({"value": "output.toUpperCase() + context.vars.suffix"}),
        "hi",
    )
    .unwrap();
    assert_eq!(g.details.as_ref().unwrap()["output"], "HI!");
    // A body on several lines; an object stays an object.
    let g = transform(
        json!({"value": "const o = {n: output.length};\nreturn o;"}),
        "four",
    )
    .unwrap();
    assert_eq!(g.details.as_ref().unwrap()["output"], json!({"n": 4}));
    // Nothing returned, or a throw: promptfoo's errors.
    let e = transform(json!({"value": "undefined"}), "x").unwrap_err();
    assert_eq!(
        e.message(),
        "Transform function did not return a value\n\n[inline transform]: undefined"
    );
    let e = transform(json!({"value": "output.a.b"}), "x").unwrap_err();
    assert!(
        e.message()
            .starts_with("Transform failed ([inline transform]: output.a.b): "),
        "{e:?}"
    );
    // A file's named function, own property only.
    let g = transform(
        json!({"__script": {"reference": "file://t.js:trim", "source": "module.exports = { trim: (o) => o.trim() };", "function": "trim", "esm": false}}),
        "  x  ",
    )
    .unwrap();
    assert_eq!(g.details.as_ref().unwrap()["output"], "x");
}

#[test]
fn a_structured_output_reaches_code_as_a_value() {
    let request = Request::new(TYPE, r#"{"age":36}"#)
        .with_config(json!({"value": "typeof output === 'object' && output.age === 36"}))
        .with_output_json(json!({"age": 36}));
    assert!(verdict(
        &Harness::<JavascriptGrader>::new().grade(&request).unwrap()
    ));
}

#[test]
fn globals_a_snippet_adds_do_not_reach_the_next_one() {
    assert!(verdict(&grade(
        "globalThis.leak = 1;\nreturn true;",
        "x",
        json!({})
    )));
    assert!(verdict(&grade(
        "undeclared = 2;\nreturn true;",
        "x",
        json!({})
    )));
    assert!(verdict(&grade(
        "typeof leak === 'undefined' && typeof undeclared === 'undefined'",
        "x",
        json!({})
    )));
}

fn call(config: Value) -> Result<Value, GradeError> {
    let request = Request::new(CALL, "").with_config(config);
    Harness::<JavascriptGrader>::new()
        .grade(&request)
        .map(|g| g.details.unwrap()["output"].clone())
}

#[test]
fn calls_hand_over_their_arguments_and_return_json() {
    // An inline function of named parameters, `process` appended.
    let out = call(json!({
        "value": "({...vars, n: vars.a.length, p: typeof process})",
        "params": ["vars", "context", "process"],
        "args": [{"a": "xyz"}, {"uuid": "u"}],
    }))
    .unwrap();
    assert_eq!(out, json!({"a": "xyz", "n": 3, "p": "object"}));
    // A module's named export, awaited; `undefined` is null.
    let script = |source: &str, function: Option<&str>| json!({"reference": "file://f.js", "source": source, "function": function, "esm": false});
    let out = call(json!({
        "__script": script("module.exports.make = async (x) => x * 2;", Some("make")),
        "args": [21],
    }))
    .unwrap();
    assert_eq!(out, json!(42));
    let out = call(json!({"__script": script("module.exports = () => {};", None)})).unwrap();
    assert_eq!(out, Value::Null);
    // The provider argument's `id` is a method, as promptfoo's is.
    let out = call(json!({
        "__script": script("module.exports = (n, p, v, provider) => ({output: provider.id() + '/' + provider.label});", None),
        "args": ["who", "prompt", {}, {"id": "echo", "label": "first"}],
        "provider_arg": 3,
    }))
    .unwrap();
    assert_eq!(out, json!({"output": "echo/first"}));
    // A missing function and a throw are failures, in words.
    let Err(GradeError::Failed(m)) =
        call(json!({"__script": script("module.exports.a = 1;", Some("b"))}))
    else {
        panic!("a missing function fails");
    };
    assert!(m.contains("has no function `b`"), "{m}");
    let Err(GradeError::Failed(m)) =
        call(json!({"value": "throw new Error('boom')\n", "params": ["vars"]}))
    else {
        panic!("a throw fails");
    };
    assert!(m.contains("boom"), "{m}");
}
