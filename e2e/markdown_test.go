package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/testutil"
)

const markdownDoc = "# An answer\n\n" +
	"```python\nwords = 'the quick brown fox'.split()\nopen('count.txt', 'w').write(str(len(words)))\nprint(len(words), 'words')\n```\n\n" + // line 3
	"Look at it from the shell:\n\n```sh\ncat count.txt; echo\n```\n\n" + // line 11
	"1. In JavaScript:\n\n   ```javascript\n   console.log([1, 2, 3].map(x => x * 2).join(','))\n   ```\n\n" + // line 17
	"```text\n4 words\n```\n\n" + // line 21
	"```python\nprint(open('count.txt').read() + ' again')\nraise SystemExit(4)\n```\n\n" + // line 25
	"```python\nprint('still runs')\n```\n\n" + // line 30
	"```python\nimport matplotlib.pyplot as plt\nplt.plot(range(len(words)))\nlen(words) * 10\n```\n" // line 34: a notebook's state, and a figure

// TestMarkdown runs a chat answer's code blocks with sandboxctl run
// --markdown: in order, one session per language that later blocks of it
// (and shell blocks) share, unknown languages skipped with a note, the
// first failure's exit code, and no session left behind.
func TestMarkdown(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Languages: testutil.DefaultLanguages + `
language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 0
  }
}
`})
	doc := writeFile(t, "answer.md", markdownDoc)
	out, errOut, code := d.Ctl("", "run", "--markdown", doc)
	want := "--- [1] line 3, python\n4 words\n--- [1] exit 0 (" +
		"|--- [2] line 11, bash\n4\n--- [2] exit 0 (" +
		"|--- [3] line 17, node\n2,4,6\n--- [3] exit 0 (" +
		"|--- [4] line 21: skipped: \"text\" is not a language sandboxd runs" +
		"|--- [5] line 25, python\n4 again\n--- [5] exit 4 (" +
		"|--- [6] line 30, python\nstill runs\n--- [6] exit 0 (" +
		"|--- [7] line 34, python\n--- [7] image written to " + strings.TrimSuffix(doc, ".md") + "-7-1.png\n40\n--- [7] exit 0 ("
	rest := out
	for _, part := range strings.Split(want, "|") {
		i := strings.Index(rest, part)
		if i < 0 {
			t.Fatalf("exit %d: output lacks %q (in order):\n%s\nstderr: %s", code, part, out, errOut)
		}
		rest = rest[i+len(part):]
	}
	if code != 4 {
		t.Errorf("exit %d, want the first failure's 4", code)
	}

	out, _, code = d.Ctl(markdownDoc, "run", "--markdown", "--json", "-")
	var res struct {
		Blocks []struct {
			Line     int
			Language string
			Skipped  string
			Session  string
			Result   *struct {
				ExitCode int    `json:"exit_code"`
				Stdout   string `json:"stdout"`
			}
		}
	}
	if png, err := os.ReadFile(strings.TrimSuffix(doc, ".md") + "-7-1.png"); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("the figure: %v", err)
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 4 || len(res.Blocks) != 7 {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	b := res.Blocks
	if b[0].Session == "" || b[1].Session != b[0].Session || b[4].Session != b[0].Session || b[2].Session == b[0].Session {
		t.Errorf("sessions: python and shell blocks share one, node has its own: %+v", b)
	}
	if b[3].Skipped == "" || b[3].Result != nil || b[2].Result.Stdout != "2,4,6\n" || b[4].Result.ExitCode != 4 {
		t.Errorf("blocks: %+v", b)
	}

	if list, err := d.Client().Sessions(context.Background()); err != nil || len(list) != 0 {
		t.Errorf("sessions left behind: %v %+v", err, list)
	}
	if _, errOut, code := d.Ctl("no code here\n", "run", "--markdown", "-"); code != 125 || !strings.Contains(errOut, "no fenced code blocks") {
		t.Errorf("no blocks: exit %d, %s", code, errOut)
	}
}
