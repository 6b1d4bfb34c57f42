package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/lockd/lockd/server"
)

// metricDecl is one line of metrics.txt.
type metricDecl struct {
	name   string
	typ    string          // counter, gauge, histogram
	state  string          // exported, planned
	labels map[string]bool // label name -> planned (marked * in the file)
}

// loadMetrics parses metrics.txt, failing the test on a malformed line.
func loadMetrics(t *testing.T) map[string]metricDecl {
	t.Helper()
	decls := map[string]metricDecl{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, "metrics.txt")))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("metrics.txt:%d: want `name type state labels`, got %q", n, line)
		}
		d := metricDecl{name: f[0], typ: f[1], state: f[2], labels: map[string]bool{}}
		if !model.IsValidLegacyMetricName(d.name) || !strings.HasPrefix(d.name, "lockd_") {
			t.Errorf("metrics.txt:%d: %q is not a lockd_ metric name", n, d.name)
		}
		switch d.typ {
		case "counter", "gauge", "histogram":
		default:
			t.Errorf("metrics.txt:%d: type %q is not counter, gauge or histogram", n, d.typ)
		}
		if d.state != "exported" && d.state != "planned" {
			t.Errorf("metrics.txt:%d: state %q is not exported or planned", n, d.state)
		}
		if f[3] != "-" {
			for _, l := range strings.Split(f[3], ",") {
				name, planned := strings.CutSuffix(l, "*")
				d.labels[name] = planned
			}
		}
		if _, dup := decls[d.name]; dup {
			t.Errorf("metrics.txt:%d: %s is listed twice", n, d.name)
		}
		decls[d.name] = d
	}
	return decls
}

// prometheusOwn are series Prometheus makes itself, usable in any query.
var prometheusOwn = map[string]bool{"up": true}

// targetLabels are the labels Prometheus attaches to every scraped series.
var targetLabels = map[string]bool{"job": true, "instance": true}

var (
	metricRef  = regexp.MustCompile(`\b(lockd_[a-zA-Z0-9_]+|up)\b`)
	groupingRe = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	matchersRe = regexp.MustCompile(`\{([^}]*)\}`)
	matcherRe  = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
)

// checkQuery checks one PromQL query (template variables already
// substituted) against the declarations: every metric it names is declared
// (a histogram by its _bucket, _sum or _count series), and every label it
// groups or filters by is a target label, le of a histogram, or declared for
// one of its metrics. It returns the declared names the query uses.
func checkQuery(t *testing.T, where, expr string, decls map[string]metricDecl) []string {
	t.Helper()
	var used []string
	allowed := map[string]bool{}
	for l := range targetLabels {
		allowed[l] = true
	}
	for _, m := range metricRef.FindAllString(expr, -1) {
		if prometheusOwn[m] {
			continue
		}
		d, ok := decls[m]
		if !ok {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, cut := strings.CutSuffix(m, suffix); cut {
					if hd, hok := decls[base]; hok && hd.typ == "histogram" {
						d, ok = hd, true
						if suffix == "_bucket" {
							allowed["le"] = true
						}
					}
				}
			}
		}
		if !ok {
			t.Errorf("%s: %s is not in metrics.txt (query %q)", where, m, expr)
			continue
		}
		if d.typ == "histogram" && m == d.name {
			t.Errorf("%s: histogram %s is used by its bare name; query its _bucket, _sum or _count series (query %q)", where, m, expr)
		}
		used = append(used, d.name)
		for l := range d.labels {
			allowed[l] = true
		}
	}
	var labels []string
	for _, g := range groupingRe.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
	}
	for _, g := range matchersRe.FindAllStringSubmatch(expr, -1) {
		for _, part := range strings.Split(g[1], ",") {
			if m := matcherRe.FindStringSubmatch(part); m != nil {
				labels = append(labels, m[1])
			}
		}
	}
	for _, l := range labels {
		if !allowed[l] {
			t.Errorf("%s: label %q is not declared in metrics.txt for any metric of %q", where, l, expr)
		}
	}
	return used
}

// TestMetricsAreDeclared: every metric and label that the alert rules and the
// dashboard query is in metrics.txt, and every name there is queried
// somewhere.
func TestMetricsAreDeclared(t *testing.T) {
	decls := loadMetrics(t)
	used := map[string]bool{}
	for _, q := range ruleQueries(t) {
		for _, n := range checkQuery(t, q.where, q.expr, decls) {
			used[n] = true
		}
	}
	for _, q := range dashboardQueries(t) {
		for _, n := range checkQuery(t, q.where, q.expr, decls) {
			used[n] = true
		}
	}
	var planned []string
	for _, name := range sortedKeys(decls) {
		if !used[name] {
			t.Errorf("metrics.txt lists %s, but no rule or dashboard panel queries it", name)
		}
		if decls[name].state == "planned" {
			planned = append(planned, name)
		}
	}
	t.Logf("used by deploy/ but not exported by lockd yet: %s", strings.Join(planned, ", "))
}

// scrape reads and parses a node's /metrics.
func scrape(t *testing.T, httpAddr string) map[string]*dto.MetricFamily {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// TestMetricsMatchLockd scrapes a single-node lockd that saw one lease end
// while its holder still worked (a release after the lease): every metric
// that metrics.txt calls exported is served with its type and its labels, and
// no metric or label it calls planned is served yet (then the file is stale).
func TestMetricsMatchLockd(t *testing.T) {
	decls := loadMetrics(t)
	s, err := server.New(server.Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("start lockd: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), MaxRetries: -1})
	defer rc.Close()
	tok, err := rc.Do(ctx, "LOCK.ACQUIRE", "deploy-test", "worker-1", "PX", "50").Int64()
	if err != nil {
		t.Fatalf("LOCK.ACQUIRE: %v", err)
	}
	for { // until the lease is over
		if err := rc.Do(ctx, "LOCK.INFO", "deploy-test").Err(); errors.Is(err, redis.Nil) {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("the 50 ms lease has not ended: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, err := rc.Do(ctx, "LOCK.RELEASE", "deploy-test", tok).Int64(); err != nil || n != 0 {
		t.Fatalf("a release after the lease = %d, %v; want 0", n, err)
	}
	fams := scrape(t, s.HTTPAddr())
	for fams["lockd_lock_expired_while_held_total"] == nil && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		fams = scrape(t, s.HTTPAddr())
	}
	types := map[dto.MetricType]string{dto.MetricType_COUNTER: "counter", dto.MetricType_GAUGE: "gauge", dto.MetricType_HISTOGRAM: "histogram"}
	for _, name := range sortedKeys(decls) {
		d := decls[name]
		fam, served := fams[name]
		if d.state == "planned" {
			if served {
				t.Errorf("lockd now exports %s: mark it exported in deploy/metrics.txt", name)
			}
			continue
		}
		if !served {
			t.Errorf("metrics.txt says lockd exports %s, but a fresh node's /metrics has no such metric", name)
			continue
		}
		if got := types[fam.GetType()]; got != d.typ {
			t.Errorf("%s is a %s in /metrics, a %s in metrics.txt", name, fam.GetType(), d.typ)
		}
		for label, planned := range d.labels {
			for _, m := range fam.GetMetric() {
				has := false
				for _, lp := range m.GetLabel() {
					has = has || lp.GetName() == label
				}
				if planned && has {
					t.Errorf("%s now carries label %q: drop its * in deploy/metrics.txt", name, label)
				} else if !planned && !has {
					t.Errorf("%s has a series without label %q, which metrics.txt declares", name, label)
				}
			}
		}
	}
}
