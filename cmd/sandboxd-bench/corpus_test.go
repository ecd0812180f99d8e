package main

import "testing"

// Every language's corpus has corpusSize programs, no two alike.
func TestCorpusProgramsAreDistinct(t *testing.T) {
	for _, l := range corpus {
		progs, err := l.programs()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, p := range progs {
			seen[p] = true
		}
		if len(progs) != corpusSize || len(seen) != corpusSize {
			t.Errorf("%s: %d programs, %d distinct; want %d", l.name, len(progs), len(seen), corpusSize)
		}
	}
}
