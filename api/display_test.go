package api

import "testing"

// A figure's text is its image's caption, with its chart's data between
// them or not; a final value's text, or text after other text, is not.
func TestIsCaption(t *testing.T) {
	png, chart, text := Display{MIME: "image/png"}, Display{MIME: ChartMIME}, Display{MIME: "text/plain"}
	value := Display{MIME: "text/plain", Main: true}
	for _, c := range []struct {
		ds   []Display
		i    int
		want bool
	}{
		{[]Display{png, text}, 1, true},
		{[]Display{png, chart, text}, 2, true},
		{[]Display{chart, text}, 1, false},
		{[]Display{png, value}, 1, false},
		{[]Display{text, text}, 1, false},
		{[]Display{text}, 0, false},
		{[]Display{png, chart}, 1, false},
	} {
		if got := IsCaption(c.ds, c.i); got != c.want {
			t.Errorf("%+v at %d: %v, want %v", c.ds, c.i, got, c.want)
		}
	}
}
