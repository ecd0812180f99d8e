package mcpserver

import (
	"context"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessage bounds one message an agent sends (a line of JSON-RPC): the
// server holds a message whole before it acts on it. 16 MiB carries
// files of several MiB in write_file; larger files go with `sandboxctl
// cp`.
const MaxMessage = 16 << 20

// Serve serves s to the agent at the other end of r and w (stdin and
// stdout for `sandboxctl mcp`) until it closes r. A message over
// MaxMessage ends the session with an error that names the bound.
func Serve(ctx context.Context, s *mcp.Server, r io.ReadCloser, w io.WriteCloser) error {
	// The SDK bounds frames too, with an error that does not say by how
	// much; this bound comes first.
	lines := &boundedLines{ReadCloser: r, max: MaxMessage}
	return s.Run(ctx, &mcp.IOTransport{Reader: lines, Writer: w, MaxLineLength: MaxMessage + 64<<10})
}

// ErrMessageTooLarge ends a session whose agent sent a message over
// MaxMessage.
var ErrMessageTooLarge = fmt.Errorf("a message over %d bytes (%d MiB): send large files with `sandboxctl cp`, or in parts", MaxMessage, MaxMessage>>20)

// boundedLines passes lines of at most max bytes and then fails the
// stream at the first longer one.
type boundedLines struct {
	io.ReadCloser
	max, run int
	err      error
}

func (b *boundedLines) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.ReadCloser.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			b.run = 0
			continue
		}
		if b.run++; b.run > b.max {
			b.err = ErrMessageTooLarge
			return i, nil // the lines before it still count
		}
	}
	return n, err
}
