package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

const dashboardPath = "grafana/lockd-dashboard.json"

// dashboardVars gives the dashboard's template variables values, which turns
// a panel's query into plain PromQL.
var dashboardVars = strings.NewReplacer("$__rate_interval", "5m", "${job}", "lockd", "$job", "lockd")

// registerGrafanaPlugins tells the schema package about the panel and query
// types the dashboard may use: a panel of another type fails to decode.
var registerGrafanaPlugins = sync.OnceFunc(func() {
	rt := cog.NewRuntime()
	rt.RegisterPanelcfgVariant(timeseries.VariantConfig())
	rt.RegisterPanelcfgVariant(stat.VariantConfig())
	rt.RegisterDataqueryVariant(prometheus.VariantConfig())
})

// schemaErr turns the schema package's error into nil when it holds no
// error (it returns an empty error list as a non-nil error).
func schemaErr(err error) error {
	if err == nil || err.Error() == "" {
		return nil
	}
	return err
}

// loadDashboard checks the dashboard strictly against Grafana's dashboard
// schema (grafana-foundation-sdk: an unknown field, a missing required one or
// a wrong type fails), decodes it and validates it.
func loadDashboard(t *testing.T) *dashboard.Dashboard {
	t.Helper()
	registerGrafanaPlugins()
	raw := readFile(t, dashboardPath)
	// The strict decoder reports every error but, in this version, drops the
	// panels it decoded (it mistakes its own empty error list for an error);
	// so it only checks, and the lenient decoder reads.
	var strict dashboard.Dashboard
	if err := schemaErr(strict.UnmarshalJSONStrict(raw)); err != nil {
		t.Fatalf("%s does not match Grafana's dashboard schema:\n%v", dashboardPath, err)
	}
	var d dashboard.Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if err := schemaErr(d.Validate()); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return &d
}

// panels are the dashboard's panels, those inside rows included.
func panels(d *dashboard.Dashboard) []dashboard.Panel {
	var out []dashboard.Panel
	for _, p := range d.Panels {
		if p.Panel != nil {
			out = append(out, *p.Panel)
		}
		if p.RowPanel != nil {
			out = append(out, p.RowPanel.Panels...)
		}
	}
	return out
}

var labelValues = regexp.MustCompile(`^label_values\(\s*([^,]+?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// dashboardQueries are the PromQL queries of every panel and variable, with
// the template variables substituted.
func dashboardQueries(t *testing.T) []query {
	d := loadDashboard(t)
	var qs []query
	for _, p := range panels(d) {
		for i, target := range p.Targets {
			pq, ok := target.(*prometheus.Dataquery)
			if !ok {
				t.Errorf("panel %q: target %d is a %T, not a Prometheus query", deref(p.Title), i, target)
				continue
			}
			qs = append(qs, query{fmt.Sprintf("%s: panel %q", dashboardPath, deref(p.Title)), dashboardVars.Replace(pq.Expr)})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != dashboard.VariableTypeQuery || v.Query == nil {
			continue
		}
		q := ""
		if v.Query.String != nil {
			q = *v.Query.String
		} else if s, ok := v.Query.Map["query"].(string); ok {
			q = s
		}
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, q)
			continue
		}
		// label_values(m, l) asks for the values of l on m: check it as m grouped by l.
		qs = append(qs, query{fmt.Sprintf("%s: variable %s", dashboardPath, v.Name), fmt.Sprintf("count by (%s) (%s)", m[2], m[1])})
	}
	return qs
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TestGrafanaDashboard: the dashboard matches Grafana's schema, lays its
// panels out on the 24-column grid without overlaps, queries the data source
// variable, has the panels an operator needs, and every query is valid PromQL
// (`promtool check rules` on the queries as recording rules).
func TestGrafanaDashboard(t *testing.T) {
	d := loadDashboard(t)
	if deref(d.Uid) == "" || deref(d.Title) == "" {
		t.Errorf("the dashboard needs a uid and a title")
	}
	type cell struct{ x, y uint32 }
	taken := map[cell]string{}
	ids := map[uint32]string{}
	place := func(title string, id uint32, g *dashboard.GridPos) {
		if prev, dup := ids[id]; dup {
			t.Errorf("panels %q and %q share id %d", prev, title, id)
		}
		ids[id] = title
		if g == nil || g.W == 0 || g.H == 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v is not inside the 24-column grid", title, g)
			return
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[cell{x, y}]; ok {
					t.Errorf("panels %q and %q overlap at x=%d y=%d", other, title, x, y)
					return
				}
				taken[cell{x, y}] = title
			}
		}
	}
	titles := map[string]bool{}
	for _, p := range d.Panels {
		if r := p.RowPanel; r != nil {
			place(deref(r.Title), r.Id, r.GridPos)
		}
	}
	for _, p := range panels(d) {
		title := deref(p.Title)
		titles[title] = true
		place(title, deref(p.Id), p.GridPos)
		if p.Datasource == nil || deref(p.Datasource.Uid) != "${datasource}" {
			t.Errorf("panel %q: its data source should be the variable ${datasource}", title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", title)
		}
		if deref(p.Description) == "" {
			t.Errorf("panel %q has no description", title)
		}
	}
	for _, want := range []string{"Leader", "Raft term", "Leader changes", "Commit latency", "Fsync latency", "Apply lag",
		"Commands by result", "Locks held", "Sessions", "Waiters", "Leases expired while the holder was still working"} {
		if !titles[want] {
			t.Errorf("the dashboard has no panel %q", want)
		}
	}

	// Every query, as a recording rule, through promtool's PromQL parser.
	promtool := tool(t, "promtool", "prometheus")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range dashboardQueries(t) {
		fmt.Fprintf(&b, "      - record: dashboard:query_%d\n        expr: %q\n", i, q.expr)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "", nil, promtool, "check", "rules", path); err != nil {
		t.Errorf("the dashboard's queries are not all valid PromQL: %v\n%s", err, out)
	}
}
