#!/usr/bin/env bash
# Builds the image from the root Dockerfile with a prebuilt binary (as
# GoReleaser does) and checks what is inside, without running a container:
# no base image can be pulled and `podman run` needs cgroups, neither of
# which CI has. The image's root file system is unpacked (podman create +
# podman export) and the binary run in it with chroot, as the image's user.
#
#   deploy/container/check-image.sh        # needs podman (apt-get install podman), root for chroot
#
# Fails, naming the check, on the first thing that is not as the Dockerfile
# promises.
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() { echo "check-image: FAIL: $*" >&2; exit 1; }
ok() { echo "check-image: ok: $*"; }

work=$(mktemp -d)
image=localhost/solocron:check-$$
certs=localhost/solocron-check-certs:$$
container=""
cleanup() {
  [ -n "$container" ] && podman rm -f "$container" >/dev/null 2>&1 || true
  podman rmi -f "$image" "$certs" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

version="v0.0.0-check.$(date -u +%Y%m%d%H%M%S)"
commit=$(git rev-parse HEAD 2>/dev/null || echo 0000000000000000000000000000000000000000)
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
arch=$(go env GOARCH)

# The build context GoReleaser's dockers_v2 gives the Dockerfile: the
# binary at <os>/<arch>/scheduler, and the extra files (deploy/container).
ctx=$work/context
mkdir -p "$ctx/linux/$arch" "$ctx/deploy"
CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -buildvcs=false \
  -ldflags "-s -w -X main.version=$version -X main.commit=$commit -X main.date=$date" \
  -o "$ctx/linux/$arch/scheduler" ./cmd/scheduler
cp -r deploy/container "$ctx/deploy/container"

# The CA bundle's image: the host's bundle, imported (nothing is pulled).
bundle=/etc/ssl/certs/ca-certificates.crt
[ -s "$bundle" ] || fail "no CA bundle at $bundle on this host (apt-get install ca-certificates)"
mkdir -p "$work/certs/etc/ssl/certs"
cp "$bundle" "$work/certs/etc/ssl/certs/"
tar -C "$work/certs" -c . | podman import -q - "$certs" >/dev/null

podman build -q --layers=false --pull=never --platform "linux/$arch" -f Dockerfile --target prebuilt -t "$image" \
  --build-arg CERTS_IMAGE="$certs" \
  --build-arg VERSION="$version" --build-arg COMMIT="$commit" --build-arg DATE="$date" \
  "$ctx" >/dev/null
ok "podman build --target prebuilt"

# The image's configuration.
cfg() { podman image inspect "$image" --format "$1"; }
[ "$(cfg '{{.Config.User}}')" = "65532:65532" ] || fail "user is '$(cfg '{{.Config.User}}')', want 65532:65532 (non-root)"
[ "$(cfg '{{json .Config.Entrypoint}}')" = '["/usr/local/bin/scheduler"]' ] || fail "entrypoint is $(cfg '{{json .Config.Entrypoint}}')"
[ "$(cfg '{{json .Config.Cmd}}')" = '["run"]' ] || fail "default command is $(cfg '{{json .Config.Cmd}}'), want [\"run\"]"
cfg '{{json .Config.ExposedPorts}}' | grep -q '"9090/tcp"' || fail "port 9090 (admin) is not exposed"
[ "$(cfg '{{index .Config.Labels "org.opencontainers.image.version"}}')" = "$version" ] || fail "label org.opencontainers.image.version is not $version"
[ "$(cfg '{{index .Config.Labels "org.opencontainers.image.revision"}}')" = "$commit" ] || fail "label org.opencontainers.image.revision is not $commit"
cfg '{{json .Config.Env}}' | grep -q '"STATE_DIRECTORY=/var/lib/solocron"' || fail "STATE_DIRECTORY is not /var/lib/solocron (the embedded store's data directory)"
[ "$(cfg '{{.Config.WorkingDir}}')" = "/etc/solocron" ] || fail "working directory is not /etc/solocron (where ./solocron.yaml, the default --config, is mounted)"
ok "image config: user 65532, entrypoint + run, port 9090, OCI labels"

# The root file system.
root=$work/rootfs
mkdir -p "$root"
container=$(podman create "$image")
podman export "$container" | tar -C "$root" -x
bin=$root/usr/local/bin/scheduler
[ -x "$bin" ] || fail "no executable /usr/local/bin/scheduler"
# Static: built with cgo off (an empty base image has no C library nor loader).
go version -m "$bin" | grep -Eq '^\s+build\s+CGO_ENABLED=0$' || fail "the binary was not built with CGO_ENABLED=0: an empty base image has no C library"
[ -s "$root/etc/ssl/certs/ca-certificates.crt" ] || fail "no CA certificates at /etc/ssl/certs/ca-certificates.crt"
grep -q '^solocron:x:65532:65532:' "$root/etc/passwd" || fail "no solocron user (65532) in /etc/passwd"
[ "$(stat -c %u:%g "$root/var/lib/solocron")" = "65532:65532" ] || fail "/var/lib/solocron is owned by $(stat -c %u:%g "$root/var/lib/solocron"), want 65532:65532"
# No zoneinfo in the image: the time zones below come from the binary.
[ ! -e "$root/usr/share/zoneinfo" ] || fail "/usr/share/zoneinfo exists: the time-zone check would not test the embedded database"
ok "root file system: static binary, CA certificates, user, data directory"

# Run the binary inside it, as the image's user.
in_image() { chroot --userspec=65532:65532 "$root" /usr/local/bin/scheduler "$@"; }
out=$(in_image version) || fail "scheduler version exited $?"
grep -qx "solocron $version" <<<"$out" || fail "scheduler version does not print $version:"$'\n'"$out"
grep -q "^commit: *$commit" <<<"$out" || fail "scheduler version does not print commit $commit:"$'\n'"$out"
grep -q "^built: *$date" <<<"$out" || fail "scheduler version does not print the build date $date:"$'\n'"$out"
out=$(in_image --version) || fail "scheduler --version exited $?"
grep -qx "solocron $version" <<<"$out" || fail "scheduler --version does not print $version"
ok "scheduler version / --version: $version, $commit, $date"

mkdir -p "$root/etc/solocron"
cat >"$root/etc/solocron/solocron.yaml" <<'EOF'
jobs:
  - name: lottery
    schedule: "0 0 12 * * *"
    timezone: Asia/Shanghai
    command: ["/usr/local/bin/scheduler", "version"]
EOF
out=$(in_image validate --config /etc/solocron/solocron.yaml 2>&1) \
  || fail "scheduler validate on a table with timezone: Asia/Shanghai:"$'\n'"$out"
out=$(in_image next --config /etc/solocron/solocron.yaml --count 1 --from 2026-11-26T00:00:00Z 2>&1) \
  || fail "scheduler next:"$'\n'"$out"
grep -q '2026-11-26T04:00:00Z .*12:00:00 CST (Asia/Shanghai)' <<<"$out" || fail "scheduler next does not place noon Asia/Shanghai at 04:00 UTC:"$'\n'"$out"
ok "scheduler validate and next with timezone: Asia/Shanghai (no zoneinfo on disk)"
