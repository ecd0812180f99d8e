package units

import (
	"encoding/json"
	"testing"
	"time"
)

func TestSizesAsPeopleWriteThem(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "128m": 128 << 20, "256MiB": 256 << 20, "1g": 1 << 30, "0": 0} {
		if n, err := ParseByteSize(in); err != nil || n != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "lots", "-5m"} {
		if n, err := ParseByteSize(bad); err == nil {
			t.Errorf("ParseByteSize(%q) = %d, want an error", bad, n)
		}
	}
	var sizes struct{ A, B ByteSize }
	if err := json.Unmarshal([]byte(`{"A": "2k", "B": 10}`), &sizes); err != nil || sizes.A != 2048 || sizes.B != 10 {
		t.Errorf("sizes from JSON: %+v %v", sizes, err)
	}
	if s := ByteSize(128 << 20).String(); s != "128MiB" {
		t.Errorf("String: %q", s)
	}
	if err := json.Unmarshal([]byte(`{"A": true}`), &sizes); err == nil {
		t.Error("a size from true")
	}
}

func TestDurationsBothWays(t *testing.T) {
	var d struct{ A, B Duration }
	if err := json.Unmarshal([]byte(`{"A": "1.5s", "B": 2}`), &d); err != nil || time.Duration(d.A) != 1500*time.Millisecond || time.Duration(d.B) != 2*time.Second {
		t.Fatalf("durations from JSON: %+v %v", d, err)
	}
	if out, _ := json.Marshal(d); string(out) != `{"A":"1.5s","B":"2s"}` {
		t.Errorf("durations to JSON: %s", out)
	}
	if err := json.Unmarshal([]byte(`{"A": "soon"}`), &d); err == nil {
		t.Error("a duration from \"soon\"")
	}
}
