// Package metrics is sandboxd's Prometheus exposition (GET /metrics). It
// owns the figures that only exist as events — executions by outcome,
// their queue and run times, container starts and removals — and reads
// the rest (pools, sessions, policy rules, plugins) from the service at
// scrape time, so /metrics and /v1/stats never disagree.
package metrics

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sandboxd/sandboxd/internal/stats"
)

// Figures is what the service reports at scrape time.
type Figures interface {
	Stats() stats.Figures
	Plugins() []stats.Plugin
	// SessionUsage is the latest sample of each awake session's sandbox,
	// by language.
	SessionUsage() map[string][]stats.SandboxUsage
}

// Metrics records events and serves the exposition.
type Metrics struct {
	registry        *prometheus.Registry
	handler         http.Handler
	executions      *prometheus.CounterVec
	queueSeconds    *prometheus.HistogramVec
	runSeconds      *prometheus.HistogramVec
	startSeconds    *prometheus.HistogramVec
	containerErrors *prometheus.CounterVec
	removed         *prometheus.CounterVec
	egressConns     *prometheus.CounterVec
	egressBytes     *prometheus.CounterVec
	warmStarts      *prometheus.CounterVec
	warmRuns        *prometheus.CounterVec
	recycled        *prometheus.CounterVec
	cpuSeconds      *prometheus.CounterVec
}

// Buckets from 1 ms (a warm exec) to a minute (a long compile or a
// deadline).
var durationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New returns the metrics of a service whose figures f reports.
func New(f Figures, version string) *Metrics {
	registry := prometheus.NewRegistry()
	m := &Metrics{
		registry: registry,
		handler:  promhttp.HandlerFor(registry, promhttp.HandlerOpts{}),
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_executions_total",
			Help: "Executions by language, kind (run, exec) and outcome (ok, nonzero, timeout, oom, error, denied).",
		}, []string{"language", "kind", "outcome"}),
		queueSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sandboxd_execution_queue_seconds", Buckets: durationBuckets,
			Help: "Time from an execution's request to its sandbox: taking a warm container (run) or the session's turn (exec).",
		}, []string{"language", "kind"}),
		runSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sandboxd_execution_run_seconds", Buckets: durationBuckets,
			Help: "Time an execution spent in its sandbox, every step included.",
		}, []string{"language", "kind"}),
		startSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sandboxd_container_start_seconds", Buckets: durationBuckets,
			Help: "Time to create and start a container until its supervisor answers; its _count is the containers started.",
		}, []string{"language"}),
		containerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_container_failures_total",
			Help: "Containers that failed to start (op=create) or to be removed (op=remove).",
		}, []string{"language", "op"}),
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_containers_removed_total",
			Help: "Containers removed after use, pool trims and session ends included.",
		}, []string{"language"}),
		egressConns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_egress_connections_total",
			Help: "Connections sandboxes opened through the egress proxy, by language, host and decision (allowed, denied); hosts no allow-list names are counted as (unlisted).",
		}, []string{"language", "host", "decision"}),
		egressBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_egress_bytes_total",
			Help: "Bytes through the egress proxy, by language and direction (sent, received), counted as connections close.",
		}, []string{"language", "direction"}),
		warmStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_warm_starts_total",
			Help: "Warm runtimes started ahead in containers, by language and result (ready, failed: the container then runs programs cold).",
		}, []string{"language", "result"}),
		warmRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_warm_runs_total",
			Help: "Programs a warm runtime could have run, by language and how they started: warm, or cold with why (no warm process, another command, other arguments, another directory, another environment).",
		}, []string{"language", "started"}),
		recycled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_containers_recycled_total",
			Help: "Containers after a one-shot run, by language and result: kept (recycled for the next run) or why retired (max_runs, run, limits, not_fresh, gone).",
		}, []string{"language", "result"}),
		cpuSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxd_execution_cpu_seconds_total",
			Help: "CPU time executions' processes used, by language and mode (user, system).",
		}, []string{"language", "mode"}),
	}
	registry.MustRegister(m.executions, m.queueSeconds, m.runSeconds, m.startSeconds, m.containerErrors, m.removed,
		m.egressConns, m.egressBytes, m.warmStarts, m.warmRuns, m.recycled, m.cpuSeconds,
		&scrape{figures: f},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sandboxd_build_info", Help: "Always 1; the version label is sandboxd's.",
			ConstLabels: prometheus.Labels{"version": version},
		}, func() float64 { return 1 }))
	return m
}

// Handler serves the exposition.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Ran is what an execution that reached a sandbox took: its wait for a
// container, its time inside, and its processes' CPU time.
type Ran struct {
	Queue, Run, CPUUser, CPUSys time.Duration
}

// Executed records an execution's outcome; ran is nil for one that never
// reached a sandbox (denied, or failed before).
func (m *Metrics) Executed(language, kind, outcome string, ran *Ran) {
	m.executions.WithLabelValues(language, kind, outcome).Inc()
	if ran != nil {
		m.cpuSeconds.WithLabelValues(language, "user").Add(ran.CPUUser.Seconds())
		m.cpuSeconds.WithLabelValues(language, "system").Add(ran.CPUSys.Seconds())
		m.queueSeconds.WithLabelValues(language, kind).Observe(ran.Queue.Seconds())
		m.runSeconds.WithLabelValues(language, kind).Observe(ran.Run.Seconds())
	}
}

// ContainerStarted records a container start that took d, or failed.
func (m *Metrics) ContainerStarted(language string, d time.Duration, err error) {
	if err != nil {
		m.containerErrors.WithLabelValues(language, "create").Inc()
		return
	}
	m.startSeconds.WithLabelValues(language).Observe(d.Seconds())
}

// WarmStart records a warm runtime that became ready, or failed.
func (m *Metrics) WarmStart(language string, ready bool) {
	result := "ready"
	if !ready {
		result = "failed"
	}
	m.warmStarts.WithLabelValues(language, result).Inc()
}

// WarmRun records how a program a warm runtime could have run started:
// warm, or cold because of missed.
func (m *Metrics) WarmRun(language string, warm bool, missed string) {
	started := "warm"
	if !warm {
		started = "cold: " + missed
	}
	m.warmRuns.WithLabelValues(language, started).Inc()
}

// ContainerRemoved records a container removal, or its failure.
func (m *Metrics) ContainerRemoved(language string, err error) {
	if err != nil {
		m.containerErrors.WithLabelValues(language, "remove").Inc()
		return
	}
	m.removed.WithLabelValues(language).Inc()
}

// Recycled records what became of a container after a one-shot run:
// "kept", or why it was retired.
func (m *Metrics) Recycled(language, result string) {
	m.recycled.WithLabelValues(language, result).Inc()
}

// EgressConnection implements egress.Events.
func (m *Metrics) EgressConnection(language, host, decision string) {
	m.egressConns.WithLabelValues(language, host, decision).Inc()
}

// EgressBytes implements egress.Events.
func (m *Metrics) EgressBytes(language string, sent, received int64) {
	m.egressBytes.WithLabelValues(language, "sent").Add(float64(sent))
	m.egressBytes.WithLabelValues(language, "received").Add(float64(received))
}

// scrape turns the service's current figures into metrics.
type scrape struct{ figures Figures }

var (
	poolContainers = prometheus.NewDesc("sandboxd_pool_containers",
		"Containers of a language's warm pool by state (idle, busy, recycling, starting, removing).", []string{"language", "state"}, nil)
	poolTarget = prometheus.NewDesc("sandboxd_pool_target_idle",
		"Idle containers the pool wants ready now: min_idle, or the recent peak of demand beyond what is in use.", []string{"language"}, nil)
	poolReused = prometheus.NewDesc("sandboxd_pool_reused_total",
		"Requests served by a container recycled after an earlier run.", []string{"language"}, nil)
	poolTrimmed = prometheus.NewDesc("sandboxd_pool_trimmed_total",
		"Idle containers removed as demand fell.", []string{"language"}, nil)
	poolMax = prometheus.NewDesc("sandboxd_pool_max",
		"Most containers the pool may hold (max).", []string{"language"}, nil)
	poolWaiting = prometheus.NewDesc("sandboxd_pool_waiting",
		"Requests queued for a container of the pool.", []string{"language"}, nil)
	poolHits = prometheus.NewDesc("sandboxd_pool_hits_total",
		"Requests served by a warm container.", []string{"language"}, nil)
	poolMisses = prometheus.NewDesc("sandboxd_pool_misses_total",
		"Requests that waited for a container to be created.", []string{"language"}, nil)
	inFlight = prometheus.NewDesc("sandboxd_executions_in_flight",
		"Executions running now.", nil, nil)
	sessions = prometheus.NewDesc("sandboxd_sessions",
		"Sessions by state (active, frozen, hibernated, lost).", []string{"state"}, nil)
	findings = prometheus.NewDesc("sandboxd_policy_findings_total",
		"Policy findings by policy and rule, validate requests included.", []string{"policy", "rule"}, nil)
	denials = prometheus.NewDesc("sandboxd_policy_denials_total",
		"Requests denied, by the policy and rule that denied them.", []string{"policy", "rule"}, nil)
	// Each language or policy block has a plugin process of its own: block
	// tells apart the processes of one plugin (python and python3.11).
	pluginUp = prometheus.NewDesc("sandboxd_plugin_up",
		"1 if the plugin's process for the language or policy block is running.", []string{"kind", "plugin", "block"}, nil)
	sessionCPU = prometheus.NewDesc("sandboxd_session_cpu_cores",
		"CPUs the language's awake sessions use now, summed (1 is one CPU busy).", []string{"language"}, nil)
	sessionMemory = prometheus.NewDesc("sandboxd_session_memory_bytes",
		"Memory the language's awake sessions use now, summed.", []string{"language"}, nil)
	sessionProcesses = prometheus.NewDesc("sandboxd_session_processes",
		"Processes in the language's awake sessions now, summed.", []string{"language"}, nil)
	sessionDisk = prometheus.NewDesc("sandboxd_session_disk_bytes",
		"Bytes in the language's awake sessions' workspaces and /tmp now, summed.", []string{"language", "dir"}, nil)
	pluginRestarts = prometheus.NewDesc("sandboxd_plugin_restarts_total",
		"Times the plugin's process for the language or policy block was restarted after it died or hung.", []string{"kind", "plugin", "block"}, nil)
)

func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolContainers, poolTarget, poolMax, poolWaiting, poolHits, poolMisses, poolReused, poolTrimmed, inFlight, sessions, findings, denials, pluginUp, pluginRestarts,
		sessionCPU, sessionMemory, sessionProcesses, sessionDisk} {
		ch <- d
	}
}

func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	st := s.figures.Stats()
	for lang, p := range st.Pools {
		gauge(poolContainers, float64(p.Idle), lang, "idle")
		gauge(poolContainers, float64(p.Busy), lang, "busy")
		gauge(poolContainers, float64(p.Recycling), lang, "recycling")
		gauge(poolContainers, float64(p.Starting), lang, "starting")
		gauge(poolContainers, float64(p.Removing), lang, "removing")
		gauge(poolTarget, float64(p.Target), lang)
		gauge(poolMax, float64(p.Max), lang)
		gauge(poolWaiting, float64(p.Waiting), lang)
		counter(poolHits, float64(p.Hits), lang)
		counter(poolMisses, float64(p.Misses), lang)
		counter(poolReused, float64(p.Reused), lang)
		counter(poolTrimmed, float64(p.Trimmed), lang)
	}
	gauge(inFlight, float64(st.InFlight))
	gauge(sessions, float64(st.Sessions), "active")
	gauge(sessions, float64(st.SessionsFrozen), "frozen")
	gauge(sessions, float64(st.SessionsHibernated), "hibernated")
	gauge(sessions, float64(st.SessionsLost), "lost")
	for key, r := range st.Rules {
		policy, rule, _ := strings.Cut(key, "/")
		counter(findings, float64(r.Findings), policy, rule)
		counter(denials, float64(r.Denials), policy, rule)
	}
	for lang, samples := range s.figures.SessionUsage() {
		var cpu, memory, procs, workspace, tmp float64
		for _, u := range samples {
			cpu += u.CPUPercent / 100
			memory += float64(u.MemoryBytes)
			procs += float64(u.Processes)
			workspace += float64(u.WorkspaceBytes)
			tmp += float64(u.TmpBytes)
		}
		gauge(sessionCPU, cpu, lang)
		gauge(sessionMemory, memory, lang)
		gauge(sessionProcesses, procs, lang)
		gauge(sessionDisk, workspace, lang, "workspace")
		gauge(sessionDisk, tmp, lang, "tmp")
	}
	for _, p := range s.figures.Plugins() {
		up := 0.0
		if p.Running {
			up = 1
		}
		gauge(pluginUp, up, string(p.Kind), p.Name, p.Block)
		counter(pluginRestarts, float64(p.Restarts), string(p.Kind), p.Name, p.Block)
	}
}
