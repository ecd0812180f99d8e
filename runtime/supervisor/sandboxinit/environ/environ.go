// Package environ makes a program's environment and finds its command, as
// a shell would: the container's environment with a request's overlaid,
// and the executable a name stands for on its PATH.
package environ

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Merge overlays the request's KEY=VALUE pairs on the container's own
// environment (the image's ENV and what sandboxd set at create time).
func Merge(base, overlay []string) []string {
	index := map[string]int{}
	out := make([]string, 0, len(base)+len(overlay))
	for _, kv := range append(append([]string{}, base...), overlay...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := index[k]; ok {
			out[i] = kv
			continue
		}
		index[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// Value is key's value in env, the last one set ("" when unset).
func Value(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// LookPath finds file in path the way a shell does; names with a slash are
// taken relative to dir.
func LookPath(file, dir, path string) (string, error) {
	if strings.Contains(file, "/") {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		if isExecutable(file) {
			return file, nil
		}
		return "", errors.New(file + ": not found or not executable")
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, file)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New(file + ": command not found")
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
