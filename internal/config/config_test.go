package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultsFillWhatTheFileLeavesOut(t *testing.T) {
	cfg, err := Parse("/etc/sandboxd/x.hcl", []byte(`
plugin_dir = "plugins"
language "python" {}
language "node" {
  image = "img"
  limits {
    memory = "1g"
  }
  pool {
    min_idle = 0
    max = 3
  }
}`))
	if err != nil {
		t.Fatal(err)
	}
	b := Builtin()
	if cfg.Socket != b.Socket || cfg.Defaults != b.Defaults || cfg.PluginDir != "/etc/sandboxd/plugins" {
		t.Fatalf("socket %q defaults %+v plugin_dir %q", cfg.Socket, cfg.Defaults, cfg.PluginDir)
	}
	py, node := cfg.Languages[0], cfg.Languages[1]
	if py.Plugin != "python" || py.Pool != defaultPool() || py.Limits != b.Defaults {
		t.Fatalf("python: %+v", py)
	}
	if node.Limits.Memory != 1<<30 || node.Limits.Timeout != 30*time.Second || node.Pool.Max != 3 || node.Pool.MinIdle != 0 {
		t.Fatalf("node: %+v", node)
	}
}

func TestErrorsNameFileLineAndField(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"nope = 1\nlanguage \"a\" {}", `f.hcl:1,1: Unsupported argument`},
		{"defaults {\n  timeout = \"soon\"\n}\nlanguage \"a\" {}", `f.hcl:2,3: "timeout" is "soon"`},
		{"defaults {\n  cpus = 0\n}\nlanguage \"a\" {}", `f.hcl:2,3: "cpus" is 0`},
		{"defaults {\n  pids = 2\n}\nlanguage \"a\" {}", `"pids" is 2; a process count of at least 8`},
		{"language \"a\" {}\nlanguage \"a\" {}", `language "a" is defined twice`},
		{"language \"a\" {\n  pool {\n    max = 0\n  }\n}", `f.hcl:3,5: "max" is 0`},
		{"language \"a\" {\n  colour = 1\n}", `f.hcl:2,3: Unsupported argument`},
		{"", "no language blocks"},
		{"language \"a\" {\n  packages = [\"ok\", \"x; rm -rf /\"]\n}", `f.hcl:2,3: "packages" holds "x; rm -rf /"`},
		{"build_ca_file = \"/no/such.crt\"\nlanguage \"a\" {}", `f.hcl:1,1: "build_ca_file" cannot be read`},
		{"network {\n  allow = [\"ok.example.org\", \"http://x.org\"]\n}\nlanguage \"a\" {}", `f.hcl:2,3: "allow" "http://x.org" is a URL: write the host alone, such as "x.org"; a host name`},
		{"language \"a\" {\n  network {\n    allow = [\"*.com\"]\n  }\n}", `f.hcl:3,5: "allow" "*.com": a wildcard needs a domain of at least two labels`},
		{"language \"a\" {\n  network {\n    ca_file = \"/x\"\n  }\n}", `"ca_file" is set in a language block; the CA file is one for every sandbox`},
		{"network {\n  max_connections = 0\n}\nlanguage \"a\" {}", `"max_connections" is 0`},
		{"language \"a\" {\n  install_command = [\"x\"]\n}", `"install_command" is set for plugin "a"`},
		{"sandbox_uids = \"0-10\"\nlanguage \"a\" {}", `f.hcl:1,1: "sandbox_uids" "0-10" starts below 1000`},
		{"sandbox_uids = \"1-\"\nlanguage \"a\" {}", `is not FIRST-LAST`},
		{"http {\n  listen = \"dashboard.example:7070\"\n}\nlanguage \"a\" {}", `f.hcl:2,3: "listen" names the host "dashboard.example"; "127.0.0.1:7070"`},
		{"http {\n  listen = \"7070\"\n}\nlanguage \"a\" {}", `"listen" is "7070": address 7070: missing port in address`},
		{"http {\n  listen = \"127.0.0.1:http\"\n}\nlanguage \"a\" {}", `"listen" has port "http"`},
		{"language \"a\" {\n  runtime = \"kubernetes\"\n}", `f.hcl:2,3: "runtime" is "kubernetes" with no runtime "kubernetes" block`},
		{"runtime \"nomad\" {}\nlanguage \"a\" {}", `runtime "nomad" is not one sandboxd has`},
		{"runtime \"kubernetes\" {}\nlanguage \"a\" {}", `"kubeconfig" is missing`},
		{"runtime \"kubernetes\" {\n  kubeconfig = \"/no/such\"\n}\nlanguage \"a\" {}", `f.hcl:2,3: "kubeconfig" cannot be read`},
		{"runtime \"kubernetes\" {\n  kubeconfig = \"/etc/hostname\"\n  namespace = \"Sand_Box\"\n}\nlanguage \"a\" {}", `"namespace" "Sand_Box" is not a namespace name`},
		{"runtime \"kubernetes\" {\n  kubeconfig = \"/etc/hostname\"\n}\nlanguage \"a\" {\n  runtime = \"kubernetes\"\n  network {\n    allow = [\"x.org\"]\n  }\n}", `"runtime" is kubernetes for a language with egress`},
		{"e2b {}\nlanguage \"a\" {}", `"api_keys" is missing`},
		{"e2b {\n  api_keys = [\"e2b_00ff\"]\n}\nlanguage \"a\" {}", `f.hcl:2,3: "api_keys" has a key of 4 hex digits`},
		{"e2b {\n  api_keys = [\"e2b_sandboxd_key_of_words_00\"]\n}\nlanguage \"a\" {}", `"api_keys" has a key that is not "e2b_" and lowercase hex digits`},
		{"e2b {\n  api_keys = [\"e2b_0123456789abcdef0123\"]\n  template \"t\" {\n    language = \"b\"\n  }\n}\nlanguage \"a\" {}", `f.hcl:4,5: "language" is "b", which has no language block`},
		{"e2b {\n  api_keys = [\"e2b_0123456789abcdef0123\"]\n  template \"t\" {}\n}\nlanguage \"a\" {}", `"language" is missing`},
		{"e2b {\n  api_keys = [\"e2b_0123456789abcdef0123\"]\n  template \"t\" {\n    language = \"a\"\n    limits {\n      memory = \"8GiB\"\n    }\n  }\n}\nlanguage \"a\" {}", `"limits" are above language a's`},
		{"e2b {\n  api_keys = [\"e2b_0123456789abcdef0123\"]\n  template \"t\" {\n    language = \"a\"\n    start = []\n  }\n}\nlanguage \"a\" {}", `"start" is empty`},
		{"secret \"gh\" {\n  value_env = \"SANDBOXD_TEST_UNSET\"\n  hosts = [\"api.github.com\"]\n}\nlanguage \"a\" {}", `f.hcl:2,3: "value_env" names SANDBOXD_TEST_UNSET, which is not set`},
		{"secret \"gh\" {\n  hosts = [\"api.github.com\"]\n}\nlanguage \"a\" {}", `"value_env" or value_file must be given`},
		{"secret \"g-h\" {\n  value_file = \"/etc/hostname\"\n  hosts = [\"x.org\"]\n}\nlanguage \"a\" {}", `"g-h" is not a secret's name`},
		{"secret \"gh\" {\n  value_file = \"/etc/hostname\"\n}\nlanguage \"a\" {}", `"hosts" is empty`},
		{"docker {\n  host = \"ssh://me@engine\"\n}\nlanguage \"a\" {}", `f.hcl:2,3: "host" "ssh://me@engine" is not an engine address`},
		{"docker {\n  tls {\n    ca_file = \"/etc/hostname\"\n  }\n}\nlanguage \"a\" {}", `"tls" is for an engine over TCP, and host is ""`},
		{"docker {\n  host = \"tcp://127.0.0.1:2376\"\n  tls {\n    ca_file = \"/etc/hostname\"\n    cert_file = \"/etc/hostname\"\n  }\n}\nlanguage \"a\" {}", `"cert_file" and key_file come together`},
		{"docker {\n  host = \"tcp://127.0.0.1:2376\"\n  tls {\n    ca_file = \"/no/ca.pem\"\n  }\n}\nlanguage \"a\" {}", `f.hcl:4,5: "ca_file" cannot be read`},
		{"network {\n  ca_file = \"\"\n}\nsecret \"gh\" {\n  value_file = \"/etc/hostname\"\n  hosts = [\"x.org\"]\n}\nlanguage \"a\" {}", `network.ca_file is ""`},
	} {
		_, err := Parse("f.hcl", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: want %q, got %v", tc.src, tc.want, err)
		}
	}
}

func TestShippedConfigIsValid(t *testing.T) {
	cfg, err := Load("../../sandboxd.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Languages) < 2 || cfg.Defaults.Network != "none" {
		t.Fatalf("%+v", cfg)
	}
}

func TestSandboxUIDsMustBeNoHostUsers(t *testing.T) {
	etc := t.TempDir()
	if err := os.WriteFile(filepath.Join(etc, "subuid"), []byte("alice:1000000000:65536\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(old string) { hostEtc = old }(hostEtc)
	hostEtc = etc
	_, err := Parse("f.hcl", []byte("language \"a\" {}"))
	if err == nil || !strings.Contains(err.Error(), "subuid gives alice 1000000000-1000065535") {
		t.Fatalf("the default range over a subordinate range: %v", err)
	}
	if _, err := Parse("f.hcl", []byte("sandbox_uids = \"2000000000-2000000999\"\nlanguage \"a\" {}")); err != nil {
		t.Fatal(err)
	}
}

// The Kubernetes runtime block, and a language that runs in it.
func TestKubernetesRuntimeBlock(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kube.conf"), []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(filepath.Join(dir, "x.hcl"), []byte(`
runtime "kubernetes" {
  kubeconfig     = "kube.conf"
  runtime_class  = "gvisor"
  node_selector  = { pool = "sandboxes" }
  image_registry = "registry.example:5000/"
}
language "python" {
  runtime = "kubernetes"
}
language "node" {}`))
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Kubernetes
	if k == nil || k.Kubeconfig != filepath.Join(dir, "kube.conf") || k.Namespace != "sandboxd" || k.RuntimeClass != "gvisor" ||
		k.NodeSelector["pool"] != "sandboxes" || k.ImageRegistry != "registry.example:5000" {
		t.Fatalf("%+v", k)
	}
	if cfg.Languages[0].Runtime != KubernetesRuntime || cfg.Languages[1].Runtime != "runc" {
		t.Fatalf("runtimes: %q %q", cfg.Languages[0].Runtime, cfg.Languages[1].Runtime)
	}
}

// A tls block's files are read relative to the configuration file.
func TestDockerTLS(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := Parse(filepath.Join(dir, "x.hcl"), []byte(`
docker {
  host = "tcp://127.0.0.1:2376"
  tls {
    ca_file   = "ca.pem"
    cert_file = "cert.pem"
    key_file  = "key.pem"
  }
}
language "python" {}`))
	if err != nil {
		t.Fatal(err)
	}
	want := DockerTLS{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}
	if cfg.Docker.TLS == nil || *cfg.Docker.TLS != want || cfg.Docker.Host != "tcp://127.0.0.1:2376" {
		t.Fatalf("%+v", cfg.Docker)
	}
}

// A language's instructions are text, or file("...") relative to the
// configuration file; a file that is missing or not text is an error at
// its line.
func TestE2BTemplates(t *testing.T) {
	cfg, err := Parse("f.hcl", []byte(`
e2b {
  api_keys = ["e2b_0123456789abcdef0123"]
  template "ds" {
    language = "python"
    env      = { A = "1" }
  }
}
language "python" {}
language "bash" {}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]E2BTemplate{"python": {Language: "python"}, "bash": {Language: "bash"}, "base": {Language: "python"},
		"code-interpreter-v1": {Language: "python"}, "ds": {Language: "python", Env: map[string]string{"A": "1"}}}
	if e := cfg.E2B; e == nil || e.Listen != "127.0.0.1:4982" || !reflect.DeepEqual(e.Templates, want) {
		t.Fatalf("%+v", cfg.E2B)
	}
}

func TestLanguageInstructions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "py.md"), []byte("Use pandas.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin.md"), []byte{0xff, 0xfe}, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(filepath.Join(dir, "s.hcl"), []byte(`
language "python" {
  instructions = file("py.md")
}
language "node" {
  instructions = "Use npm packages from the image only."
}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Languages[0].Instructions != "Use pandas.\n" || cfg.Languages[1].Instructions != "Use npm packages from the image only." {
		t.Errorf("instructions: %q %q", cfg.Languages[0].Instructions, cfg.Languages[1].Instructions)
	}
	for file, want := range map[string]string{"none.md": "no such file", "bin.md": "not UTF-8"} {
		_, err := Parse(filepath.Join(dir, "s.hcl"), []byte("language \"python\" {\n  instructions = file(\""+file+"\")\n}\n"))
		if err == nil || !strings.Contains(err.Error(), "s.hcl:2,") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", file, err)
		}
	}
}

// A secret's value comes from sandboxd's environment or a file (its
// trailing newline dropped), its hosts are allow-list entries.
func TestSecrets(t *testing.T) {
	t.Setenv("SANDBOXD_TEST_TOKEN", "from-env")
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("f.hcl", []byte(fmt.Sprintf(`
secret "a" {
  value_env = "SANDBOXD_TEST_TOKEN"
  hosts     = ["api.example.com"]
}
secret "b" {
  value_file = %q
  hosts      = ["*.example.org:8443", "127.0.0.1:9000"]
  header     = "x-api-key"
}
secret "c" {
  value_env = "SANDBOXD_TEST_TOKEN"
  hosts     = ["maps.example.com"]
  query     = "key"
}
language "python" {}
`, file)))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Secrets["a"], cfg.Secrets["b"]
	if c := cfg.Secrets["c"]; a.Header != "Authorization" || a.Query != "" || b.Header != "X-Api-Key" || c.Query != "key" || c.Header != "" {
		t.Errorf("where they go: %+v", cfg.Secrets)
	}
	if len(cfg.Secrets) != 3 || a.Value != "from-env" || a.Hosts.Entry("api.example.com", 443) == "" ||
		b.Value != "from-file" || b.Hosts.Entry("x.example.org", 8443) == "" || b.Hosts.Entry("127.0.0.1", 9000) == "" || b.Hosts.Entry("x.example.org", 443) != "" {
		t.Fatalf("%+v", cfg.Secrets)
	}
}

// A secret goes in one place a request can carry it, and its value must
// be one a header or query can carry as it is.
func TestSecretPlaces(t *testing.T) {
	t.Setenv("SANDBOXD_TEST_TOKEN", "from-env")
	t.Setenv("SANDBOXD_TEST_SPACED", "two words")
	t.Setenv("SANDBOXD_TEST_PIN", "12345678")
	for body, want := range map[string]string{
		`header = "X-Key"` + "\n" + `query = "k"`: `"header" is set, and query too`,
		`header = "Host"`:                         `"Host" cannot carry a secret`,
		`header = "Bad Name"`:                     `"Bad Name" cannot carry a secret`,
		`query = "a&b"`:                           `"a&b" is not a query parameter's name`,
	} {
		_, err := Parse("f.hcl", []byte("secret \"s\" {\n  value_env = \"SANDBOXD_TEST_TOKEN\"\n  hosts = [\"api.example.com\"]\n  "+body+"\n}\nlanguage \"python\" {}\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	_, err := Parse("f.hcl", []byte("secret \"s\" {\n  value_env = \"SANDBOXD_TEST_SPACED\"\n  hosts = [\"api.example.com\"]\n}\nlanguage \"python\" {}\n"))
	if err == nil || !strings.Contains(err.Error(), "holds a space") {
		t.Errorf("a value with a space: %v", err)
	}
	_, err = Parse("f.hcl", []byte("secret \"s\" {\n  value_env = \"SANDBOXD_TEST_PIN\"\n  hosts = [\"api.example.com\"]\n}\nlanguage \"python\" {}\n"))
	if err == nil || !strings.Contains(err.Error(), "only digits") {
		t.Errorf("a numeric value: %v", err)
	}
}
