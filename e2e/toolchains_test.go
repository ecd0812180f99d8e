package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// Every shipped image has the tools an agent reaches for on a project.
func TestImagesHaveCommonTools(t *testing.T) {
	langs := []string{"bash", "c", "csharp", "go", "java", "lua", "node", "php", "python", "ruby", "rust"}
	var refs []string
	for _, l := range langs {
		refs = append(refs, "sandboxd/"+l+":latest")
	}
	testutil.RequireDocker(t, refs...)
	for _, ref := range refs {
		out, err := exec.Command("docker", "run", "--rm", "--network", "none", ref,
			"sh", "-c", "for c in git curl wget jq ps less vi; do command -v $c >/dev/null || echo missing $c; done; test -s /etc/ssl/certs/ca-certificates.crt || echo missing ca-certificates").CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("%s: %v %s", ref, err, out)
		}
	}
}

// A project's own tools, run as an agent runs them, in sessions: git,
// pytest (one test failing), black, flake8 and mypy; jest, eslint and
// prettier through npx; maven offline; rspec and rubocop; composer.
func TestToolchainsInSessions(t *testing.T) {
	var langs strings.Builder
	for _, l := range []string{"python", "node", "java", "ruby", "php"} {
		fmt.Fprintf(&langs, "language %q {\n  image = \"sandboxd/%s:latest\"\n  pool {\n    min_idle = 0\n    max = 2\n  }\n}\n", l, l)
	}
	testutil.RequireDocker(t, "sandboxd/java:latest", "sandboxd/ruby:latest", "sandboxd/php:latest")
	d := testutil.StartDaemon(t, testutil.Options{Languages: langs.String(), Defaults: "timeout = \"120s\"\n  memory = \"1GiB\""})
	c := d.Client()
	type step struct {
		script string
		exit   int
		says   string
	}
	for _, tc := range []struct {
		lang  string
		files map[string]string
		steps []step
	}{{
		lang: "python",
		files: map[string]string{
			"calc.py":      "def add(a, b):\n    return a + b\n",
			"ugly.py":      "x = {  'a':1 }\n",
			"typed.py":     "def name(n: int) -> str:\n    return n\n",
			"test_calc.py": "from calc import add\n\n\ndef test_adds():\n    assert add(2, 3) == 5\n\n\ndef test_wrong():\n    assert add(2, 2) == 5\n",
		},
		steps: []step{
			{"git init -q && git add -A && git -c user.name=agent -c user.email=agent@example.org commit -qm first && git log --format=%s", 0, "first"},
			{"pytest -q -p no:cacheprovider", 1, "1 failed, 1 passed"},
			{"black --check calc.py", 0, "1 file would be left unchanged"},
			{"black --check ugly.py", 1, "would reformat"},
			{"flake8 calc.py test_calc.py", 0, ""},
			{"mypy typed.py", 1, "Incompatible return value type"},
		},
	}, {
		lang: "node",
		files: map[string]string{
			"package.json":     `{"name": "demo", "private": true, "scripts": {"test": "jest"}}`,
			"sum.js":           "module.exports = (a, b) => a + b;\n",
			"sum.test.js":      "const sum = require('./sum');\n\ntest('adds', () => expect(sum(1, 2)).toBe(3));\n",
			"eslint.config.js": "module.exports = [{ rules: { 'no-unused-vars': 'error' } }];\n",
			"unused.js":        "let x = 1;\n",
		},
		steps: []step{
			{"npx jest 2>&1", 0, "1 passed"},
			{"npx eslint unused.js", 1, "'x' is assigned a value but never used"},
			{"npx prettier --check sum.js", 0, "All matched files use Prettier code style"},
			{"tsc --version && git --version", 0, "git version"},
		},
	}, {
		lang: "java",
		files: map[string]string{
			"pom.xml": `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>demo</groupId>
  <artifactId>demo</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>junit</groupId>
      <artifactId>junit</artifactId>
      <version>4.13.2</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
</project>
`,
			"src/main/java/demo/Calc.java":     "package demo;\n\npublic class Calc {\n  public static int add(int a, int b) { return a + b; }\n}\n",
			"src/test/java/demo/CalcTest.java": "package demo;\n\nimport static org.junit.Assert.assertEquals;\nimport org.junit.Test;\n\npublic class CalcTest {\n  @Test public void adds() { assertEquals(5, Calc.add(2, 3)); }\n}\n",
		},
		steps: []step{
			{"mvn -o -q -B package && jar tf target/demo-1.0.jar", 0, "demo/Calc.class"},
			{"cat target/surefire-reports/demo.CalcTest.txt", 0, "Tests run: 1, Failures: 0"},
		},
	}, {
		lang: "ruby",
		files: map[string]string{
			"calc.rb":           "# frozen_string_literal: true\n\n# Adds.\nmodule Calc\n  def self.add(left, right)\n    left + right\n  end\nend\n",
			"spec/calc_spec.rb": "require_relative '../calc'\n\nRSpec.describe Calc do\n  it 'adds' do\n    expect(Calc.add(2, 3)).to eq(5)\n  end\nend\n",
		},
		steps: []step{
			{"rspec", 0, "1 example, 0 failures"},
			{"rubocop calc.rb", 0, "1 file inspected, no offenses detected"},
			{"rubocop spec/calc_spec.rb", 1, "offense"},
		},
	}, {
		lang: "php",
		files: map[string]string{
			"composer.json": `{"name": "agent/demo", "description": "A demo", "type": "project", "license": "MIT", "require": {"php": ">=8.2"}}`,
		},
		steps: []step{
			{"composer validate --no-check-publish --no-check-lock 2>&1", 0, "./composer.json is valid"},
		},
	}} {
		t.Run(tc.lang, func(t *testing.T) {
			id := newSession(t, c, api.SessionRequest{Language: tc.lang})
			for name, content := range tc.files {
				if _, err := c.PutFile(ctx(t), id, name, strings.NewReader(content), 0o644); err != nil {
					t.Fatalf("writing %s: %v", name, err)
				}
			}
			for _, s := range tc.steps {
				req := api.ExecRequest{Argv: []string{"sh", "-c", s.script}}
				ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
				res, err := c.Exec(ctx, id, req)
				cancel()
				if err != nil {
					t.Fatalf("%s: %v", s.script, err)
				}
				if out := res.Stdout + res.Stderr; res.ExitCode != s.exit || !strings.Contains(out, s.says) {
					t.Errorf("%s: exit %d (want %d), want %q in:\n%s", s.script, res.ExitCode, s.exit, s.says, out)
				}
			}
		})
	}
}
