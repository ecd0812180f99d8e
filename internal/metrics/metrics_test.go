package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sandboxd/sandboxd/internal/pool"
	"github.com/sandboxd/sandboxd/internal/stats"
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/policy"
)

// figures is a service as the shipped sandboxd.hcl makes it, in small:
// python and python3.11 each run a process of the python plugin, and two
// policy blocks run the built-in patterns policy.
type figures struct{}

func (figures) Stats() stats.Figures {
	return stats.Figures{
		InFlight: 1,
		Pools: map[string]stats.Pool{
			"python":     {Stats: pool.Stats{Idle: 2, Target: 2, Max: 16, Hits: 5}},
			"python3.11": {Stats: pool.Stats{Idle: 1, Target: 1, Max: 8, Misses: 1}},
			"lua":        {Stats: pool.Stats{Starting: 1, Target: 1, Max: 8}},
		},
		Rules: map[string]policy.RuleStats{
			"patterns/patterns.eval": {Findings: 3},
			"review/patterns.eval":   {Findings: 1, Denials: 1},
		},
		Sessions: 2, SessionsLost: 1,
	}
}

func (figures) Plugins() []stats.Plugin {
	plugin := func(kind plugins.Kind, name, block string, running bool, restarts int) stats.Plugin {
		return stats.Plugin{Health: plugins.Health{Kind: kind, Name: name, Running: running, Restarts: restarts}, Block: block}
	}
	return []stats.Plugin{
		plugin(plugins.KindLanguage, "python", "python", true, 0),
		plugin(plugins.KindLanguage, "python", "python3.11", false, 2),
		plugin(plugins.KindLanguage, "generic", "lua", true, 0),
		plugin(plugins.KindPolicy, "patterns", "patterns", true, 0),
		plugin(plugins.KindPolicy, "patterns", "review", true, 0),
	}
}

func (figures) SessionUsage() map[string][]stats.SandboxUsage {
	return map[string][]stats.SandboxUsage{
		"python":     {{CPUPercent: 50, MemoryBytes: 1 << 20}, {CPUPercent: 25, Processes: 2}},
		"python3.11": {{WorkspaceBytes: 4096, TmpBytes: 512}},
	}
}

// TestSharedPlugin: two language blocks (and two policy blocks) of one
// plugin give a series each, and the exposition gathers and lints clean.
func TestSharedPlugin(t *testing.T) {
	problems, err := testutil.CollectAndLint(&scrape{figures: figures{}})
	if err != nil {
		t.Fatalf("collecting the service's figures: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	m := New(figures{}, "test")
	m.Executed("python", "run", "ok", &Ran{Queue: time.Millisecond, Run: 10 * time.Millisecond})
	m.Executed("python3.11", "run", "denied", nil)
	m.ContainerStarted("python", 300*time.Millisecond, nil)
	m.ContainerRemoved("python3.11", nil)
	m.EgressBytes("python", 10, 20)
	problems, err = testutil.GatherAndLint(m.registry)
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	up := map[string]float64{}
	for _, s := range families["sandboxd_plugin_up"].GetMetric() {
		var key []string
		for _, l := range s.GetLabel() {
			key = append(key, l.GetName()+"="+l.GetValue())
		}
		up[strings.Join(key, ",")] = s.GetGauge().GetValue()
	}
	want := map[string]float64{
		"block=python,kind=lang,plugin=python":       1,
		"block=python3.11,kind=lang,plugin=python":   0,
		"block=lua,kind=lang,plugin=generic":         1,
		"block=patterns,kind=policy,plugin=patterns": 1,
		"block=review,kind=policy,plugin=patterns":   1,
	}
	if len(up) != len(want) {
		t.Errorf("sandboxd_plugin_up: %v, want %v", up, want)
	}
	for k, v := range want {
		if got, ok := up[k]; !ok || got != v {
			t.Errorf("sandboxd_plugin_up{%s} = %v (present %v), want %v", k, got, ok, v)
		}
	}
}
