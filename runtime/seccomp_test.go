package runtime

import (
	"strings"
	"testing"
)

func TestSeccompProfileDeniesIOUring(t *testing.T) {
	p, err := SeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range deniedSyscalls {
		if strings.Contains(p, `"`+name+`"`) {
			t.Errorf("%s is allowed", name)
		}
	}
	if !strings.Contains(p, `"read"`) {
		t.Error("the profile lost Docker's allow-list")
	}
}
