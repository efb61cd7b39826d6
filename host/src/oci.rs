//! Grader plugins by digest through OCI registries, in the layout of the
//! CNCF Wasm OCI artifact spec (the one `wkg` uses): a manifest whose
//! config is `application/vnd.wasm.config.v0+json` and whose one layer is
//! the component, `application/wasm`. So the layer's digest *is* the
//! component's sha256, and a lock entry pins both the manifest digest and
//! that sha256 — the same sha256 `plugins: [{sha256}]` pins.
//!
//! - `evalhost plugin push FILE oci://HOST/NAME:TAG` uploads a component.
//! - `evalhost plugin add oci://HOST/NAME:TAG` resolves the tag to a
//!   manifest digest, downloads and verifies the component, stores it in
//!   the cache (`~/.cache/evalhost/oci/sha256/<hex>.wasm`) and records it in
//!   `evalhost.lock`.
//! - A suite names `plugins: [{oci: oci://HOST/NAME:TAG}]`; a run takes the
//!   locked digest (a moved tag changes nothing until `plugin add` again),
//!   from the cache when it is there (a locked run needs no network), else
//!   from the registry by digest, verified; `--locked` refuses a reference
//!   the lock does not have.
//!
//! Plain HTTP is used only for loopback registries (127.0.0.1, localhost,
//! [::1]), as docker and oras allow; every other registry is HTTPS.

use std::path::{Path, PathBuf};
use std::str::FromStr as _;

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::{Deserialize, Serialize};

/// The config media type of a Wasm component artifact.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of a Wasm component.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The lock file's name, beside the suite.
pub const LOCK_FILE: &str = "evalhost.lock";

/// A registry reference, `oci://HOST[:PORT]/NAME[:TAG][@sha256:…]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    /// What was written, `oci://` included.
    pub text: String,
    reference: Reference,
}

impl OciRef {
    /// Parses `oci://…`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let rest = text.strip_prefix("oci://").ok_or_else(|| {
            format!("`{text}` is not a registry reference: write oci://HOST/NAME:TAG")
        })?;
        if !rest.contains('/') {
            return Err(format!(
                "`{text}` names no repository: write oci://HOST/NAME:TAG"
            ));
        }
        let reference = Reference::from_str(rest).map_err(|e| format!("`{text}`: {e}"))?;
        Ok(Self {
            text: text.to_owned(),
            reference,
        })
    }

    fn host(&self) -> &str {
        self.reference.registry()
    }

    fn loopback(&self) -> bool {
        let host = self.host();
        let name = if let Some(rest) = host.strip_prefix('[') {
            rest.split(']').next().unwrap_or("")
        } else {
            host.rsplit_once(':').map_or(host, |(n, _)| n)
        };
        matches!(name, "127.0.0.1" | "localhost" | "::1")
    }

    fn at_digest(&self, digest: &str) -> Reference {
        Reference::with_digest(
            self.reference.registry().to_owned(),
            self.reference.repository().to_owned(),
            digest.to_owned(),
        )
    }
}

/// One locked plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockEntry {
    /// The reference as the suite writes it.
    pub reference: String,
    /// The manifest's digest (`sha256:…`) the tag pointed to when locked.
    pub manifest_digest: String,
    /// The component's sha256 (hex): the layer's digest.
    pub sha256: String,
}

/// `evalhost.lock`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lock {
    /// The format's version.
    pub version: u32,
    /// The plugins, by reference.
    pub plugins: Vec<LockEntry>,
}

impl Lock {
    /// Reads `path` (an empty lock when it does not exist).
    pub fn read(path: &Path) -> Result<Self, String> {
        // A lock file is small: at most 4 MiB, a regular file.
        match crate::safe_fs::read_regular_capped(path, 4 << 20) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| format!("{} is not an evalhost lock file: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self {
                version: 1,
                plugins: Vec::new(),
            }),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Writes it (atomically), entries sorted by reference.
    pub fn write(&mut self, path: &Path) -> Result<(), String> {
        self.version = 1;
        self.plugins.sort_by(|a, b| a.reference.cmp(&b.reference));
        let text = serde_json::to_string_pretty(self).unwrap_or_default() + "\n";
        crate::safe_fs::write_atomic(path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// The entry for `reference`.
    pub fn get(&self, reference: &str) -> Option<&LockEntry> {
        self.plugins.iter().find(|e| e.reference == reference)
    }

    fn put(&mut self, entry: LockEntry) {
        self.plugins.retain(|e| e.reference != entry.reference);
        self.plugins.push(entry);
    }
}

/// Where downloaded components are kept, by sha256.
pub fn cache_dir() -> Option<PathBuf> {
    crate::safe_fs::cache_root().map(|d| d.join("oci").join("sha256"))
}

fn cached(sha: &str) -> Option<PathBuf> {
    let path = cache_dir()?.join(format!("{sha}.wasm"));
    let bytes = crate::safe_fs::read_capped(&path, MAX_COMPONENT).ok()?;
    (crate::plugin::sha256_hex(&bytes) == sha).then_some(path)
}

fn store(bytes: &[u8]) -> Result<PathBuf, String> {
    let sha = crate::plugin::sha256_hex(bytes);
    let dir = cache_dir().ok_or("no cache directory for registry plugins")?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(format!("{sha}.wasm"));
    crate::safe_fs::write_atomic(&path, bytes)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

fn client(r: &OciRef) -> Client {
    Client::new(ClientConfig {
        protocol: if r.loopback() {
            ClientProtocol::HttpsExcept(vec![r.host().to_owned()])
        } else {
            ClientProtocol::Https
        },
        ..ClientConfig::default()
    })
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> Result<T, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the registry client: {e}"))?;
    Ok(rt.block_on(f))
}

/// The hosts the operator's registry credentials are for:
/// `EVALHOST_REGISTRY_HOSTS`, a comma-separated list of `HOST[:PORT]`.
fn credential_hosts() -> Vec<String> {
    std::env::var("EVALHOST_REGISTRY_HOSTS")
        .unwrap_or_default()
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect()
}

/// Credentials from the environment (`EVALHOST_REGISTRY_USER`,
/// `EVALHOST_REGISTRY_PASSWORD`) for `r`'s registry, when the operator
/// listed that registry in `EVALHOST_REGISTRY_HOSTS`; else anonymous. A
/// suite chooses the references it names (and ships the lock that pins
/// them), so credentials never go to a host because a suite named it.
fn auth(r: &OciRef) -> RegistryAuth {
    match (
        std::env::var("EVALHOST_REGISTRY_USER"),
        std::env::var("EVALHOST_REGISTRY_PASSWORD"),
    ) {
        (Ok(u), Ok(p)) if credential_hosts().contains(&r.host().to_ascii_lowercase()) => {
            RegistryAuth::Basic(u, p)
        }
        _ => RegistryAuth::Anonymous,
    }
}

/// Why a registry refused an anonymous request, with what would fix it
/// when the operator has credentials that were not sent.
fn auth_hint(r: &OciRef) -> String {
    let has = std::env::var_os("EVALHOST_REGISTRY_USER").is_some();
    if has && !credential_hosts().contains(&r.host().to_ascii_lowercase()) {
        format!(
            " (EVALHOST_REGISTRY_USER is set, but credentials are sent only to the registries listed in EVALHOST_REGISTRY_HOSTS, and `{}` is not one)",
            r.host()
        )
    } else {
        String::new()
    }
}

/// The largest component a registry may send (as for a plugin file).
const MAX_COMPONENT: u64 = 256 << 20;

/// A sink that takes at most `limit` bytes; more is an error, so a
/// registry that streams past the size its manifest gave is cut off.
struct Bounded {
    bytes: Vec<u8>,
    limit: u64,
}

impl tokio::io::AsyncWrite for Bounded {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.bytes.len() as u64 + buf.len() as u64 > self.limit {
            return std::task::Poll::Ready(Err(std::io::Error::other(format!(
                "the registry sent more than the {} bytes the manifest gives",
                self.limit
            ))));
        }
        self.bytes.extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// Pushes the component `wasm` to `r`; returns the manifest digest and the
/// component's sha256.
pub fn push(wasm: &[u8], r: &OciRef) -> Result<(String, String), String> {
    let sha = crate::plugin::sha256_hex(wasm);
    let config = Config::new(
        serde_json::json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [format!("sha256:{sha}")],
        })
        .to_string()
        .into_bytes(),
        CONFIG_MEDIA_TYPE.to_owned(),
        None,
    );
    let layers = vec![ImageLayer::new(
        wasm.to_vec(),
        LAYER_MEDIA_TYPE.to_owned(),
        None,
    )];
    let manifest = OciImageManifest::build(&layers, &config, None);
    let c = client(r);
    let a = auth(r);
    block_on(async {
        c.push(&r.reference, &layers, config, &a, Some(manifest))
            .await
            .map_err(|e| format!("pushing to {}: {e}", r.text))?;
        c.fetch_manifest_digest(&r.reference, &a)
            .await
            .map_err(|e| format!("reading back {}: {e}", r.text))
    })?
    .map(|digest| (digest, sha))
}

/// The manifest digest `r` points to now, and the component's sha256 its
/// manifest names.
fn resolve(
    c: &Client,
    at: &Reference,
    r: &OciRef,
    text: &str,
) -> Result<(OciImageManifest, String), String> {
    let fail = |e: String| {
        format!(
            "{text}: the registry did not answer with a manifest: {e}{}",
            auth_hint(r)
        )
    };
    let credentials = auth(r);
    // The client authenticates (a bearer token, or Basic credentials for a
    // listed host); the manifest itself is read here, capped: a registry
    // must not stream an endless manifest into memory.
    let token = block_on(c.auth(at, &credentials, oci_client::RegistryOperation::Pull))?
        .map_err(|e| fail(e.to_string()))?;
    let scheme = if r.loopback() { "http" } else { "https" };
    let url = format!(
        "{scheme}://{}/v2/{}/manifests/{}",
        at.resolve_registry(),
        at.repository(),
        at.digest().or(at.tag()).unwrap_or("latest")
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(60)))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let mut request = agent.get(&url).header(
        "Accept",
        "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json",
    );
    match (&token, &credentials) {
        (Some(t), _) => request = request.header("Authorization", &format!("Bearer {t}")),
        (None, RegistryAuth::Basic(u, p)) => {
            use base64::Engine as _;
            let basic = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
            request = request.header("Authorization", &format!("Basic {basic}"));
        }
        _ => {}
    }
    let mut response = request.call().map_err(|e| fail(e.to_string()))?;
    if !response.status().is_success() {
        return Err(fail(format!("HTTP {}", response.status().as_u16())));
    }
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_MANIFEST)
        .read_to_vec()
        .map_err(|e| fail(format!("{e} (a manifest is at most {MAX_MANIFEST} bytes)")))?;
    let digest = format!("sha256:{}", crate::plugin::sha256_hex(&body));
    if let Some(want) = at.digest()
        && want != digest
    {
        return Err(fail(format!(
            "the manifest's digest is {digest}, not the {want} asked for"
        )));
    }
    let manifest: OciImageManifest = serde_json::from_slice(&body)
        .map_err(|e| fail(format!("not an OCI image manifest: {e}")))?;
    Ok((manifest, digest))
}

/// The largest manifest read (one config and one layer need a few hundred
/// bytes).
const MAX_MANIFEST: u64 = 4 << 20;

fn component_of(manifest: &OciImageManifest, text: &str) -> Result<String, String> {
    match manifest.layers.as_slice() {
        [layer] if layer.media_type == LAYER_MEDIA_TYPE => layer
            .digest
            .strip_prefix("sha256:")
            .map(str::to_owned)
            .ok_or_else(|| format!("{text}: the component's digest is not sha256")),
        _ => Err(format!(
            "{text} is not a Wasm component artifact (one `{LAYER_MEDIA_TYPE}` layer)"
        )),
    }
}

/// Downloads the component of `manifest` at `at` and checks it is `sha`.
fn download(
    c: &Client,
    at: &Reference,
    manifest: &OciImageManifest,
    sha: &str,
    text: &str,
) -> Result<PathBuf, String> {
    let layer = &manifest.layers[0];
    let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
    if size == 0 || size > MAX_COMPONENT {
        return Err(format!(
            "{text}: the manifest gives the component a size of {} bytes; a plugin is at most {MAX_COMPONENT} bytes; refused",
            layer.size
        ));
    }
    let mut sink = Bounded {
        bytes: Vec::new(),
        limit: size,
    };
    block_on(c.pull_blob(at, layer, &mut sink))?
        .map_err(|e| format!("{text}: downloading the component: {e}"))?;
    let bytes = sink.bytes;
    if bytes.len() as u64 != size {
        return Err(format!(
            "{text}: the registry sent {} bytes, not the {size} its manifest gives; refused",
            bytes.len()
        ));
    }
    let got = crate::plugin::sha256_hex(&bytes);
    if got != sha {
        return Err(format!(
            "{text}: the registry served a component with sha256 {got}, not the {sha} it is pinned to; refused"
        ));
    }
    store(&bytes)
}

/// `plugin add`: resolves `r`'s tag now, downloads and verifies the
/// component, caches it and records it in the lock at `lock_path`.
pub fn add(r: &OciRef, lock_path: &Path) -> Result<LockEntry, String> {
    let c = client(r);
    let (manifest, digest) = resolve(&c, &r.reference, r, &r.text)?;
    let sha = component_of(&manifest, &r.text)?;
    download(&c, &r.at_digest(&digest), &manifest, &sha, &r.text)?;
    let entry = LockEntry {
        reference: r.text.clone(),
        manifest_digest: digest,
        sha256: sha,
    };
    let mut lock = Lock::read(lock_path)?;
    lock.put(entry.clone());
    lock.write(lock_path)?;
    Ok(entry)
}

/// The component a suite's `oci:` reference names, for a run: the locked
/// digest, from the cache or else from the registry by digest (verified).
/// Not locked: refused with `locked`, else added to the lock first.
pub fn component(
    reference: &str,
    lock_path: &Path,
    locked: bool,
) -> Result<(PathBuf, String), String> {
    let r = OciRef::parse(reference)?;
    let lock = Lock::read(lock_path)?;
    let entry = match lock.get(reference) {
        Some(e) => e.clone(),
        None if locked => {
            return Err(format!(
                "{reference} is not in {} and --locked refuses anything else; run `evalhost plugin add {reference}` and commit the lock file",
                lock_path.display()
            ));
        }
        None => add(&r, lock_path)?,
    };
    if let Some(path) = cached(&entry.sha256) {
        return Ok((path, entry.sha256));
    }
    let c = client(&r);
    let at = r.at_digest(&entry.manifest_digest);
    let (manifest, _) = resolve(&c, &at, &r, reference).map_err(|e| {
        format!(
            "{e} (the locked component is not in the cache either, so the run cannot go on offline)"
        )
    })?;
    let sha = component_of(&manifest, reference)?;
    if sha != entry.sha256 {
        return Err(format!(
            "{reference}: the manifest {} names the component sha256 {sha}, but {} pins {}; refused",
            entry.manifest_digest,
            lock_path.display(),
            entry.sha256
        ));
    }
    let path = download(&c, &at, &manifest, &entry.sha256, reference)?;
    Ok((path, entry.sha256))
}

/// The lock file for a suite in `dir`: the nearest `evalhost.lock` up to
/// the project root, else `dir/evalhost.lock`.
pub fn lock_for(dir: &Path, project_root: &Path) -> PathBuf {
    dir.ancestors()
        .take_while(|d| d.starts_with(project_root))
        .map(|d| d.join(LOCK_FILE))
        .find(|p| p.is_file())
        .unwrap_or_else(|| dir.join(LOCK_FILE))
}
