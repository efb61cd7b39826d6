//! The plugin SDKs this evalhost was built with, carried in the binary so
//! that `plugin new` writes a project that builds offline from what the
//! binary holds: the SDK goes beside the project (`vendor/`), and the
//! project depends on it by path until the SDKs are published.
//!
//! An explicit list rather than a whole directory (`include_dir`): a
//! checkout's `plugin-sdk/js/node_modules` or `__pycache__` must never be
//! embedded. A test checks the list against the files git tracks.

use std::path::Path;

/// One SDK: where `plugin new` writes it under the project, and its files.
pub struct Sdk {
    /// The directory under the project (`vendor/…`).
    pub dir: &'static str,
    /// The files, relative to `dir`, with their text.
    pub files: &'static [(&'static str, &'static str)],
    /// Its `Cargo.toml` inherits from evalhost's workspace: written through
    /// [`standalone_manifest`].
    pub inherits: bool,
}

macro_rules! sdk_files {
    ($base:literal; $($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!("../../../plugin-sdk/", $base, $file)))),*]
    };
}

/// The Rust SDK (`evalhost-plugin-sdk`). Its `Cargo.toml` inherits from
/// evalhost's workspace, so it is written through [`standalone_manifest`].
pub const RUST: Sdk = Sdk {
    dir: "vendor/evalhost-plugin-sdk",
    files: sdk_files!(""; "Cargo.toml", "README.md", "src/capability.rs", "src/lib.rs",
        "src/request.rs", "src/response.rs", "src/testing.rs", "wit/grader.wit"),
    inherits: true,
};

/// The Python SDK (`evalhost-plugin`), installed with `pip install`.
pub const PYTHON: Sdk = Sdk {
    dir: "vendor/evalhost-plugin",
    files: sdk_files!("python/"; "README.md", "pyproject.toml", "evalhost_plugin/__init__.py",
        "evalhost_plugin/build.py", "evalhost_plugin/testing.py",
        "evalhost_plugin/wit/grader.wit"),
    inherits: false,
};

/// The JavaScript SDK (`@evalhost/plugin-sdk`), installed by `npm install`.
pub const JS: Sdk = Sdk {
    dir: "vendor/evalhost-plugin-sdk",
    files: sdk_files!("js/"; "README.md", "package.json", "index.js", "index.d.ts",
        "testing.js", "testing.d.ts", "build.js", "wit/grader.wit"),
    inherits: false,
};

/// evalhost's workspace manifest, for the values the SDK inherits.
const WORKSPACE_MANIFEST: &str = include_str!("../../../Cargo.toml");

/// The Rust SDK's manifest as a crate of its own: each `key.workspace =
/// true` replaced by the workspace's value, the workspace lints left out
/// (they are evalhost's, not a plugin author's).
pub fn standalone_manifest(manifest: &str, workspace: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut lines = manifest.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "[lints]" && lines.peek().is_some_and(|l| l.trim() == "workspace = true")
        {
            lines.next();
            continue;
        }
        let Some(key) = line.trim().strip_suffix(".workspace = true") else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let value = workspace
            .lines()
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.split(" #").next().unwrap_or(v).trim())
            .ok_or_else(|| format!("the workspace manifest has no `{key}`"))?;
        out.push_str(&format!("{key} = {value}\n"));
    }
    Ok(out.trim_end().to_owned() + "\n")
}

/// Writes `sdk` under `root` (the new project).
pub fn write(root: &Path, sdk: &Sdk) -> Result<(), String> {
    for (file, text) in sdk.files {
        let path = root.join(sdk.dir).join(file);
        let text = if sdk.inherits && *file == "Cargo.toml" {
            standalone_manifest(text, WORKSPACE_MANIFEST)?
        } else {
            (*text).to_owned()
        };
        path.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file git tracks under an SDK's directory is embedded, and no
    /// other: a file added to an SDK is not forgotten by `plugin new`.
    #[test]
    fn the_embedded_sdks_are_the_tracked_files() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let out = std::process::Command::new("git")
            .current_dir(&repo)
            .args(["ls-files", "plugin-sdk"])
            .output()
            .ok()
            .filter(|o| o.status.success() && !o.stdout.is_empty());
        let Some(out) = out else {
            eprintln!("not a git checkout: the list is not checked");
            return;
        };
        let tracked: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        let mut embedded = std::collections::BTreeSet::new();
        for (sdk, base) in [
            (&RUST, "plugin-sdk/"),
            (&PYTHON, "plugin-sdk/python/"),
            (&JS, "plugin-sdk/js/"),
        ] {
            for (file, text) in sdk.files {
                let path = format!("{base}{file}");
                assert_eq!(
                    std::fs::read_to_string(repo.join(&path)).unwrap(),
                    *text,
                    "{path}"
                );
                embedded.insert(path);
            }
        }
        assert_eq!(embedded, tracked);
    }

    /// The standalone manifest inherits nothing and names the workspace's
    /// versions of the SDK's dependencies.
    #[test]
    fn the_rust_sdk_manifest_stands_alone() {
        let manifest = standalone_manifest(RUST.files[0].1, WORKSPACE_MANIFEST).unwrap();
        assert!(!manifest.contains("workspace"), "{manifest}");
        assert!(manifest.contains("\nedition = \"2024\"\n"), "{manifest}");
        assert!(
            manifest.contains("\nwit-bindgen = { version = \"0."),
            "{manifest}"
        );
        assert!(
            manifest.contains("\nserde_json = { version = \"1\""),
            "{manifest}"
        );
        assert!(
            manifest.contains("\nlicense = \"MIT OR Apache-2.0\"\n"),
            "{manifest}"
        );
        let err = standalone_manifest("x.workspace = true\n", "[workspace]\n").unwrap_err();
        assert!(err.contains("`x`"), "{err}");
    }
}
