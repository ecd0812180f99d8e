package builtin

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sandboxd/sandboxd/internal/units"
	"github.com/sandboxd/sandboxd/plugins/policy"
)

// limits is the limits policy (enforce by default): program size, file
// count and size, and requested timeout, memory, cpus and pids within the
// language's ceilings.
//
// Options: max_code_size (all files together, default "1MiB"),
// max_file_size (default "1MiB"), max_files (default "100").
type limits struct{}

func (limits) Info(context.Context) (policy.Info, error) {
	return policy.Info{Name: "limits", Version: "1.0.0", DefaultMode: policy.ModeEnforce,
		Description: "program sizes, file counts and requested resources within the ceilings",
		Rules:       []string{"limits.code_size", "limits.file_size", "limits.files", "limits.timeout", "limits.memory", "limits.cpus", "limits.pids", "limits.options"}}, nil
}

func (limits) Check(_ context.Context, req policy.Request) (policy.Verdict, error) {
	var out []policy.Finding
	bad := func(rule, file, format string, args ...any) {
		out = append(out, policy.Finding{Rule: rule, Severity: policy.SeverityError, File: file, Message: fmt.Sprintf(format, args...)})
	}
	size := func(name string, def int64) int64 {
		if v, ok := req.Options[name]; ok {
			n, err := units.ParseByteSize(v)
			if err == nil && n > 0 {
				return n
			}
			bad("limits.options", "", "option %s is %q: a size such as \"1MiB\"", name, v)
		}
		return def
	}
	maxCode, maxFile := size("max_code_size", 1<<20), size("max_file_size", 1<<20)
	maxFiles := 100
	if v, ok := req.Options["max_files"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			maxFiles = n
		} else {
			bad("limits.options", "", "option max_files is %q: a positive number", v)
		}
	}
	if len(req.Files) > maxFiles && req.Kind != policy.KindPut {
		bad("limits.files", "", "%d files: at most %d", len(req.Files), maxFiles)
	}
	files := req.Files
	if req.Kind == policy.KindPut {
		files = nil // an upload is data, bounded by sessions.max_transfer, not a program
	}
	var total int64
	for _, f := range files {
		total += int64(len(f.Content))
		if n := int64(len(f.Content)); n > maxFile {
			bad("limits.file_size", f.Path, "%s is %s: at most %s per file", f.Path, units.ByteSize(n), units.ByteSize(maxFile))
		}
	}
	if total > maxCode {
		bad("limits.code_size", "", "the program is %s: at most %s", units.ByteSize(total), units.ByteSize(maxCode))
	}
	asked, ceil := req.Limits, req.Ceilings
	if asked.TimeoutMS > ceil.TimeoutMS && ceil.TimeoutMS > 0 {
		bad("limits.timeout", "", "asks for a timeout of %s: the ceiling is %s", time.Duration(asked.TimeoutMS)*time.Millisecond, time.Duration(ceil.TimeoutMS)*time.Millisecond)
	}
	if asked.Memory > ceil.Memory && ceil.Memory > 0 {
		bad("limits.memory", "", "asks for %s of memory: the ceiling is %s", units.ByteSize(asked.Memory), units.ByteSize(ceil.Memory))
	}
	if asked.CPUs > ceil.CPUs && ceil.CPUs > 0 {
		bad("limits.cpus", "", "asks for %g cpus: the ceiling is %g", asked.CPUs, ceil.CPUs)
	}
	if asked.Pids > ceil.Pids && ceil.Pids > 0 {
		bad("limits.pids", "", "asks for %d pids: the ceiling is %d", asked.Pids, ceil.Pids)
	}
	return policy.DenyAtError(out), nil
}
