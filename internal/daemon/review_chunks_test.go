package daemon_test

// From an outside review (each case failed before its fix, and stays as
// a regression test): uploads judged a chunk at a time, with chunks of
// 1 MiB, hid code behind a string opened before a cut and closed after
// it, or a line longer than a chunk; chunks are 16 MiB now, so these
// files are judged whole (a code file larger than a chunk keeps the gap:
// docs/policies.md says so). And what a person is shown about a held
// request must contain the line they are asked about.

import (
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
)

const reviewChunk = 1 << 20 // judgedChunk

// reviewPad is shell comment lines totalling exactly n bytes.
func reviewPad(n int) string {
	line := "# padding padding padding padding padding padding padding padding\n"
	s := strings.Repeat(line, n/len(line))
	if r := n - len(s); r > 0 {
		s += "#" + strings.Repeat("x", r-2) + "\n"
	}
	if len(s) != n {
		panic("pad")
	}
	return s
}

func TestReviewChunkBoundaryHidesFlaggedCode(t *testing.T) {
	d, sid := policySession(t, "policy \"patterns\" {\n  mode = \"enforce\"\n}\n")
	ctx := agent
	const tail = "curl -s http://127.0.0.1:9 | sh\n"
	// A quoted string that spans the chunk boundary: x='<LF>' is a
	// complete assignment, and the curl after it is code. The second
	// chunk starts with the closing quote, which its lexer reads as an
	// opening one: the rest of the chunk is "a string".
	head := "x='\n"
	quoted := reviewPad(reviewChunk-len(head)) + head + "'\n" + tail
	// A line longer than a chunk is cut at the chunk's size: here
	// between "cu" and "rl".
	long := "echo " + strings.Repeat("A", reviewChunk-len("echo ")-len(" ; cu")) + " ; cu" + "rl -s http://127.0.0.1:9 | sh\n"
	if long[reviewChunk-2:reviewChunk] != "cu" {
		t.Fatal("bad layout")
	}
	for _, tc := range []struct{ name, body string }{{"quote-across-boundary", quoted}, {"long-line-cut", long}} {
		// The control: the same construct in a small file is denied.
		var small string
		if tc.name == "quote-across-boundary" {
			small = head + "'\n" + tail
		} else {
			small = "echo x ; " + tail
		}
		if _, aerr := d.PutFile(ctx, sid, "small.sh", 0o755, nil, strings.NewReader(small)); !errdefs.Is(aerr, errdefs.PolicyDenied) {
			t.Fatalf("%s: control not denied: %v", tc.name, aerr)
		}
		w, aerr := d.PutFile(ctx, sid, tc.name+".sh", 0o755, nil, strings.NewReader(tc.body))
		if aerr == nil {
			t.Errorf("%s: a %d-byte upload holding `curl | sh` as code landed (findings %d)", tc.name, len(tc.body), len(w.Findings))
		} else if !errdefs.Is(aerr, errdefs.PolicyDenied) {
			t.Errorf("%s: %v", tc.name, aerr)
		}
	}
}

// The excerpt a person reads about a held request starts at the last
// finding when the first is within the chunk's first lines (first == 0
// counts as "unset"), so the line that caused the question can be left
// out of it. Here it is a small upload (one chunk): before this change
// the person read the whole file.
func TestReviewExcerptLeavesOutTheQuestionedLine(t *testing.T) {
	d, sid := policySession(t, "approval_timeout = \"5s\"\npolicy \"patterns\" {\n  mode = \"ask\"\n}\npolicy \"secrets\" {\n  mode = \"warn\"\n}\n")
	ctx := agent
	body := "#!/bin/sh\ncurl -s http://127.0.0.1:9/install.sh | sh\n" + strings.Repeat("echo step\n", 300) + "password = \"hunter22x\"\necho done\n"
	shown := make(chan state.Approval, 1)
	go func() {
		a := pendingOne(t, d)
		shown <- a
		_, _ = d.Approvals.Decide(a.ID, false, bob, "review test")
	}()
	_, aerr := d.PutFile(ctx, sid, "setup.sh", 0o755, nil, strings.NewReader(body))
	if !errdefs.Is(aerr, errdefs.ApprovalDenied) {
		t.Fatalf("not held: %v", aerr)
	}
	a := <-shown
	if a.Question.Line != 2 {
		t.Fatalf("question: %+v", a.Question)
	}
	for _, f := range a.Files {
		if strings.Contains(f.Content, "| sh") {
			return
		}
	}
	var first int
	if len(a.Files) > 0 {
		first = a.Files[0].FirstLine
	}
	t.Errorf("the person is asked about line 2 (`curl | sh`) but shown %d file part(s) starting at line %d, without it", len(a.Files), first)
}

// Per upload, the findings are at most 200 per policy per chunk, so the
// record and the approval of one upload grow with its size (up to
// max_transfer / 1 MiB chunks): the per-request bound of 200 no longer
// holds.
func TestReviewFindingsUnboundedPerUpload(t *testing.T) {
	d, sid := policySession(t, "policy \"secrets\" {\n  mode = \"warn\"\n}\n")
	ctx := agent
	// 199 findings a chunk (under the 200 a verdict may carry), 6 chunks.
	chunk := strings.Repeat("password = \"hunter22x\"\n", 199)
	chunk += reviewPad(reviewChunk - len(chunk))
	w, aerr := d.PutFile(ctx, sid, "many.txt", 0o644, nil, strings.NewReader(strings.Repeat(chunk, 6)))
	if aerr != nil {
		t.Fatal(aerr)
	}
	if len(w.Findings) > 200 {
		t.Errorf("one upload came back with %d findings (one request used to carry at most 200 per policy)", len(w.Findings))
	}
	_ = daemon.Written{}
}
