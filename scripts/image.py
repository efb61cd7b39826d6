#!/usr/bin/env python3
"""Builds evalhost's container image without a daemon, and pushes it.

    scripts/image.py BINARY --out DIR [--tag TAG] [--push REGISTRY/REPOSITORY:TAG] [--plain-http]

BINARY is a static evalhost (scripts/release.sh: target/<target>/release/
evalhost, or the one in a dist/ archive). The image is written as an OCI
image layout in DIR (`oci-layout`, `index.json`, `blobs/sha256/…`: what
umoci, skopeo and podman read) and has one layer on an empty base:

    /usr/local/bin/evalhost      the binary (0755)
    /etc/passwd, /etc/group      root, and the user `evalhost` (10001)
    /home/evalhost               its home (caches go to ~/.cache)
    /work                        the working directory, owned by evalhost
    /tmp                         1777
    /etc/ssl/certs/ca-certificates.crt   this machine's CA bundle, if it has one

Config: user 10001:10001, working directory /work, entrypoint evalhost.
Layers and config are built byte for byte the same from the same binary
(fixed times and owners), so the image's digest depends on the binary only.

--push sends the blobs and the manifest to a registry with the OCI
distribution API (HTTPS; --plain-http for a loopback registry) and prints
the manifest's digest. Credentials: EVALHOST_REGISTRY_USER and
EVALHOST_REGISTRY_PASSWORD (HTTP basic), as `evalhost plugin push` takes them.
"""

import argparse
import base64
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request

UID = 10001
MTIME = 0  # fixed: the same binary makes the same image


def elf_arch(path):
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        sys.exit(f"image: {path} is not an ELF binary (give the static evalhost scripts/release.sh builds)")
    machine = int.from_bytes(head[18:20], "little")
    arch = {0x3E: "amd64", 0xB7: "arm64"}.get(machine)
    if arch is None:
        sys.exit(f"image: {path} is for ELF machine {machine:#x}, not x86_64 or aarch64")
    return arch


def layer(binary):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add_dir(name, mode, uid=0):
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode, info.uid, info.gid, info.mtime = mode, uid, uid, MTIME
            tar.addfile(info)

        def add_file(name, data, mode, uid=0):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid, info.gid, info.mtime = len(data), mode, uid, uid, MTIME
            tar.addfile(info, io.BytesIO(data))

        for d in ["etc", "etc/ssl", "etc/ssl/certs", "home", "usr", "usr/local", "usr/local/bin"]:
            add_dir(d, 0o755)
        add_dir("home/evalhost", 0o755, UID)
        add_dir("work", 0o755, UID)
        add_dir("tmp", 0o1777)
        add_file("etc/passwd", f"root:x:0:0:root:/root:/sbin/nologin\nevalhost:x:{UID}:{UID}:evalhost:/home/evalhost:/sbin/nologin\n".encode(), 0o644)
        add_file("etc/group", f"root:x:0:\nevalhost:x:{UID}:\n".encode(), 0o644)
        ca = "/etc/ssl/certs/ca-certificates.crt"
        if os.path.isfile(ca):
            with open(ca, "rb") as f:
                add_file("etc/ssl/certs/ca-certificates.crt", f.read(), 0o644)
        with open(binary, "rb") as f:
            add_file("usr/local/bin/evalhost", f.read(), 0o755)
    raw = buf.getvalue()
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=MTIME, compresslevel=6) as g:
        g.write(raw)
    return raw, gz.getvalue()


def sha(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def build(binary, out, tag):
    arch = elf_arch(binary)
    raw, compressed = layer(binary)
    config = {
        "architecture": arch,
        "os": "linux",
        "config": {
            "User": f"{UID}:{UID}",
            "WorkingDir": "/work",
            "Entrypoint": ["/usr/local/bin/evalhost"],
            "Cmd": ["--help"],
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/evalhost"],
            "Labels": {"org.opencontainers.image.title": "evalhost"},
        },
        "rootfs": {"type": "layers", "diff_ids": [sha(raw)]},
        "created": "1970-01-01T00:00:00Z",
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "scripts/image.py: the static evalhost on an empty base"}],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(config_bytes), "size": len(config_bytes)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": sha(compressed), "size": len(compressed)}],
    }
    manifest_bytes = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    blobs = os.path.join(out, "blobs", "sha256")
    os.makedirs(blobs, exist_ok=True)
    for data in (compressed, config_bytes, manifest_bytes):
        with open(os.path.join(blobs, sha(data).split(":", 1)[1]), "wb") as f:
            f.write(data)
    with open(os.path.join(out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": manifest["mediaType"], "digest": sha(manifest_bytes), "size": len(manifest_bytes),
                       "platform": {"architecture": arch, "os": "linux"},
                       "annotations": {"org.opencontainers.image.ref.name": tag}}],
    }
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f)
    return manifest_bytes, [(compressed, manifest["layers"][0]["mediaType"]), (config_bytes, manifest["config"]["mediaType"])]


def push(ref, manifest_bytes, blobs, plain_http):
    if "/" not in ref:
        sys.exit(f"image: --push takes REGISTRY/REPOSITORY:TAG, got {ref}")
    host, rest = ref.split("/", 1)
    repo, _, tag = rest.rpartition(":")
    if not repo or not tag or "/" in tag:
        sys.exit(f"image: --push takes REGISTRY/REPOSITORY:TAG, got {ref}")
    base = f"{'http' if plain_http else 'https'}://{host}/v2/{repo}"
    headers = {}
    user, password = os.environ.get("EVALHOST_REGISTRY_USER"), os.environ.get("EVALHOST_REGISTRY_PASSWORD")
    if user and password:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def call(method, url, data=None, extra=None):
        req = urllib.request.Request(url, data=data, method=method, headers={**headers, **(extra or {})})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    for data, _ in blobs:
        digest = sha(data)
        status, _, _ = call("HEAD", f"{base}/blobs/{digest}")
        if status == 200:
            continue
        status, hdrs, body = call("POST", f"{base}/blobs/uploads/")
        if status != 202:
            sys.exit(f"image: {host} refused an upload to {repo} (HTTP {status}): {body[:300]!r}")
        location = urllib.parse.urljoin(f"{base}/blobs/uploads/", hdrs["Location"])
        sep = "&" if "?" in location else "?"
        status, _, body = call("PUT", f"{location}{sep}digest={digest}", data,
                               {"Content-Type": "application/octet-stream", "Content-Length": str(len(data))})
        if status != 201:
            sys.exit(f"image: {host} did not take blob {digest} (HTTP {status}): {body[:300]!r}")
    status, hdrs, body = call("PUT", f"{base}/manifests/{tag}", manifest_bytes,
                              {"Content-Type": "application/vnd.oci.image.manifest.v1+json"})
    if status != 201:
        sys.exit(f"image: {host} did not take the manifest (HTTP {status}): {body[:300]!r}")
    digest = hdrs.get("Docker-Content-Digest") or sha(manifest_bytes)
    if digest != sha(manifest_bytes):
        sys.exit(f"image: {host} stored the manifest as {digest}, not {sha(manifest_bytes)}")
    return digest


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("binary")
    p.add_argument("--out", required=True, help="the OCI image layout directory to write")
    p.add_argument("--tag", default="latest", help="the layout's name for the image (default: latest)")
    p.add_argument("--push", metavar="REGISTRY/REPOSITORY:TAG")
    p.add_argument("--plain-http", action="store_true", help="the registry speaks HTTP (a loopback registry)")
    args = p.parse_args()
    manifest_bytes, blobs = build(args.binary, args.out, args.tag)
    print(f"image: {args.out} (OCI layout), manifest {sha(manifest_bytes)}")
    if args.push:
        digest = push(args.push, manifest_bytes, blobs, args.plain_http)
        print(f"pushed {args.push}@{digest}")


if __name__ == "__main__":
    main()
