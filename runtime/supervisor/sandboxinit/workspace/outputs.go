package workspace

import (
	"io/fs"
	"path"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Bounds of watching a session's outputs directory: the files looked at
// per execution, and the changed ones reported.
const (
	maxOutputsScanned  = 10000
	maxOutputsReported = 100
)

// Outputs are the regular files under an outputs directory and what
// each looked like, by path.
type Outputs map[string]outputState

// outputState is what a file looked like.
type outputState struct {
	size    int64
	modTime int64
}

// ScanOutputs notes the regular files under dir (relative to the
// workspace), through os.Root: a link never leads out of the workspace,
// and none below dir is followed.
func (s *Server) ScanOutputs(dir string) Outputs {
	if dir == "" {
		return nil
	}
	root, err := s.openWorkspace()
	if err != nil {
		return nil
	}
	defer root.Close()
	out := Outputs{}
	seen := 0
	_ = fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if seen++; err != nil || seen > maxOutputsScanned {
			return fs.SkipAll
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			out[p] = outputState{size: info.Size(), modTime: info.ModTime().UnixNano()}
		}
		return nil
	})
	return out
}

// ChangedOutputs lists the files under dir that are new or changed since
// before, and counts those past the report's bound.
func (s *Server) ChangedOutputs(dir string, before Outputs) ([]supervisor.Output, int) {
	if dir == "" {
		return nil, 0
	}
	var list []supervisor.Output
	omitted := 0
	for p, now := range s.ScanOutputs(dir) {
		if was, ok := before[p]; ok && was == now {
			continue
		}
		if len(list) == maxOutputsReported {
			omitted++
			continue
		}
		list = append(list, supervisor.Output{Path: path.Clean(p), Size: now.size})
	}
	return list, omitted
}
