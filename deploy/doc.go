// Package deploy holds what ships next to the scheduler for operating it:
// Prometheus alert rules (prometheus/solocron.rules.yaml, unit-tested with
// promtool) and a Grafana dashboard (grafana/solocron.json), explained in
// docs/monitoring.md; a Helm chart (kubernetes/solocron), a systemd unit
// (systemd/solocron.service) and the container image's files and check
// (container/), explained in docs/deployment.md. The package has no Go API:
// its tests check the files (helm, systemd-analyze and promtool when
// present; SOLOCRON_REQUIRE_HELM, _SYSTEMD and _PROMTOOL make them a must).
package deploy
