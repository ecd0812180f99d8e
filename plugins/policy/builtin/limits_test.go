package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/plugins/policy"
)

func rulesOf(v policy.Verdict) string {
	var r []string
	for _, f := range v.Findings {
		r = append(r, f.Rule)
	}
	return strings.Join(r, ",")
}

func TestLimits(t *testing.T) {
	ceil := policy.Limits{TimeoutMS: 30000, Memory: 512 << 20, CPUs: 1, Pids: 128}
	ok := policy.Request{Files: []policy.File{{Path: "a.py", Content: []byte("x")}}, Limits: policy.Limits{TimeoutMS: 1000, Memory: 64 << 20}, Ceilings: ceil}
	if v, _ := (limits{}).Check(context.Background(), ok); v.Deny || len(v.Findings) != 0 {
		t.Errorf("within limits: %+v", v)
	}
	big := policy.Request{Files: []policy.File{{Path: "a.py", Content: make([]byte, 2<<20)}}, Ceilings: ceil,
		Limits: policy.Limits{TimeoutMS: 60000, Memory: 1 << 30, CPUs: 4, Pids: 1000}}
	if v, _ := (limits{}).Check(context.Background(), big); !v.Deny || rulesOf(v) != "limits.file_size,limits.code_size,limits.timeout,limits.memory,limits.cpus,limits.pids" {
		t.Errorf("over limits: %s", rulesOf(v))
	}
	upload := policy.Request{Kind: policy.KindPut, Files: []policy.File{{Path: "data.csv", Content: make([]byte, 2<<20)}}, Ceilings: ceil,
		Options: map[string]string{"max_file_size": "1KiB"}}
	if v, _ := (limits{}).Check(context.Background(), upload); v.Deny || len(v.Findings) != 0 {
		t.Errorf("an upload is data, not a program: %s", rulesOf(v))
	}
	many := policy.Request{Files: make([]policy.File, 3), Options: map[string]string{"max_files": "2", "max_code_size": "lots"}}
	if v, _ := (limits{}).Check(context.Background(), many); !v.Deny || rulesOf(v) != "limits.options,limits.files" {
		t.Errorf("options: %s", rulesOf(v))
	}
}
