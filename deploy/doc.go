// Package deploy holds no code: it is the home of lockd's deployment files
// (systemd units, Kubernetes manifests, Prometheus scrape configs and alert
// rules, a Grafana dashboard, the local cluster script) and of the tests that
// check them with their own tools: systemd-analyze, promtool, the Kubernetes
// API types and the Grafana dashboard schema. metrics.txt is the one list of
// the metric names those files use.
package deploy
