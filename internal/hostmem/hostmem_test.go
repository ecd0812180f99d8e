package hostmem

import "testing"

func TestLow(t *testing.T) {
	avail, ok := Available()
	if !ok || avail <= 0 {
		t.Fatalf("MemAvailable: %d %v", avail, ok)
	}
	if Low(0) || Low(1) {
		t.Error("0 and 1 byte are never low")
	}
	if !Low(avail * 64) {
		t.Errorf("%d bytes available is low against %d", avail, avail*64)
	}
}
