# The Solocron container image: a static scheduler binary on an empty base,
# running as a non-root user (65532), with CA certificates; the time-zone
# database is compiled into the binary (time/tzdata).
#
#   docker build -t solocron --build-arg VERSION=v1.2.3 \
#     --build-arg COMMIT=$(git rev-parse HEAD) --build-arg DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#   docker run --rm -v $PWD/solocron.yaml:/etc/solocron/solocron.yaml:ro -p 9090:9090 solocron
#
# (podman build works the same.) One file serves three builders, so that what
# CI checks is what users build. The last stage, the default target, compiles
# the binary in a Go image: the usual multi-stage build from a source
# checkout. --target prebuilt takes a linux binary already built, at
# <os>/<arch>/scheduler in the build context (linux/amd64/scheduler):
# GoReleaser's layout (.goreleaser.yaml, dockers_v2) and CI's (.ci/run runs
# deploy/container/check-image.sh), which cannot pull a Go image. Both add
# the binary, and only that, to the same `base` stage.
#
# Either way the context also holds deploy/container/ (the user and the data
# directory), and the CA bundle comes from the CERTS_IMAGE stage: the Go
# image by default; CI passes an image it imported from the host's bundle.
# Stages a target does not need are not built (BuildKit, Buildah), so the
# prebuilt target pulls nothing but CERTS_IMAGE.

ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm
ARG CERTS_IMAGE=${GO_IMAGE}

FROM ${CERTS_IMAGE} AS certs

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS TARGETARCH
ARG VERSION=dev COMMIT=unknown DATE=unknown
# CGO_ENABLED=0: a static binary, which an empty base image needs.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=$VERSION -X main.commit=$COMMIT -X main.date=$DATE" \
      -o /out/scheduler ./cmd/scheduler

# Everything of the image but the binary.
FROM scratch AS base
ARG VERSION=dev COMMIT=unknown DATE=unknown
LABEL org.opencontainers.image.title="solocron" \
      org.opencontainers.image.description="Cron for services with many replicas: exactly one replica runs each scheduled run, coordinated through Redis" \
      org.opencontainers.image.source="https://github.com/solocron/solocron" \
      org.opencontainers.image.documentation="https://github.com/solocron/solocron/blob/main/docs/deployment.md" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.created="${DATE}"
COPY --from=certs /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY deploy/container/passwd deploy/container/group /etc/
# The embedded store's data directory (a table without store.url): owned by
# the user, so a volume mounted here is writable (Docker copies the owner
# into a new named volume; Kubernetes uses fsGroup).
COPY --chown=65532:65532 deploy/container/state/ /var/lib/solocron/
# PATH as in the usual base images: `kubectl exec POD -- scheduler status`.
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    STATE_DIRECTORY=/var/lib/solocron
USER 65532:65532
# The default --config is ./solocron.yaml: mount the table at
# /etc/solocron/solocron.yaml and every command finds it.
WORKDIR /etc/solocron
# The admin API, console, /healthz, /readyz and /metrics (admin.listen or
# --admin-listen :9090; a non-loopback listener needs admin.token).
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/scheduler"]
CMD ["run"]

FROM base AS prebuilt
ARG TARGETPLATFORM
COPY ${TARGETPLATFORM}/scheduler /usr/local/bin/scheduler

FROM base
COPY --from=build /out/scheduler /usr/local/bin/scheduler
