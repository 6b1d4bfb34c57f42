package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// ruleFile is a Prometheus rule file, as far as these tests look into it.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// query is one PromQL query of a deploy file, and where it is.
type query struct{ where, expr string }

const rulesPath = "prometheus/lockd-rules.yml"

// loadRules decodes the alert rules strictly (an unknown field fails).
func loadRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	if err := yaml.UnmarshalStrict(readFile(t, rulesPath), &f); err != nil {
		t.Fatalf("%s: %v", rulesPath, err)
	}
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

func ruleQueries(t *testing.T) []query {
	var qs []query
	for _, r := range loadRules(t) {
		qs = append(qs, query{rulesPath + ": " + r.Alert + r.Record, r.Expr})
	}
	return qs
}

// TestPrometheusConfigs: the example scrape configurations (and the rule
// files they name) pass `promtool check config`.
func TestPrometheusConfigs(t *testing.T) {
	promtool := tool(t, "promtool", "prometheus")
	for _, f := range []string{"prometheus.yml", "prometheus-kubernetes.yml"} {
		if out, err := run(t, "prometheus", nil, promtool, "check", "config", f); err != nil {
			t.Errorf("promtool check config %s: %v\n%s", f, err, out)
		}
	}
}

// TestAlertRules: the rules pass `promtool check rules` and their unit tests
// (`promtool test rules`); the alerts the operators' guide promises exist,
// each with a severity, a summary and a description, a unit test, and a
// section in docs/operations.md.
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "promtool", "prometheus")
	if out, err := run(t, "prometheus", nil, promtool, "check", "rules", filepath.Base(rulesPath)); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := run(t, "prometheus", nil, promtool, "test", "rules", "lockd-rules.test.yml"); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}

	tests := string(readFile(t, "prometheus/lockd-rules.test.yml"))
	docs, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatalf("the alerts' runbook: %v", err)
	}
	alerts := map[string]bool{}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			continue
		}
		alerts[r.Alert] = true
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: needs a summary and a description annotation", r.Alert)
		}
		if !strings.Contains(tests, "alertname: "+r.Alert+"\n") {
			t.Errorf("%s has no unit test in lockd-rules.test.yml", r.Alert)
		}
		if !strings.Contains(string(docs), r.Alert) {
			t.Errorf("%s is not explained in docs/operations.md", r.Alert)
		}
	}
	for _, want := range []string{"LockdNoLeader", "LockdNodeNotReady", "LockdLeaderFlapping", "LockdFsyncSlow", "LockdLeaseExpiredWhileWorking"} {
		if !alerts[want] {
			t.Errorf("alert %s is missing from %s", want, rulesPath)
		}
	}
}
