// Package deploy holds what ships next to the scheduler for operating it:
// Prometheus alert rules (prometheus/solocron.rules.yaml, unit-tested with
// promtool) and a Grafana dashboard (grafana/solocron.json).
// docs/monitoring.md explains both. The package has no Go API: its tests
// check the files.
package deploy
