package desktop

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/errdefs"
)

func at(v int) *int { return &v }

func TestCommandBuildsArgvs(t *testing.T) {
	for _, tc := range []struct {
		a    Action
		want string
	}{
		{Action{Kind: "move", X: at(10), Y: at(20)}, "--within 10,20 -- xdotool mousemove 10 20"},
		{Action{Kind: "click"}, "xdotool click --repeat 1 1"},
		{Action{Kind: "click", X: at(1), Y: at(2), Button: "right"}, "--within 1,2 -- xdotool mousemove 1 2 click --repeat 1 3"},
		{Action{Kind: "double_click", X: at(0), Y: at(0)}, "--within 0,0 -- xdotool mousemove 0 0 click --repeat 2 1"},
		{Action{Kind: "drag", X: at(1), Y: at(2), ToX: at(3), ToY: at(4)}, "--within 1,2 3,4 -- xdotool mousemove 1 2 mousedown 1 mousemove 3 4 mouseup 1"},
		{Action{Kind: "scroll", Direction: "down"}, "xdotool click --repeat 3 5"},
		{Action{Kind: "scroll", Direction: "left", Amount: 7, X: at(5), Y: at(5)}, "--within 5,5 -- xdotool mousemove 5 5 click --repeat 7 6"},
		{Action{Kind: "key", Keys: " ctrl+shift+t  Return "}, "xdotool key -- ctrl+shift+t Return"},
		{Action{Kind: "focus", Window: "25165827"}, "xdotool windowactivate --sync 25165827"},
	} {
		argv, err := Command(tc.a)
		if err != nil {
			t.Fatalf("%+v: %v", tc.a, err)
		}
		if strings.Join(argv, " ") != StateCommand+" "+tc.want {
			t.Errorf("%+v: %q, want %s %s", tc.a, argv, StateCommand, tc.want)
		}
	}
}

// What an agent types or opens is one argument, never shell text, and
// cannot pass for an option.
func TestTextAndTargetsStayArguments(t *testing.T) {
	text := "; rm -rf / $(id) `x` --help \"q\" 'r'\n"
	argv, err := Command(Action{Kind: "type", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{StateCommand, "xdotool", "type", "--delay", typeDelayMS, "--", text}; !reflect.DeepEqual(argv, want) {
		t.Fatalf("%q", argv)
	}
	argv, err = Command(Action{Kind: "open", Target: "http://127.0.0.1:8000/a b?c=$(id)"})
	if err != nil {
		t.Fatal(err)
	}
	if last := argv[len(argv)-1]; last != "http://127.0.0.1:8000/a b?c=$(id)" || strings.Contains(argv[len(argv)-3], "$(id)") || !strings.Contains(argv[len(argv)-3], "exec chromium -- ") {
		t.Fatalf("the target must be the script's argument, not its text: %q", argv)
	}
}

func TestCommandRefusesWhatIsWrong(t *testing.T) {
	for _, a := range []Action{
		{Kind: "launch"},
		{Kind: ""},
		{Kind: "move"},
		{Kind: "move", X: at(1)},
		{Kind: "click", X: at(32768), Y: at(0)},
		{Kind: "click", X: at(-1), Y: at(0)},
		{Kind: "click", X: at(0), Y: at(-5)},
		{Kind: "click", Button: "fourth"},
		{Kind: "drag", X: at(1), Y: at(1)},
		{Kind: "drag", X: at(1), Y: at(1), ToX: at(50000), ToY: at(1)},
		{Kind: "scroll"},
		{Kind: "scroll", Direction: "down", Amount: 1000},
		{Kind: "scroll", Direction: "down", Amount: -1},
		{Kind: "type"},
		{Kind: "type", Text: strings.Repeat("a", MaxText+1)},
		{Kind: "type", Text: "a\x00b"},
		{Kind: "type", Text: "\xff"},
		{Kind: "key"},
		{Kind: "key", Keys: "--help"},
		{Kind: "key", Keys: "a;b"},
		{Kind: "key", Keys: "ctrl+"},
		{Kind: "key", Keys: "shift exec mount"},
		{Kind: "key", Keys: "shift EXEC touch pwned"},
		{Kind: "key", Keys: "Sleep 40"},
		{Kind: "key", Keys: "a windowKill"},
		{Kind: "open", Target: strings.Repeat("a", MaxTarget+1)},
		{Kind: "open", Target: "a\nb"},
		{Kind: "key", Keys: strings.Repeat("a ", maxKeys+1)},
		{Kind: "open"},
		{Kind: "open", Target: "--version"},
		{Kind: "focus", Window: "0x1e00003"},
		{Kind: "focus", Window: "1; id"},
	} {
		if argv, err := Command(a); errdefs.KindOf(err) != errdefs.Invalid {
			t.Errorf("%+v: %q %v, want an invalid-request error", a, argv, err)
		}
	}
}

func TestParseScreen(t *testing.T) {
	s, err := ParseScreen([]byte("screen 1024 768\ncursor 5 6\nfocus 25165827\nwindow 18874371 xfce4-panel\nwindow 25165827 a title with  spaces - Chromium\nwindow 7 \n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Screen{Width: 1024, Height: 768, CursorX: 5, CursorY: 6, Focused: "25165827",
		Windows: []Window{{"18874371", "xfce4-panel"}, {"25165827", "a title with  spaces - Chromium"}, {"7", ""}}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("%+v", s)
	}
	if s, _ := ParseScreen([]byte("screen 1 1\ncursor 0 0\nfocus 0\n")); s.Focused != "" || s.Windows != nil {
		t.Fatalf("no focus, no windows: %+v", s)
	}
	for _, bad := range []string{"", "screen 1 1\n", "cursor 1 1\n", "screen a b\ncursor 1 1\n", "screen 1 1\ncursor 1\n"} {
		if _, err := ParseScreen([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
