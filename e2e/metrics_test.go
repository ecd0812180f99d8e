package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// scrape reads GET /metrics and parses it as Prometheus does.
func scrape(t *testing.T, socket string) map[string]*dto.MetricFamily {
	t.Helper()
	families, _ := scrapeText(t, socket)
	return families
}

// scrapeText is scrape, with the exposition as it came.
func scrapeText(t *testing.T, socket string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	code, body := rawRequest(t, socket, http.MethodGet, "/metrics", "", "")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return families, body
}

// value is the value of the sample of family name whose labels are
// exactly labels ("k=v" pairs); a histogram's is its count. ok is false
// when there is no such sample.
func value(families map[string]*dto.MetricFamily, name string, labels ...string) (v float64, ok bool) {
	f := families[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for i, l := range m.GetLabel() {
			if l.GetName()+"="+l.GetValue() != labels[i] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetrics runs a known workload and checks what /metrics says about
// it: executions by outcome, durations, pools, containers, sessions,
// policy denials and plugins.
func TestMetrics(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Languages: `
language "python" {
  image = "sandboxd/python:latest"
  pool {
    min_idle = 1
    max      = 3
  }
}
`, Extra: `policy "commands" {}`})
	c := d.Client()
	ctx := context.Background()

	for _, code := range []string{"print(1)", "raise SystemExit(3)", "import time; time.sleep(30)"} {
		if _, err := c.Run(ctx, api.RunRequest{Language: "python", Code: code, Timeout: api.Duration(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	id := newSession(t, c, api.SessionRequest{Language: "python"})
	sh(t, c, id, "true")
	sh(t, c, id, "exit 1")
	if _, err := c.Exec(ctx, id, api.ExecRequest{Argv: []string{"reboot"}}); apiCode(err) != api.CodePolicyDenied {
		t.Fatalf("reboot: %v", err)
	}

	want := []struct {
		name   string
		labels []string
		value  float64
	}{
		{"sandboxd_executions_total", []string{"kind=run", "language=python", "outcome=ok"}, 1},
		{"sandboxd_executions_total", []string{"kind=run", "language=python", "outcome=nonzero"}, 1},
		{"sandboxd_executions_total", []string{"kind=run", "language=python", "outcome=timeout"}, 1},
		{"sandboxd_executions_total", []string{"kind=exec", "language=python", "outcome=ok"}, 1},
		{"sandboxd_executions_total", []string{"kind=exec", "language=python", "outcome=nonzero"}, 1},
		{"sandboxd_executions_total", []string{"kind=exec", "language=python", "outcome=denied"}, 1},
		{"sandboxd_execution_run_seconds", []string{"kind=run", "language=python"}, 3},
		{"sandboxd_execution_queue_seconds", []string{"kind=run", "language=python"}, 3},
		{"sandboxd_execution_run_seconds", []string{"kind=exec", "language=python"}, 2},
		{"sandboxd_sessions", []string{"state=active"}, 1},
		{"sandboxd_sessions", []string{"state=lost"}, 0},
		{"sandboxd_pool_target_idle", []string{"language=python"}, 1},
		{"sandboxd_pool_max", []string{"language=python"}, 3},
		{"sandboxd_pool_containers", []string{"language=python", "state=busy"}, 0},
		{"sandboxd_policy_denials_total", []string{"policy=commands", "rule=commands.denied"}, 1},
		{"sandboxd_policy_findings_total", []string{"policy=commands", "rule=commands.denied"}, 1},
		{"sandboxd_plugin_up", []string{"block=python", "kind=lang", "plugin=python"}, 1},
		{"sandboxd_plugin_up", []string{"block=commands", "kind=policy", "plugin=commands"}, 1},
		{"sandboxd_plugin_restarts_total", []string{"block=python", "kind=lang", "plugin=python"}, 0},
		{"sandboxd_executions_in_flight", nil, 0},
		{"sandboxd_build_info", []string{"version=dev"}, 1},
	}
	m := scrape(t, d.Socket)
	for _, w := range want {
		if got, ok := value(m, w.name, w.labels...); !ok || got != w.value {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, got, ok, w.value)
		}
	}

	// Three one-shot runs and the session took containers from the pool;
	// each one-shot run's was made fresh afterwards and kept for the next
	// run, and the session's is its own.
	waitFor(t, "the one-shot containers to be recycled", func() bool {
		kept, _ := value(scrape(t, d.Socket), "sandboxd_containers_recycled_total", "language=python", "result=kept")
		return kept == 3
	})
	m = scrape(t, d.Socket)
	started, _ := value(m, "sandboxd_container_start_seconds", "language=python")
	hits, _ := value(m, "sandboxd_pool_hits_total", "language=python")
	misses, _ := value(m, "sandboxd_pool_misses_total", "language=python")
	reused, _ := value(m, "sandboxd_pool_reused_total", "language=python")
	if hits+misses != 4 || started < 2 || reused < 1 {
		t.Errorf("pool hits %v + misses %v, want 4 takes; %v containers started, want at least 2; %v runs in a recycled container, want 1 or more", hits, misses, started, reused)
	}
	if _, ok := value(m, "sandboxd_container_failures_total", "language=python", "op=create"); ok {
		t.Error("a container failed to start")
	}

	if err := c.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session's container to be removed", func() bool {
		m := scrape(t, d.Socket)
		active, _ := value(m, "sandboxd_sessions", "state=active")
		removed, _ := value(m, "sandboxd_containers_removed_total", "language=python")
		return active == 0 && removed >= 1
	})
}
