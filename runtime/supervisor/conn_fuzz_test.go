package supervisor

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// The host's end takes whatever the supervisor (beside untrusted code)
// writes: every line either serves the call it names or ends the
// connection as dead; never a panic, never a call left waiting.
func FuzzConnFromSupervisor(f *testing.F) {
	f.Add(`{"op":"out","stream":"stdout","data":"aGk="}` + "\n" + `{"op":"exit","result":{"exit_code":0}}`)
	f.Add(`{"op":"out","stream":"stderr","data":"` + strings.Repeat("QUFB", 40) + `"}` + "\n" + `{"op":"in_ack"}` + "\n" + `{"op":"done","done":{}}`)
	f.Add(`{"op":"exit"}` + "\n" + `{"op":"hello","nonce":"x","version":1}` + "\n{torn")
	f.Add(`{"op":"out","stream":"data","data":"eA=="}` + "\n" + `{"op":"nope"}`)
	f.Fuzz(func(t *testing.T, lines string) {
		pr, pw := io.Pipe()
		c := NewConn(pr, io.Discard)
		go func() { <-c.Done(); _, _ = io.Copy(io.Discard, pr) }() // a dead connection reads no more
		c.mu.Lock()
		id := c.nextID + 1 // the id the call below gets
		c.mu.Unlock()
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = c.Exec(ctx, ExecRequest{Argv: []string{"x"}, TimeoutMS: 1000, OutputLimit: 64}, strings.NewReader("in"), func(string, []byte) {})
		}()
		for _, line := range strings.Split(lines, "\n") {
			var m Message
			if json.Unmarshal([]byte(line), &m) == nil {
				m.ID = id
				b, _ := json.Marshal(m)
				line = string(b)
			}
			_, _ = io.WriteString(pw, line+"\n")
		}
		pw.Close()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("the call never ended after the supervisor's stdout did")
		}
	})
}
