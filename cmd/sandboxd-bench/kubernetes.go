package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// kubeconfig is the cluster `make cluster` brings up.
const kubeconfig = "/var/lib/sandboxd-cluster/admin.kubeconfig"

// clusterAPI is where scripts/cluster.sh's API server listens.
const clusterAPI = "127.0.0.1:6443"

// kubernetesTwins are one python on the local engine and one in pods of
// the cluster, sized alike (a quarter core, 256 MiB: what the 2-core
// node holds six of), each with a warm pool of two.
func kubernetesTwins() string {
	twin := func(name, runtime string) string {
		return fmt.Sprintf(`
language %q {
  plugin  = "python"
  image   = "sandboxd/python:latest"
  runtime = %q
  limits {
    cpus   = 0.25
    memory = "256MiB"
  }
  pool {
    min_idle = 2
    max      = 6
  }
}`, name, runtime)
	}
	return fmt.Sprintf(`
runtime "kubernetes" {
  kubeconfig     = %q
  image_registry = "127.0.0.1:5000"
}
%s
%s`, kubeconfig, twin("pydocker", "runc"), twin("pypod", "kubernetes"))
}

// kubernetesRuntime prints python print(1) in pods of the cluster beside
// the same on the local engine, and the warm pools' hit rates under load.
func kubernetesRuntime(bin string, n int) error {
	if _, err := os.Stat(kubeconfig); err != nil {
		fmt.Println("\nkubernetes: no cluster; `make cluster` and `make cluster-images` to measure pods")
		return nil
	}
	// The kubeconfig outlives the cluster (a reboot ends it).
	conn, err := net.DialTimeout("tcp", clusterAPI, time.Second)
	if err != nil {
		fmt.Printf("\nkubernetes: the cluster's API server (%s) does not answer; `make cluster` and `make cluster-images` to measure pods\n", clusterAPI)
		return nil
	}
	conn.Close()
	d, err := startDaemon(bin, "sandbox_uids = \"1000200000-1000201999\"\n"+kubernetesTwins())
	if err != nil {
		return err
	}
	defer d.stop()
	c := client.New(d.socket)
	names := []string{"one-shot run (`POST /v1/run`, warm pool)", "session exec", "session create (warm pool)",
		"session create with a sandbox of its own (lower memory)"}
	var rows [2][]stats
	for i, lang := range []string{"pydocker", "pypod"} {
		if rows[i], err = runtimeRows(c, lang, n); err != nil {
			return fmt.Errorf("%s: %w", lang, err)
		}
	}
	fmt.Println("\n| python print(1), p50 ms (¼ core, 256 MiB) | Docker | Kubernetes pod | pod / Docker |\n|---|---|---|---|")
	for i, name := range names {
		fmt.Printf("| %s | %.1f | %.1f | %s |\n", name, rows[0][i].p50, rows[1][i].p50, ratio(rows[1][i].p50, rows[0][i].p50))
	}
	fmt.Println("\n| 4 clients, 160 one-shot runs | Docker | Kubernetes pod |\n|---|---|---|")
	var rates [2]float64
	var hits [2]string
	for i, lang := range []string{"pydocker", "pypod"} {
		waitQuiet(c, lang)
		before, err := c.Pools(context.Background())
		if err != nil {
			return err
		}
		rates[i] = rate(4, 160, func(int) error {
			_, err := c.Run(context.Background(), api.RunRequest{Language: lang, Code: "print(1)"})
			return err
		})
		after, err := c.Pools(context.Background())
		if err != nil {
			return err
		}
		h, m := after[lang].Hits-before[lang].Hits, after[lang].Misses-before[lang].Misses
		hits[i] = fmt.Sprintf("%d%% (%d of %d)", 100*h/max(h+m, 1), h, h+m)
	}
	fmt.Printf("| runs/s | %.1f | %.1f |\n| warm-pool hit rate | %s | %s |\n", rates[0], rates[1], hits[0], hits[1])
	return nil
}
