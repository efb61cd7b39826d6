//! `evalhost view`: a read-only results viewer in the browser, over the
//! results index. One process, loopback by default, every asset embedded
//! (no CDN): the page (`assets/`) asks a small JSON API —
//!
//! - `GET /api/runs?suite=&target=&tag=&since=` → the runs, newest first,
//!   and the suites, targets and tags to filter by;
//! - `GET /api/runs/{id}` → a run and its rows (summaries);
//! - `GET /api/runs/{id}/row?test=&target=&trial=` → one whole row;
//! - `GET /api/compare?base=&cand=` → what `evalhost compare --json` prints;
//! - `GET /api/trend?suite=&n=` → what `evalhost trend --json` prints.
//!
//! Nothing it serves changes anything: only GET (and HEAD) are answered.
//! Bound to loopback, it refuses requests whose `Host` is not a loopback
//! name (a web page elsewhere cannot reach it through DNS rebinding).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::history::index::{Filter, Index};
use crate::history::{self, compare, stats, trend};

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// A running viewer.
pub struct Viewer {
    server: tiny_http::Server,
    project: PathBuf,
    /// The address it listens on.
    pub addr: std::net::SocketAddr,
    loopback: bool,
}

impl Viewer {
    /// Binds `host:port` (port 0: any free port) for `project`.
    pub fn bind(project: &Path, host: &str, port: u16) -> anyhow::Result<Self> {
        let server = tiny_http::Server::http((host, port))
            .map_err(|e| anyhow::anyhow!("cannot listen on {host}:{port}: {e}"))?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| anyhow::anyhow!("not an IP address: {host}"))?;
        // Opening it once builds it when missing, before the first page.
        Index::open_or_rebuild(project)?;
        Ok(Self {
            server,
            project: project.to_path_buf(),
            addr,
            loopback: addr.ip().is_loopback(),
        })
    }

    /// The URL to open.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Serves until the process ends (or `stop` says so, checked between
    /// requests).
    pub fn serve(&self, stop: &dyn Fn() -> bool) {
        loop {
            if stop() {
                return;
            }
            match self
                .server
                .recv_timeout(std::time::Duration::from_millis(250))
            {
                Ok(Some(request)) => self.answer(request),
                Ok(None) => {}
                Err(_) => return,
            }
        }
    }

    fn answer(&self, request: tiny_http::Request) {
        let (status, content_type, body) = self.route(&request);
        let mut response = tiny_http::Response::from_data(body).with_status_code(status);
        for (k, v) in [
            ("Content-Type", content_type),
            ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
            (
                "Content-Security-Policy",
                "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
            ),
        ] {
            if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
                response.add_header(h);
            }
        }
        let _ = request.respond(response);
    }

    fn route(&self, request: &tiny_http::Request) -> (u16, &'static str, Vec<u8>) {
        let error = |status: u16, message: String| {
            (
                status,
                "application/json",
                json!({"error": message}).to_string().into_bytes(),
            )
        };
        if !matches!(
            request.method(),
            tiny_http::Method::Get | tiny_http::Method::Head
        ) {
            return error(405, "evalhost view is read-only: only GET".into());
        }
        if self.loopback {
            let host = request
                .headers()
                .iter()
                .find(|h| h.field.equiv("Host"))
                .map(|h| h.value.as_str().to_owned())
                .unwrap_or_default();
            let name = host.rsplit_once(':').map_or(host.as_str(), |(n, _)| n);
            if !matches!(name, "127.0.0.1" | "localhost" | "[::1]" | "") {
                return error(403, format!("host `{name}` is not this machine"));
            }
        }
        let url = request.url().to_owned();
        let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
        let params: Vec<(String, String)> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect();
        let param = |name: &str| {
            params
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty())
        };
        let segments: Vec<String> = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(decode)
            .collect();
        let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
        match segs.as_slice() {
            [] | ["index.html"] => {
                let bind = format!(
                    "{}{}",
                    self.addr,
                    if self.loopback {
                        ""
                    } else {
                        " (reachable from the network)"
                    }
                );
                let page = INDEX_HTML.replace(
                    r#"<meta name="evalhost-bind" content="">"#,
                    &format!(
                        r#"<meta name="evalhost-bind" content="{}">"#,
                        html_attr(&bind)
                    ),
                );
                (200, "text/html; charset=utf-8", page.into_bytes())
            }
            ["app.js"] => (
                200,
                "text/javascript; charset=utf-8",
                APP_JS.as_bytes().to_vec(),
            ),
            ["app.css"] => (200, "text/css; charset=utf-8", APP_CSS.as_bytes().to_vec()),
            ["api", rest @ ..] => match self.api(rest, &param) {
                Ok(value) => (200, "application/json", value.to_string().into_bytes()),
                Err((status, message)) => error(status, message),
            },
            _ => error(404, format!("no page {path}")),
        }
    }

    fn api(
        &self,
        rest: &[&str],
        param: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Value, (u16, String)> {
        let internal = |e: &dyn std::fmt::Display| (500, e.to_string());
        let index = Index::open(&self.project).map_err(|e| internal(&e))?;
        let read = |id: &str| -> Result<history::Run, (u16, String)> {
            let info = index
                .find(id)
                .map_err(|e| internal(&e))?
                .ok_or_else(|| (404, format!("no run `{id}`")))?;
            history::read_run(Path::new(&info.dir), &index.runs_dir)
                .map_err(|e| (410, format!("run `{id}`: {e}")))
        };
        match rest {
            ["runs"] => {
                let all = index.list(&Filter::default()).map_err(|e| internal(&e))?;
                let set = |f: &dyn Fn(&history::RunInfo) -> Vec<String>| {
                    let mut v: Vec<String> = all.iter().flat_map(f).collect();
                    v.sort();
                    v.dedup();
                    v
                };
                let suites = set(&|r| vec![r.suite.clone()]);
                let targets = set(&|r| r.targets.clone());
                let tags = set(&|r| r.tags.clone());
                let runs = index
                    .list(&Filter {
                        suite: param("suite"),
                        target: param("target"),
                        since: param("since"),
                        tag: param("tag"),
                        limit: None,
                    })
                    .map_err(|e| internal(&e))?;
                Ok(json!({"runs": runs, "suites": suites, "targets": targets, "tags": tags}))
            }
            ["runs", id] => {
                let run = read(id)?;
                Ok(json!({"run": run.info, "rows": run.rows}))
            }
            ["runs", id, "row"] => {
                let run = read(id)?;
                let test = param("test").ok_or((400, "`test` is required".to_owned()))?;
                let target = param("target");
                let trial: u32 = param("trial").and_then(|t| t.parse().ok()).unwrap_or(0);
                let row = run
                    .rows
                    .into_iter()
                    .find(|r| {
                        r.test_id == test
                            && target.as_ref().is_none_or(|t| &r.target == t)
                            && r.trial == trial
                    })
                    .ok_or_else(|| (404, format!("no row for `{test}` in run `{id}`")))?;
                Ok(json!({"row": row.row}))
            }
            ["runs", id, "grid"] => {
                let run = read(id)?;
                // Each cell carries its test's outcome — the trials
                // combined by the suite's own rule, as the run page and the
                // summary count them — so that the grid counts tests, never
                // trials, and a cell's verdict is the test's.
                let parsed: Vec<crate::results::ResultRow> = run
                    .rows
                    .iter()
                    .filter_map(|r| serde_json::from_value(r.row.clone()).ok())
                    .collect();
                let outcomes: std::collections::HashMap<(String, String), (String, f64)> =
                    crate::outcome::outcomes(&parsed)
                        .into_iter()
                        .map(|o| {
                            (
                                (o.test_id, o.target),
                                (o.status.as_str().to_owned(), o.score),
                            )
                        })
                        .collect();
                let cells: Vec<Value> = run
                    .rows
                    .iter()
                    .map(|row| {
                        let mut cell = grid_cell(row);
                        if let Some((status, score)) =
                            outcomes.get(&(row.test_id.clone(), row.target.clone()))
                        {
                            cell["test_status"] = json!(status);
                            cell["test_score"] = json!(score);
                        }
                        cell
                    })
                    .collect();
                Ok(json!({"run": run.info, "cells": cells}))
            }
            ["compare"] => {
                let base = param("base").ok_or((400, "`base` is required".to_owned()))?;
                let cand = param("cand").ok_or((400, "`cand` is required".to_owned()))?;
                let c = compare::compare(&read(&base)?, &read(&cand)?, &stats::Options::default());
                serde_json::to_value(c).map_err(|e| internal(&e))
            }
            ["trend"] => {
                let suite = param("suite").ok_or((400, "`suite` is required".to_owned()))?;
                let n: usize = param("n")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(20)
                    .clamp(1, 500);
                let mut infos = index
                    .list(&Filter {
                        suite: Some(suite.clone()),
                        limit: Some(n),
                        ..Filter::default()
                    })
                    .map_err(|e| internal(&e))?;
                infos.reverse();
                let runs: Vec<history::Run> = infos
                    .iter()
                    .filter_map(|i| history::read_run(Path::new(&i.dir), &index.runs_dir).ok())
                    .collect();
                let t = trend::trend(&suite, &runs, &stats::Options::default());
                serde_json::to_value(t).map_err(|e| internal(&e))
            }
            _ => Err((404, format!("no API /api/{}", rest.join("/")))),
        }
    }
}

/// How much of an output a grid cell carries (the test page has all).
const GRID_OUTPUT: usize = 4000;

/// `text` cut to `n` characters, and whether it was cut.
fn cut(text: &str, n: usize) -> (String, bool) {
    match text.char_indices().nth(n) {
        Some((at, _)) => (text[..at].to_owned(), true),
        None => (text.to_owned(), false),
    }
}

/// One row as a cell of the output grid (`#/run/ID/grid`): the test
/// without its prompt suffix (promptfoo's `desc @prompt` ids), the prompt,
/// the target, the verdict, the output (cut), and each assertion with its
/// checks.
fn grid_cell(row: &history::RowInfo) -> Value {
    let full = &row.row;
    let prompt = full["prompt"]["label"]
        .as_str()
        .or_else(|| full["prompt"]["id"].as_str());
    let test = match prompt {
        Some(_) => row
            .test_id
            .rsplit_once(" @")
            .map_or(row.test_id.as_str(), |(t, _)| t),
        None => row.test_id.as_str(),
    };
    let output = match &full["output"] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let (output, output_cut) = cut(&output, GRID_OUTPUT);
    let assertions: Vec<Value> = full["scores"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            let checks: Vec<Value> = a["assertions"]
                .as_array()
                .into_iter()
                .flatten()
                .take(8)
                .map(|c| {
                    json!({
                        "passed": c["passed"],
                        "text": cut(c["text"].as_str().unwrap_or_default(), 400).0,
                    })
                })
                .collect();
            json!({
                "name": a["name"],
                "type": a["type"],
                "verdict": a["verdict"],
                "score": a["score"],
                "weight": a["weight"],
                "reasoning": a["reasoning"],
                "error": a["error"],
                "checks": checks,
            })
        })
        .collect();
    json!({
        "test": test,
        "test_id": row.test_id,
        "target": row.target,
        "prompt": prompt,
        "trial": row.trial,
        "status": row.status,
        "score": row.score,
        "threshold": row.threshold,
        "error": row.error,
        "output": output,
        "output_cut": output_cut,
        "input": cut(&input_text(&full["input"]), 300).0,
        "tags": row.tags,
        "assertions": assertions,
    })
}

/// The text of a row's input: its messages' text, the user's last.
fn input_text(input: &Value) -> String {
    let text_of = |content: &Value| -> String {
        match content {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["value"].as_str().or_else(|| b["text"].as_str()))
                .collect::<Vec<_>>()
                .join("\n"),
            Value::Null => String::new(),
            other => other.to_string(),
        }
    };
    match input {
        Value::Array(messages) => messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .or_else(|| messages.last())
            .map(|m| text_of(&m["content"]))
            .unwrap_or_default(),
        other => text_of(other),
    }
}

/// Percent-decoding (and `+` as a space, as forms send it).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(&text[i + 1..i + 3], 16) {
                Ok(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                Err(_) => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn html_attr(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Where a viewer for `project` is, when one is known: `EVALHOST_VIEW_URL`,
/// else the one running for the project (it writes its URL to
/// `.evalhost/view.url` while it runs).
///
/// The file is read capped (4 KiB), not through a link, and only a
/// loopback `http://` URL in it counts (what `evalhost view` writes): a
/// project cannot plant a link to its own site in your reports. Under
/// `--sandbox strict` (`untrusted`) the file is not read at all.
pub fn known_url(project: &Path, untrusted: bool) -> Option<String> {
    if let Ok(url) = std::env::var("EVALHOST_VIEW_URL") {
        let url = url.trim();
        return (url.starts_with("http://") || url.starts_with("https://"))
            .then(|| format!("{}/", url.trim_end_matches('/')));
    }
    if untrusted {
        return None;
    }
    let text = crate::safe_fs::read_text_capped(&url_file(project), 4 << 10).ok()?;
    let url = text.trim();
    let rest = url.strip_prefix("http://")?;
    let host = rest.split('/').next()?;
    let host = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
        .then(|| format!("{}/", url.trim_end_matches('/')))
}

fn url_file(project: &Path) -> PathBuf {
    project.join(".evalhost").join("view.url")
}

/// Serves the runs of `project` on `host:port` until interrupted (`evalhost
/// view`; its arguments are in `cli::view`).
pub fn command(
    project: &Path,
    host: &str,
    port: u16,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let project = project.to_path_buf();
    let viewer = match Viewer::bind(&project, host, port) {
        Ok(v) => v,
        Err(e) => {
            let _ = writeln!(err, "error: {}", crate::text::shown(&format!("{e:#}")));
            return crate::exit_codes::USAGE;
        }
    };
    let _ = writeln!(out, "evalhost view: {}", viewer.url());
    let _ = writeln!(
        out,
        "  runs of {} · read-only · {}",
        project.display(),
        if viewer.loopback {
            "listening on loopback only: this machine alone can open it"
        } else {
            "WARNING: listening beyond loopback: anyone who can reach this address can read these results"
        }
    );
    let _ = writeln!(out, "  Ctrl-C stops it");
    let _ = out.flush();
    // While it runs, new runs' reports link to it.
    let marker = url_file(&project);
    // Replaced atomically, never written through a link someone planted.
    if let Some(dir) = marker.parent()
        && crate::safe_fs::check_dir(dir, &[&project]).is_ok()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let _ = crate::safe_fs::write_atomic(&marker, viewer.url().as_bytes());
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let _ = ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    viewer.serve(&|| stop.load(std::sync::atomic::Ordering::SeqCst));
    if crate::safe_fs::read_text_capped(&marker, 4 << 10).is_ok_and(|u| u.trim() == viewer.url()) {
        let _ = std::fs::remove_file(&marker);
    }
    crate::exit_codes::SUCCESS
}
