package main

import "testing"

// A window's title is the sandbox's to choose: it reaches the terminal
// without its escape sequences.
func TestPrintableTitles(t *testing.T) {
	for in, want := range map[string]string{
		"Chromium":                      "Chromium",
		"a\x1b]52;c;ZXZpbA==\x07b":      "a\uFFFD]52;c;ZXZpbA==\uFFFDb",
		"line\rOVER":                    "line\uFFFDOVER",
		"\u202Egnp.exe":                 "\uFFFDgnp.exe",
		"caf\u00e9 \u2014 \u65e5\u672c": "caf\u00e9 \u2014 \u65e5\u672c",
		"\u009b31m":                     "\uFFFD31m",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}
