package config

import "testing"

// Any file, however malformed, gives a configuration or an error; never a
// panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte("language \"python\" {}"))
	f.Add([]byte("sandbox_uids = \"2000-3000\"\ndefaults {\n  timeout = \"5s\"\n  memory = \"1GiB\"\n}\nlanguage \"x\" {\n  plugin = \"generic\"\n  run = [\"{{.Entry}}\"]\n  pool {\n    max = 2\n  }\n}"))
	f.Add([]byte("policy \"p\" {\n  mode = \"warn\"\n  options = { a = \"b\" }\n}\nlanguage \"a\" {\n  limits {\n    pids = 8\n  }\n}"))
	f.Add([]byte("sessions {\n  max = -1\n}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, err := Parse("f.hcl", src)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("config %v with error %v", cfg, err)
		}
	})
}
