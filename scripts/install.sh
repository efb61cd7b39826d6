#!/bin/sh
# Installs a prebuilt evalhost: downloads the release archive for this
# machine, checks its sha256 against the release's SHA256SUMS, and puts
# `evalhost` in a directory on PATH. No Rust needed.
#
#   EVALHOST_RELEASE_URL=https://github.com/<org>/evalhost/releases/download/v0.1.0 sh install.sh
#
# EVALHOST_RELEASE_URL  where the release's files are (required)
# EVALHOST_VERSION      the version to install (default: this script's)
# EVALHOST_INSTALL_DIR  where to put evalhost (default: ~/.local/bin)
#
# Linux on x86_64 and aarch64 (static musl binaries: any distribution).
set -eu

EVALHOST_DEFAULT_VERSION=0.1.0

fail() {
    echo "install: $*" >&2
    exit 1
}

base=${EVALHOST_RELEASE_URL:-}
[ -n "$base" ] || fail "set EVALHOST_RELEASE_URL to where the release's files are (a GitHub release's download URL, a web server, a file:// directory)"
base=${base%/}
version=${EVALHOST_VERSION:-$EVALHOST_DEFAULT_VERSION}
dir=${EVALHOST_INSTALL_DIR:-${HOME:?HOME is not set: set EVALHOST_INSTALL_DIR}/.local/bin}

os=$(uname -s)
arch=$(uname -m)
[ "$os" = Linux ] || fail "no prebuilt evalhost for $os: build it from source (cargo install --locked --path host)"
case "$arch" in
x86_64 | amd64) target=x86_64-unknown-linux-musl ;;
aarch64 | arm64) target=aarch64-unknown-linux-musl ;;
*) fail "no prebuilt evalhost for $arch: build it from source (cargo install --locked --path host)" ;;
esac
name="evalhost-$version-$target"

fetch() { # URL FILE
    case "$1" in
    file://*) cp "${1#file://}" "$2" ;;
    *)
        if command -v curl >/dev/null 2>&1; then
            curl -fsSL --retry 3 -o "$2" "$1"
        elif command -v wget >/dev/null 2>&1; then
            wget -q -O "$2" "$1"
        else
            fail "neither curl nor wget is installed"
        fi
        ;;
    esac
}

sha256() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        fail "neither sha256sum nor shasum is installed: the download cannot be checked"
    fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS" || fail "cannot download $base/SHA256SUMS"
want=$(awk -v f="$name.tar.gz" '$2 == f || $2 == "*" f { print $1 }' "$tmp/SHA256SUMS")
[ -n "$want" ] || fail "$base/SHA256SUMS lists no $name.tar.gz (no release $version for $target?)"
fetch "$base/$name.tar.gz" "$tmp/$name.tar.gz" || fail "cannot download $base/$name.tar.gz"
got=$(sha256 "$tmp/$name.tar.gz")
[ "$got" = "$want" ] || fail "$name.tar.gz has sha256 $got, but SHA256SUMS says $want: not installed"
tar -C "$tmp" -xzf "$tmp/$name.tar.gz" "$name/evalhost" || fail "$name.tar.gz holds no $name/evalhost"
mkdir -p "$dir"
# Replaced whole: a running evalhost keeps its old file.
cp "$tmp/$name/evalhost" "$dir/.evalhost.new"
chmod 755 "$dir/.evalhost.new"
mv -f "$dir/.evalhost.new" "$dir/evalhost"
echo "installed evalhost $version ($target) in $dir/evalhost (sha256 of the archive checked)"
case ":${PATH:-}:" in
*":$dir:"*) ;;
*) echo "note: $dir is not on PATH; add it: export PATH=\"$dir:\$PATH\"" ;;
esac
