#!/usr/bin/env bash
# Builds evalhost's release: a fully static Linux binary (musl; the built-in
# plugins are inside it) per target, packed as
#
#   dist/evalhost-<version>-<target>.tar.gz      (evalhost, README.md, LICENSE if any)
#   dist/evalhost-<version>-<target>.tar.gz.sha256
#   dist/SHA256SUMS                               (every archive)
#   dist/install.sh                               (scripts/install.sh, this version written in)
#
#   scripts/release.sh [TARGET...]
#
# Default targets: x86_64-unknown-linux-musl, and aarch64-unknown-linux-musl
# where a C compiler for it (aarch64-linux-musl-gcc) is on PATH — the
# built-in graders' C dependencies (SQLite, mimalloc, BLAKE3, aws-lc) need
# one. On Debian: `apt-get install musl-tools` for x86_64.
#
# Each binary is checked to be static (no interpreter, `ldd` has nothing to
# load) before it is packed. Publishing the files (a GitHub release, a web
# server) is left to the caller; scripts/install.sh downloads from there.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
[ -n "$version" ] || { echo "release: no workspace version in Cargo.toml" >&2; exit 2; }

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(x86_64-unknown-linux-musl)
    if command -v aarch64-linux-musl-gcc >/dev/null 2>&1; then
        targets+=(aarch64-unknown-linux-musl)
    else
        echo "release: aarch64-unknown-linux-musl skipped: no aarch64-linux-musl-gcc on this machine" >&2
    fi
fi

toolchain=$(sed -n 's/^channel = "\(.*\)"/\1/p' rust-toolchain.toml)
mkdir -p dist
for target in "${targets[@]}"; do
    case "$target" in
    x86_64-unknown-linux-musl) cc=musl-gcc ;;
    aarch64-unknown-linux-musl) cc=aarch64-linux-musl-gcc ;;
    *)
        echo "release: $target is not a target this script builds (x86_64-unknown-linux-musl, aarch64-unknown-linux-musl)" >&2
        exit 2
        ;;
    esac
    command -v "$cc" >/dev/null 2>&1 || {
        echo "release: $cc is needed to build for $target (Debian: apt-get install musl-tools)" >&2
        exit 3
    }
    rustup target add --toolchain "$toolchain" "$target" >/dev/null
    lower=$(echo "$target" | tr '-' '_')
    echo "release: building evalhost $version for $target" >&2
    # The C dependencies compile against musl's headers ($cc); the link is
    # Rust's own self-contained static one (musl-gcc as the linker would
    # make a dynamically linked PIE that wants /lib/ld-musl-*.so.1).
    env "CC_$lower=$cc" \
        cargo build --release --locked --target "$target" -p evalhost
    bin="target/$target/release/evalhost"

    # Static: no program interpreter, nothing for the loader to load.
    if readelf -l "$bin" | grep -q "Requesting program interpreter"; then
        echo "release: $bin asks for a program interpreter: it is not static" >&2
        exit 4
    fi
    if readelf -d "$bin" 2>/dev/null | grep -q "(NEEDED)"; then
        echo "release: $bin needs shared libraries: $(readelf -d "$bin" | grep NEEDED)" >&2
        exit 4
    fi

    name="evalhost-$version-$target"
    stage=$(mktemp -d)
    mkdir "$stage/$name"
    cp "$bin" "$stage/$name/evalhost"
    strip "$stage/$name/evalhost" 2>/dev/null || true
    cp README.md "$stage/$name/"
    [ -f LICENSE ] && cp LICENSE "$stage/$name/"
    tar -C "$stage" -czf "dist/$name.tar.gz" "$name"
    rm -rf "$stage"
    (cd dist && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
    echo "release: dist/$name.tar.gz" >&2
done

(cd dist && cat ./*.tar.gz.sha256 >SHA256SUMS)
sed "s/^EVALHOST_DEFAULT_VERSION=.*/EVALHOST_DEFAULT_VERSION=$version/" scripts/install.sh >dist/install.sh
chmod +x dist/install.sh
echo "release: dist/SHA256SUMS, dist/install.sh" >&2
