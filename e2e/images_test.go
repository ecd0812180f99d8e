package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestImages covers language images from the user's side: packages baked
// into a derived image by `sandboxctl images build` (Debian's python3-*
// for python, npm's registry for node), a missing image reported with how
// to build it, and the runtime versions `sandboxctl languages` shows.
func TestImages(t *testing.T) {
	testutil.RequireDocker(t, "sandboxd/python:latest", "sandboxd/node:latest")
	// Start from no derived image, as a new machine does.
	for _, base := range []string{"sandboxd/python:latest", "sandboxd/node:latest"} {
		out, _ := exec.Command("docker", "images", "-q", "--filter", "label="+images.LabelBase+"="+base).Output()
		for _, id := range strings.Fields(string(out)) {
			_ = exec.Command("docker", "rmi", "-f", id).Run()
		}
	}
	d := testutil.StartDaemon(t, testutil.Options{Languages: `
language "python" {
  image    = "sandboxd/python:latest"
  packages = ["tabulate"]
  pool { min_idle = 1 }
}
language "node" {
  image    = "sandboxd/node:latest"
  packages = ["left-pad"]
  pool { min_idle = 1 }
}
language "ruby" {
  image = "sandboxd/no-such-image:latest"
  pool { min_idle = 1 }
}
`})
	c := d.Client()
	prog := writeFile(t, "t.py", "import tabulate\nprint(tabulate.tabulate([[1, 2]], tablefmt='plain'))\n")

	t.Run("before the build, runs say how to build", func(t *testing.T) {
		_, errOut, code := d.Ctl("", "run", prog)
		if code != 125 || !strings.Contains(errOut, "image_missing") || !strings.Contains(errOut, "sandboxctl images build python") {
			t.Fatalf("exit %d stderr %q", code, errOut)
		}
		out, _, code := d.Ctl("", "languages")
		if code != 0 || !strings.Contains(out, "+tabulate") || !strings.Contains(out, "not built yet") {
			t.Fatalf("languages: exit %d\n%s", code, out)
		}
		_, errOut, code = d.Ctl("", "session", "create", "--lang", "ruby")
		if code != 125 || !strings.Contains(errOut, "sandboxd/no-such-image:latest of language ruby is missing") {
			t.Fatalf("session on a missing image: exit %d stderr %q", code, errOut)
		}
	})

	t.Run("images build with progress", func(t *testing.T) {
		out, errOut, code := d.Ctl("", "images", "build", "python", "node")
		if code != 0 || !strings.Contains(errOut, "Step 1/") || !strings.Contains(errOut, "python3-tabulate") ||
			!strings.Contains(out, "(packages: tabulate) for python") || !strings.Contains(out, "(packages: left-pad) for node") {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
		}
		// The image sandboxd cannot build is a failure of its own, not a crash.
		out, errOut, code = d.Ctl("", "images", "build", "ruby")
		if code != 1 || !strings.Contains(errOut, "build or load it into the engine yourself") {
			t.Fatalf("ruby: exit %d stdout %q stderr %q", code, out, errOut)
		}
	})

	t.Run("packages are there at run time, without network", func(t *testing.T) {
		out, errOut, code := d.Ctl("", "run", prog)
		if code != 0 || out != "1  2\n" {
			t.Fatalf("python: exit %d stdout %q stderr %q", code, out, errOut)
		}
		for name, src := range map[string]string{
			"cjs.js":  "console.log(require('left-pad')('x', 3, '.'))",
			"esm.mjs": "import lp from 'left-pad'; console.log(lp('x', 3, '.'))",
		} {
			out, errOut, code := d.Ctl("", "run", writeFile(t, name, src))
			if code != 0 || out != "..x\n" {
				t.Errorf("%s: exit %d stdout %q stderr %q", name, code, out, errOut)
			}
		}
		res := run(t, c, api.RunRequest{Language: "python", Code: "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9', timeout=2)"})
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, "rror") {
			t.Errorf("network in a sandbox of a derived image: %+v", res)
		}
	})

	t.Run("languages shows versions", func(t *testing.T) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			langs, err := c.Languages(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]api.Language{}
			for _, l := range langs {
				got[l.Name] = l
			}
			if strings.HasPrefix(got["python"].Version, "Python 3.") && strings.HasPrefix(got["node"].Version, "v") {
				if !got["python"].ImagePresent || !strings.HasPrefix(got["python"].Image, "sandboxd-packages/python:") || got["ruby"].ImagePresent {
					t.Fatalf("languages: %+v", langs)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no versions after 60s: %+v", langs)
			}
			time.Sleep(200 * time.Millisecond)
		}
		out, _, _ := d.Ctl("", "languages")
		if !strings.Contains(out, "VERSION") || !strings.Contains(out, "Python 3.") {
			t.Fatalf("languages:\n%s", out)
		}
	})
}

// A missing image sandboxd can build is built in the background as it
// starts (build_missing_images): meanwhile the language says it is
// building and how far it has got, and a run gets image_building (503,
// Retry-After) that says when to retry; once the image lands the
// language serves with no restart.
func TestMissingImagesBuildInTheBackground(t *testing.T) {
	testutil.RequireDocker(t, "sandboxd/bash:latest")
	name := fmt.Sprintf("sbtest-%d", time.Now().UnixNano())
	tag := "sandboxd/" + name + ":latest"
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	// A build of some seconds, never served from the layer cache.
	dockerfile := fmt.Sprintf("FROM sandboxd/bash:latest\nRUN sleep 8 && echo %s\n", name)
	if err := os.WriteFile(filepath.Join(dir, name, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })
	d := testutil.StartDaemon(t, testutil.Options{ImagesDir: dir, Extra: "build_missing_images = true", Languages: fmt.Sprintf(`
language "bash" {
  image = %q
  pool { min_idle = 1 }
}`, tag)})
	c := d.Client()

	out, _, code := d.Ctl("", "languages")
	if code != 0 || !strings.Contains(out, "building for") {
		t.Fatalf("languages while the image builds: exit %d\n%s", code, out)
	}
	status, body, header := rawResponse(t, d.Socket, "POST", "/v1/run", `{"language":"bash","code":"echo hi"}`)
	if status != 503 || !strings.Contains(body, api.CodeImageBuilding) || !strings.Contains(body, "retry in 15s") || header.Get("Retry-After") != "15" {
		t.Fatalf("a run while the image builds: %d %s (Retry-After %q)", status, body, header.Get("Retry-After"))
	}
	_, errOut, code := d.Ctl("echo hi", "run", "--lang", "bash", "-")
	if code != 125 || !strings.Contains(errOut, "image_building") {
		t.Fatalf("sandboxctl run while the image builds: exit %d %q", code, errOut)
	}

	waitForWithin(t, "the built image to serve", 3*time.Minute, func() bool {
		res, err := c.Run(context.Background(), api.RunRequest{Language: "bash", Code: "echo served"})
		return err == nil && res.Stdout == "served\n"
	})
	langs, err := c.Languages(context.Background())
	if err != nil || len(langs) != 1 || langs[0].Building != nil || langs[0].Error != "" || !langs[0].ImagePresent {
		t.Fatalf("languages once built: %+v %v", langs, err)
	}
}
