//! Beyond one machine (issue 36): `--shard auto` in a real Slurm job array
//! on a one-node cluster started here (`scripts/slurm-local.sh`), merged
//! back into exactly the single-machine result; a failed array task named
//! by `merge`.
//!
//! Where Slurm cannot start (not installed, not root) the test says so and
//! passes; with `EVALHOST_REQUIRE_SLURM=1` (set by `.ci/run` where it
//! installed Slurm) its absence is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Project, Run};

/// A cluster started for one test, stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first: a cancelled array leaves no task behind.
        let _ = Command::new("scancel")
            .env("SLURM_CONF", &self.conf)
            .args(["--user", "root"])
            .output();
        let _ = Command::new(script())
            .args(["stop"])
            .arg(self.dir.path())
            .output();
    }
}

fn script() -> PathBuf {
    crate::support::root().join("scripts/slurm-local.sh")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A one-node cluster, or `None` (with why, on stderr) where it cannot
/// start and it is not required.
fn cluster() -> Option<Cluster> {
    let required = std::env::var_os("EVALHOST_REQUIRE_SLURM").is_some();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(script())
        .arg("start")
        .arg(dir.path())
        .arg(free_port().to_string())
        .arg(free_port().to_string())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let conf = dir.path().join("slurm.conf");
            Some(Cluster { dir, conf })
        }
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                Err(e) => e.to_string(),
            };
            assert!(
                !required,
                "EVALHOST_REQUIRE_SLURM is set but the cluster did not start: {why}"
            );
            eprintln!(
                "skipped: a local Slurm cluster cannot start here ({})",
                why.trim()
            );
            None
        }
    }
}

const SUITE: &str = r#"name: sharded
tests:
  - {id: t01, input: q, assertions: [{type: contains, value: Paris}]}
  - {id: t02, input: q, assertions: [{type: contains, value: London}]}
  - {id: t03, input: q, assertions: [{type: regex, value: "^The"}]}
  - {id: t04, input: q, assertions: [{type: equals, value: "The capital is Paris."}]}
  - {id: t05, input: q, assertions: [{type: icontains, value: paris}, {type: contains, value: Rome}]}
  - {id: t06, input: q, assertions: [{type: contains, value: capital}]}
  - {id: t07, input: q, assertions: [{type: not-contains, value: Paris}]}
  - {id: t08, input: q, assertions: [{type: regex, value: "\\.$"}]}
  - {id: t09, input: q, assertions: [{type: contains, value: is}]}
  - {id: t10, input: q, assertions: [{type: contains, value: Berlin}]}
  - {id: t11, input: q, assertions: [{type: icontains, value: THE}]}
"#;

/// (test id, status, score, every assertion's name and score), in id order.
fn verdicts(dir: &Path) -> Vec<(String, String, String, String)> {
    let text = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
    let mut rows: Vec<(String, String, String, String)> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            let scores: Vec<String> = r["scores"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| format!("{}={}", s["name"], s["score"]))
                .collect();
            (
                r["test_id"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
                r["score"].to_string(),
                scores.join(","),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// Submits a 4-task array running `body` (a shell script run in the
/// project) and waits for it; the exit code of `sbatch --wait`.
fn array(cluster: &Cluster, project: &Project, body: &str) -> i32 {
    let job = project.write("job.sh", &format!("#!/bin/sh\n{body}\n"));
    std::fs::create_dir_all(project.path().join("logs")).unwrap();
    let out = Command::new("sbatch")
        .env("SLURM_CONF", &cluster.conf)
        .env("EVALHOST", env!("CARGO_BIN_EXE_evalhost"))
        .env("EVALHOST_CACHE_DIR", crate::support::shared_cache())
        .args(["--wait", "--array=1-4", "--chdir"])
        .arg(project.path())
        .arg("--output")
        .arg(project.path().join("logs/task-%a.txt"))
        .arg(&job)
        .output()
        .expect("sbatch runs");
    out.status.code().unwrap_or(-1)
}

fn logs(project: &Project) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(project.path().join("logs")).unwrap() {
        let path = entry.unwrap().path();
        all += &format!(
            "--- {}\n{}",
            path.display(),
            std::fs::read_to_string(&path).unwrap_or_default()
        );
    }
    all
}

#[test]
fn a_slurm_array_with_shard_auto_merges_to_the_single_machine_result() {
    let Some(cluster) = cluster() else {
        return;
    };
    let project = Project::with_mock("The capital is Paris.");
    project.write("EVAL.yaml", SUITE);
    let single: Run =
        crate::support::run_in(project.path(), &["run", "EVAL.yaml", "-o", "single", "-q"]);
    assert_eq!(
        single.code, 1,
        "some tests fail on purpose: {}{}",
        single.stdout, single.stderr
    );

    // Each task runs its slice; 1 (tests failed) is a finished task.
    let code = array(
        &cluster,
        &project,
        "\"$EVALHOST\" run EVAL.yaml -o \"shards/$SLURM_ARRAY_TASK_ID\" --shard auto -q; code=$?; [ $code -le 1 ] || exit $code",
    );
    assert_eq!(code, 0, "the array ran: {}", logs(&project));
    let log = logs(&project);
    for k in 1..=4 {
        assert!(
            log.contains(&format!("shard {k}/4 from the Slurm job array (SLURM_ARRAY_TASK_ID={k}, SLURM_ARRAY_TASK_MIN=1")),
            "each task says where its slice came from: {log}"
        );
    }
    let merged = crate::support::run_in(
        project.path(),
        &[
            "merge", "shards/1", "shards/2", "shards/3", "shards/4", "-o", "merged",
        ],
    );
    assert_eq!(merged.code, 1, "{}{}", merged.stdout, merged.stderr);
    let whole = verdicts(&project.path().join("single"));
    assert_eq!(whole.len(), 11);
    assert_eq!(verdicts(&project.path().join("merged")), whole);
    // Every shard held a part: 11 tests over 4 shards.
    for k in 1..=4 {
        let n = verdicts(&project.path().join(format!("shards/{k}"))).len();
        assert!((2..=3).contains(&n), "shard {k} ran {n} tests");
    }
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("merged/summary.json")).unwrap(),
    )
    .unwrap();
    let single_summary: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("single/summary.json")).unwrap(),
    )
    .unwrap();
    for key in ["passed", "failed", "errors", "pass_rate", "mean_score"] {
        assert_eq!(summary[key], single_summary[key], "{key}");
    }
}

#[test]
fn a_failed_array_task_is_named_by_merge() {
    let Some(cluster) = cluster() else {
        return;
    };
    let project = Project::with_mock("The capital is Paris.");
    project.write("EVAL.yaml", SUITE);
    // Task 3 dies before it runs (a node lost, a job killed).
    let code = array(
        &cluster,
        &project,
        "[ \"$SLURM_ARRAY_TASK_ID\" = 3 ] && exit 9\n\"$EVALHOST\" run EVAL.yaml -o \"shards/$SLURM_ARRAY_TASK_ID\" --shard auto -q; code=$?; [ $code -le 1 ] || exit $code",
    );
    assert_ne!(
        code,
        0,
        "sbatch --wait reports the failed task: {}",
        logs(&project)
    );
    let dirs: Vec<String> = (1..=4)
        .map(|k| format!("shards/{k}"))
        .filter(|d| project.path().join(d).is_dir())
        .collect();
    assert_eq!(dirs, ["shards/1", "shards/2", "shards/4"]);
    let mut args = vec!["merge"];
    args.extend(dirs.iter().map(String::as_str));
    args.extend(["-o", "merged"]);
    let merged = crate::support::run_in(project.path(), &args);
    assert_eq!(merged.code, 2, "{}{}", merged.stdout, merged.stderr);
    assert!(
        merged.stderr.contains("shard(s) 3 of 4 missing"),
        "{}",
        merged.stderr
    );
}

/// The platform's release target, as scripts/install.sh names it.
fn release_target() -> Option<&'static str> {
    match std::env::consts::ARCH {
        "x86_64" => Some("x86_64-unknown-linux-musl"),
        "aarch64" => Some("aarch64-unknown-linux-musl"),
        _ => None,
    }
}

/// A release directory as scripts/release.sh lays it out, holding `program`
/// as the binary.
fn fake_release(dir: &Path, version: &str, program: &str) -> String {
    let target = release_target().unwrap();
    let name = format!("evalhost-{version}-{target}");
    let stage = dir.join("stage").join(&name);
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::write(stage.join("evalhost"), program).unwrap();
    let archive = dir.join(format!("{name}.tar.gz"));
    let ok = Command::new("tar")
        .arg("-C")
        .arg(dir.join("stage"))
        .arg("-czf")
        .arg(&archive)
        .arg(&name)
        .status()
        .unwrap();
    assert!(ok.success());
    let sum = Command::new("sha256sum").arg(&archive).output().unwrap();
    let sum = String::from_utf8(sum.stdout).unwrap();
    let hash = sum.split_whitespace().next().unwrap().to_owned();
    std::fs::write(dir.join("SHA256SUMS"), format!("{hash}  {name}.tar.gz\n")).unwrap();
    name
}

fn install(url: &str, into: &Path, version: &str) -> Run {
    Command::new("sh")
        .arg(crate::support::root().join("scripts/install.sh"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", into)
        .env("EVALHOST_RELEASE_URL", url)
        .env("EVALHOST_VERSION", version)
        .output()
        .unwrap()
        .into()
}

#[test]
fn the_installer_checks_the_archive_and_puts_evalhost_on_path() {
    if release_target().is_none() || std::env::consts::OS != "linux" {
        eprintln!("skipped: scripts/install.sh installs Linux x86_64 and aarch64 releases");
        return;
    }
    let release = tempfile::tempdir().unwrap();
    fake_release(
        release.path(),
        "9.9.9",
        "#!/bin/sh\necho evalhost 9.9.9 from the release\n",
    );

    // Over HTTP, as from a GitHub release (curl), from a loopback server.
    let port = free_port();
    let mut server = Command::new("python3")
        .args([
            "-m",
            "http.server",
            "--bind",
            "127.0.0.1",
            &port.to_string(),
            "--directory",
        ])
        .arg(release.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 serves the release");
    let url = format!("http://127.0.0.1:{port}");
    let up = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "the loopback server started");
    let home = tempfile::tempdir().unwrap();
    let r = install(&url, home.path(), "9.9.9");
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("installed evalhost 9.9.9"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("is not on PATH"), "{}", r.stdout);
    let bin = home.path().join(".local/bin/evalhost");
    let ran = Command::new(&bin).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        "evalhost 9.9.9 from the release\n"
    );

    // An archive that is not the one SHA256SUMS names is not installed.
    let tampered = tempfile::tempdir().unwrap();
    let name = fake_release(tampered.path(), "9.9.9", "#!/bin/sh\necho genuine\n");
    let sums = std::fs::read_to_string(tampered.path().join("SHA256SUMS")).unwrap();
    fake_release(tampered.path(), "9.9.9", "#!/bin/sh\necho planted\n");
    std::fs::write(tampered.path().join("SHA256SUMS"), sums).unwrap();
    let home = tempfile::tempdir().unwrap();
    let r = install(
        &format!("file://{}", tampered.path().display()),
        home.path(),
        "9.9.9",
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(&format!("{name}.tar.gz has sha256"))
            && r.stderr.contains("not installed"),
        "{}",
        r.stderr
    );
    assert!(!home.path().join(".local/bin/evalhost").exists());

    // A version the release does not have is named.
    let r = install(
        &format!("file://{}", release.path().display()),
        home.path(),
        "1.2.3",
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("lists no evalhost-1.2.3-"),
        "{}",
        r.stderr
    );
}

/// The static binary scripts/release.sh built (`dist/`), or the archive
/// `EVALHOST_RELEASE_ARCHIVE` names: it runs the quickstart with no Rust, no
/// HOME and a bare PATH, and the loader has nothing to load. Building it
/// takes a second release build (about 15 minutes on 2 cores), so CI runs
/// this only where one was built; `scripts/release.sh` then this test.
#[test]
fn the_static_release_runs_the_quickstart_without_rust() {
    let Some(target) = release_target() else {
        return;
    };
    let dist = crate::support::root().join("dist");
    let archive = std::env::var_os("EVALHOST_RELEASE_ARCHIVE")
        .map(PathBuf::from)
        .or_else(|| {
            std::fs::read_dir(&dist)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().ends_with(&format!("-{target}.tar.gz")))
        });
    let Some(archive) = archive else {
        eprintln!(
            "skipped: no static release here (scripts/release.sh builds dist/evalhost-<version>-{target}.tar.gz)"
        );
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let ok = Command::new("tar")
        .arg("-C")
        .arg(work.path())
        .arg("-xzf")
        .arg(&archive)
        .status()
        .unwrap();
    assert!(ok.success());
    let bin = std::fs::read_dir(work.path())
        .unwrap()
        .flatten()
        .map(|e| e.path().join("evalhost"))
        .find(|p| p.is_file())
        .expect("the archive holds evalhost");
    let ldd = Command::new("ldd").arg(&bin).output().unwrap();
    let said =
        String::from_utf8_lossy(&ldd.stdout).to_string() + &String::from_utf8_lossy(&ldd.stderr);
    assert!(
        said.contains("not a dynamic executable") || said.contains("statically linked"),
        "ldd: {said}"
    );
    // The quickstart, copied, run with nothing but a bare PATH.
    let quickstart = work.path().join("quickstart");
    std::fs::create_dir_all(quickstart.join(".evalhost")).unwrap();
    let src = crate::support::root().join("examples/quickstart");
    std::fs::copy(src.join("EVAL.yaml"), quickstart.join("EVAL.yaml")).unwrap();
    std::fs::copy(
        src.join(".evalhost/targets.yaml"),
        quickstart.join(".evalhost/targets.yaml"),
    )
    .unwrap();
    let r: Run = Command::new(&bin)
        .current_dir(&quickstart)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("passed"), "{}", r.stdout);
}

/// scripts/image.py: an OCI image with no daemon, pushed to a real
/// registry on loopback; its manifest, config and layer read back.
#[test]
fn the_image_is_built_without_a_daemon_and_pushed_to_a_registry() {
    let Some(binary) = crate::registry::registry_binary() else {
        return;
    };
    // Any ELF binary stands for evalhost here: the image is what is tested.
    let program = ["/usr/bin/true", "/bin/true"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("true is installed");
    let registry = crate::registry::start(&binary);
    let out = tempfile::tempdir().unwrap();
    let layout = out.path().join("image");
    let pushed = Command::new("python3")
        .arg(crate::support::root().join("scripts/image.py"))
        .arg(&program)
        .arg("--out")
        .arg(&layout)
        .args(["--tag", "0.1.0", "--plain-http", "--push"])
        .arg(format!("{}/evalhost:0.1.0", registry.addr))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&pushed.stdout).into_owned();
    assert!(
        pushed.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    let digest = said
        .lines()
        .find_map(|l| l.rsplit_once('@').map(|(_, d)| d.to_owned()))
        .expect("the pushed digest is printed");

    let get = |path: &str, accept: &str| -> (Vec<u8>, String) {
        let agent = ureq::Agent::new_with_defaults();
        let mut resp = agent
            .get(&format!("http://{}/v2/evalhost/{path}", registry.addr))
            .header("Accept", accept)
            .call()
            .unwrap();
        let digest = resp
            .headers()
            .get("Docker-Content-Digest")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        (
            resp.body_mut()
                .with_config()
                .limit(64 << 20)
                .read_to_vec()
                .unwrap(),
            digest,
        )
    };
    let (manifest, served) = get(
        "manifests/0.1.0",
        "application/vnd.oci.image.manifest.v1+json",
    );
    assert_eq!(served, digest, "the tag serves the pushed manifest");
    let manifest: Value = serde_json::from_slice(&manifest).unwrap();
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let (config, _) = get(
        &format!("blobs/{}", manifest["config"]["digest"].as_str().unwrap()),
        "*/*",
    );
    let config: Value = serde_json::from_slice(&config).unwrap();
    assert_eq!(config["os"], "linux");
    assert_eq!(config["config"]["User"], "10001:10001", "not root");
    assert_eq!(config["config"]["WorkingDir"], "/work");
    assert_eq!(config["config"]["Entrypoint"][0], "/usr/local/bin/evalhost");
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    let (layer, _) = get(
        &format!("blobs/{}", layers[0]["digest"].as_str().unwrap()),
        "*/*",
    );
    // The layer's entries, with their modes and owners.
    let unpacked = out.path().join("layer.tar.gz");
    std::fs::write(&unpacked, &layer).unwrap();
    let listing = Command::new("tar")
        .args(["--numeric-owner", "-tvzf"])
        .arg(&unpacked)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    let entry = |name: &str| {
        listing
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap_or_else(|| panic!("no {name} in the layer:\n{listing}"))
            .to_owned()
    };
    assert!(
        entry("usr/local/bin/evalhost").starts_with("-rwxr-xr-x 0/0"),
        "{listing}"
    );
    assert!(
        entry("work/").starts_with("drwxr-xr-x 10001/10001"),
        "{listing}"
    );
    assert!(
        entry("etc/passwd").starts_with("-rw-r--r-- 0/0"),
        "{listing}"
    );
    let program_size = std::fs::metadata(&program).unwrap().len().to_string();
    assert!(
        entry("usr/local/bin/evalhost").contains(&program_size),
        "{listing}"
    );
    // The same binary makes the same image (fixed times and owners).
    let again = out.path().join("again");
    let rebuilt = Command::new("python3")
        .arg(crate::support::root().join("scripts/image.py"))
        .arg(&program)
        .arg("--out")
        .arg(&again)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&rebuilt.stdout).contains(&digest));
}

/// The action's run step (scripts/action-run.sh) with the variables GitHub
/// sets: a shard of a suite with a failing case, annotations, the step
/// summary, the outputs the upload and the last step read.
#[test]
fn the_github_action_runs_a_shard_and_reports_as_github_expects() {
    let project = Project::with_mock("The capital is Paris.");
    project.write("EVAL.yaml", SUITE);
    let bin_dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_evalhost"),
        bin_dir.path().join("evalhost"),
    )
    .unwrap();
    let github = tempfile::tempdir().unwrap();
    let file = |name: &str| {
        let path = github.path().join(name);
        std::fs::write(&path, "").unwrap();
        path
    };
    let (output, path_file, summary) = (file("output"), file("path"), file("summary.md"));
    let step_with = |shard: &str, args: &str, merge: &str, merge_args: &str| -> Run {
        Command::new("bash")
            .arg(crate::support::root().join("scripts/action-run.sh"))
            .current_dir(project.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", project.path())
            .env("EVALHOST_CACHE_DIR", crate::support::shared_cache())
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_PATH", &path_file)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("EVALHOST_BIN_DIR", bin_dir.path())
            .env("INPUT_SUITE", "EVAL.yaml")
            .env("INPUT_SHARD", shard)
            .env("INPUT_ARGS", args)
            .env("INPUT_OUTPUT", "")
            .env("INPUT_ARTIFACT_NAME", "")
            .env("INPUT_MERGE", merge)
            .env("INPUT_MERGE_ARGS", merge_args)
            .output()
            .unwrap()
            .into()
    };
    let step = |shard: &str, args: &str| step_with(shard, args, "", "");
    let r = step("1/2", "-j 2");
    assert_eq!(
        r.code, 0,
        "the step passes; the action's last step fails the job: {}{}",
        r.stdout, r.stderr
    );
    let outputs = std::fs::read_to_string(&output).unwrap();
    assert!(outputs.contains("run-dir=runs/shard-1-of-2\n"), "{outputs}");
    assert!(
        outputs.contains("exit-code=1\n"),
        "a test failed: {outputs}"
    );
    assert!(
        outputs.contains("artifact-name=evalhost-shard-1-of-2\n"),
        "{outputs}"
    );
    assert_eq!(
        std::fs::read_to_string(&path_file).unwrap().trim(),
        bin_dir.path().to_str().unwrap()
    );
    assert!(
        r.stdout.contains("::error file="),
        "annotations for the failing cases: {}",
        r.stdout
    );
    assert!(
        !std::fs::read_to_string(&summary).unwrap().is_empty(),
        "a step summary"
    );
    let rows = verdicts(&project.path().join("runs/shard-1-of-2"));
    assert!(!rows.is_empty() && rows.len() < 11, "one slice: {rows:?}");
    // The other shard, then the merge job: the whole suite, as one run.
    assert_eq!(step("2/2", "").code, 0);
    std::fs::write(&output, "").unwrap();
    // `args` are `run`'s (the same for the matrix and the merge job): not
    // given to `merge`, which has `merge-args`.
    let r = step_with("", "--sandbox strict", "runs/shard-*", "--junit junit.xml");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let outputs = std::fs::read_to_string(&output).unwrap();
    assert!(
        outputs.contains("run-dir=runs/all\n") && outputs.contains("exit-code=1\n"),
        "{outputs}"
    );
    assert_eq!(verdicts(&project.path().join("runs/all")).len(), 11);
    assert!(project.path().join("junit.xml").is_file());
    let r = step_with("", "", "nothing-*", "");
    assert!(r.stdout.contains("matches no directory"), "{}", r.stdout);
    // A malformed shard is the action's error, named, not a run of everything.
    std::fs::write(&output, "").unwrap();
    let r = step("two", "");
    assert_eq!(r.code, 0);
    assert!(
        r.stdout
            .contains("::error title=evalhost::the `shard` input is K/N"),
        "{}",
        r.stdout
    );
    assert!(
        std::fs::read_to_string(&output)
            .unwrap()
            .contains("exit-code=2")
    );
}

/// Shards sharing one cache directory (as on a shared filesystem): three
/// processes at once with an empty cache write the same compiled plugins,
/// target answers and judge verdicts under the same keys. Every run grades
/// right, and a fourth run is answered whole from what they left: no entry
/// torn, none taken for another's.
#[test]
fn shards_writing_one_cache_at_once_never_read_a_torn_or_foreign_entry() {
    use crate::support::{FakeServer, Reply};
    let server = FakeServer::start_fn(|req| {
        let body: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
        if body["model"] == "judge-model" {
            // The verdict depends on the answer judged: a foreign entry
            // would show as a wrong score.
            let satisfied = req.body.contains("answer to question 1");
            Reply::chat(&format!(
                "```json\n{}\n```",
                serde_json::json!({"checks": [{"id": "right", "satisfied": satisfied, "reasoning": "read"}], "overall_reasoning": "done"})
            ))
        } else {
            let question = body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_owned();
            Reply::chat(&format!("the answer to {question}"))
        }
    });
    let project = Project::with_mock("unused");
    project.write(
        ".evalhost/targets.yaml",
        &format!(
            "targets:\n  - {{name: default, provider: openai, base_url: '{url}/v1', model: answer-model, api_key: '${{{{ EVALHOST_TEST_KEY }}}}', temperature: 0, grader_target: judge}}\n  - {{name: judge, provider: openai, base_url: '{url}/v1', model: judge-model, api_key: '${{{{ EVALHOST_TEST_KEY }}}}', temperature: 0}}\n",
            url = server.url
        ),
    );
    let mut suite = String::from("tests:\n");
    for i in 1..=6 {
        suite += &format!(
            "  - id: q{i}\n    input: question {i}\n    assertions:\n      - {{type: contains, value: 'question {i}'}}\n      - type: rubrics\n        criteria: [{{id: right, outcome: Answers question 1}}]\n"
        );
    }
    project.write("EVAL.yaml", &suite);
    let cache = tempfile::tempdir().unwrap();
    let spawn = |out: &str| {
        crate::support::evalhost()
            .current_dir(project.path())
            .env("EVALHOST_CACHE_DIR", cache.path())
            .env("EVALHOST_TEST_KEY", "sk-loopback")
            .args(["run", "EVAL.yaml", "--cache", "-q", "-o", out])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children: Vec<_> = ["a", "b", "c"].iter().map(|o| (o, spawn(o))).collect();
    for (out, child) in children {
        let r: Run = child.wait_with_output().unwrap().into();
        // q1's rubric passes, the others' fail: exit 1.
        assert_eq!(r.code, 1, "run {out}: {}{}", r.stdout, r.stderr);
    }
    let expected: Vec<(String, String)> = (1..=6)
        .map(|i| {
            (
                format!("q{i}"),
                if i == 1 { "passed" } else { "failed" }.to_owned(),
            )
        })
        .collect();
    for out in ["a", "b", "c"] {
        let got: Vec<(String, String)> = verdicts(&project.path().join(out))
            .into_iter()
            .map(|(id, status, _, _)| (id, status))
            .collect();
        assert_eq!(got, expected, "run {out}");
    }
    let before = server.requests().len();
    assert!(before <= 3 * 12, "{before} requests");
    // A fourth run: every answer and verdict from the cache, right, and the
    // plugins from the compile cache.
    let r: Run = spawn("d").wait_with_output().unwrap().into();
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        server.requests().len(),
        before,
        "the fourth run asked nothing"
    );
    let text = std::fs::read_to_string(project.path().join("d/results.jsonl")).unwrap();
    for line in text.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        let id = row["test_id"].as_str().unwrap();
        let n = id.trim_start_matches('q');
        assert_eq!(
            row["output"],
            format!("the answer to question {n}"),
            "{row}"
        );
        assert_eq!(row["cached"], true, "{row}");
    }
    assert_eq!(
        verdicts(&project.path().join("d"))
            .into_iter()
            .map(|(id, status, _, _)| (id, status))
            .collect::<Vec<_>>(),
        expected
    );
    // Nothing half-written is left behind.
    let leftovers: Vec<String> = walk(cache.path())
        .into_iter()
        .filter(|p| {
            let name = Path::new(p).file_name().unwrap().to_string_lossy();
            name.starts_with('.') || name.contains(".tmp") || name.ends_with('~')
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}
