package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// shellLanguage is the language whose blocks run in whatever session the
// document is using: every image has bash, and a shell block after a
// Python block usually means to look at what it did.
const shellLanguage = "bash"

// codeBlock is a fenced code block of a Markdown document.
type codeBlock struct {
	Info string `json:"info"` // the first word of the fence's info string
	Line int    `json:"line"` // of the opening fence
	Code string `json:"-"`
}

// codeBlocks returns the fenced code blocks of doc in order, as CommonMark
// reads them (fences of ``` or ~~~, in lists and quotes too).
func codeBlocks(doc []byte) []codeBlock {
	var blocks []codeBlock
	root := goldmark.DefaultParser().Parse(text.NewReader(doc))
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		fb, ok := n.(*ast.FencedCodeBlock)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		b := codeBlock{Info: strings.ToLower(strings.Trim(string(fb.Language(doc)), "{}."))}
		var code strings.Builder
		for i := 0; i < fb.Lines().Len(); i++ {
			seg := fb.Lines().At(i)
			code.Write(seg.Value(doc))
		}
		b.Code = code.String()
		switch {
		case fb.Info != nil:
			b.Line = 1 + bytes.Count(doc[:fb.Info.Segment.Start], []byte("\n"))
		case fb.Lines().Len() > 0:
			b.Line = bytes.Count(doc[:fb.Lines().At(0).Start], []byte("\n"))
		}
		blocks = append(blocks, b)
		return ast.WalkSkipChildren, nil
	})
	return blocks
}

// blockResult is one block's outcome in --json output.
type blockResult struct {
	codeBlock
	Language string         `json:"language,omitempty"`
	Session  string         `json:"session,omitempty"`
	Skipped  string         `json:"skipped,omitempty"` // why it did not run
	Result   *api.RunResult `json:"result,omitempty"`
	Error    *api.Error     `json:"error,omitempty"` // e.g. a policy denial
}

// markdownRun runs a document's blocks in sessions: one per language,
// made when its first block comes, all closed at the end.
type markdownRun struct {
	c         *client.Client
	asJSON    bool
	timeout   time.Duration
	limits    *api.Limits       // of every session
	env       map[string]string // of every session
	unlabeled string            // the language of blocks whose fence has none
	names     map[string]string // name, alias or extension -> language
	sessions  map[string]string // language -> session id
	current   string            // the session the last block ran in
	contexts  map[string]bool   // languages whose blocks run in a context
	images    string            // the prefix of the images blocks show
}

// runDocument runs the blocks of the Markdown document in file.
func (m *markdownRun) runDocument(ctx context.Context, file string) error {
	doc, err := readInput(file)
	if err != nil {
		return err
	}
	blocks := codeBlocks(doc)
	if len(blocks) == 0 {
		return fail("%s has no fenced code blocks (```python ... ```)", file)
	}
	langs, err := m.c.Languages(ctx)
	if err != nil {
		return apiFailure(err)
	}
	m.names, m.sessions, m.contexts = map[string]string{}, map[string]string{}, map[string]bool{}
	// Images go beside the document (for stdin, here).
	m.images = strings.TrimSuffix(file, filepath.Ext(file))
	if file == "-" {
		m.images = "markdown"
	}
	for _, l := range langs {
		m.contexts[l.Name] = l.Contexts
		for _, n := range append(append([]string{l.Name}, l.Aliases...), l.Extensions...) {
			m.names[strings.ToLower(n)] = l.Name
		}
	}
	defer m.close()

	var results []blockResult
	var first error // the exit of the first block that failed
	for i, b := range blocks {
		r, err := m.run(ctx, i+1, b)
		results = append(results, r)
		if err != nil && first == nil {
			first = err
		}
		if ctx.Err() != nil {
			return apiFailure(ctx.Err())
		}
	}
	if m.asJSON {
		if err := printJSON(struct {
			Blocks []blockResult `json:"blocks"`
		}{results}); err != nil {
			return err
		}
	}
	if first != nil {
		var ee *exitError
		if errors.As(first, &ee) {
			return &exitError{code: ee.code} // each block has said why already
		}
		return first
	}
	return nil
}

// run runs one block, printing its output as it comes unless --json; the
// error is the exit the block calls for, as for `sandboxctl run`.
func (m *markdownRun) run(ctx context.Context, n int, b codeBlock) (blockResult, error) {
	r := blockResult{codeBlock: b}
	info := b.Info
	if info == "" {
		info = strings.ToLower(m.unlabeled)
	}
	lang, ok := m.names[info]
	switch {
	case info == "":
		r.Skipped = "no language on its fence (give one with --lang)"
	case !ok:
		r.Skipped = fmt.Sprintf("%q is not a language sandboxd runs (see `sandboxctl languages`)", info)
	}
	if r.Skipped != "" {
		m.say("--- [%d] line %d: skipped: %s\n", n, b.Line, r.Skipped)
		return r, nil
	}
	r.Language = lang
	m.say("--- [%d] line %d, %s\n", n, b.Line, lang)
	req := api.ExecRequest{Code: b.Code, Timeout: api.Duration(m.timeout)}
	if m.contexts[lang] {
		// One interpreter per language, as a notebook has: a block sees
		// the variables of the blocks before it.
		req.Context = "markdown"
	}
	id := m.sessions[lang]
	if lang == shellLanguage && m.current != "" {
		id, req = m.current, api.ExecRequest{Argv: []string{"bash", "-c", b.Code}, Timeout: api.Duration(m.timeout)}
	}
	var err error
	if id == "" {
		var s *api.Session
		if s, err = m.c.CreateSession(ctx, api.SessionRequest{Language: lang, Limits: m.limits, Env: m.env}); err == nil {
			id, m.sessions[lang] = s.ID, s.ID
		}
	}
	if err == nil {
		m.current, r.Session = id, id
		if m.asJSON {
			r.Result, err = m.c.Exec(ctx, id, req)
		} else {
			r.Result, err = m.c.ExecStream(ctx, id, req, printEvent)
		}
	}
	if err != nil {
		if !errors.As(err, &r.Error) {
			r.Error = &api.Error{Code: api.CodeInternal, Message: err.Error()}
		}
		exit := apiFailure(err) // prints a denial's findings
		m.say("--- [%d] failed: %v\n", n, exit)
		return r, exit
	}
	if !m.asJSON {
		printFindings(os.Stderr, "sandboxctl: ", r.Result.Findings)
		m.show(n, r.Result)
	}
	exit := resultExit(r.Result)
	status := fmt.Sprintf("exit %d", r.Result.ExitCode)
	if exit != nil && exit.Error() != "" {
		status += ": " + exit.Error()
	}
	m.say("--- [%d] %s (%.0f ms)\n", n, status, r.Result.DurationMS)
	return r, exit
}

// show prints a block's final value, and writes the images it showed to
// files in the current directory, saying where.
func (m *markdownRun) show(n int, res *api.RunResult) {
	k := 0
	for i, d := range res.Display {
		ext := map[string]string{"image/png": ".png", "image/svg+xml": ".svg"}[d.MIME]
		switch {
		case api.IsCaption(res.Display, i):
		case d.MIME == "text/plain":
			fmt.Println(d.Data)
		case ext != "":
			data := []byte(d.Data)
			if d.MIME == "image/png" {
				var err error
				if data, err = base64.StdEncoding.DecodeString(d.Data); err != nil {
					continue
				}
			}
			k++
			name := fmt.Sprintf("%s-%d-%d%s", m.images, n, k, ext)
			if err := os.WriteFile(name, data, 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "sandboxctl: writing %s: %v\n", name, err)
				continue
			}
			m.say("--- [%d] image written to %s\n", n, name)
		}
	}
}

// say prints a line about the document's progress, unless --json.
func (m *markdownRun) say(format string, args ...any) {
	if !m.asJSON {
		fmt.Printf(format, args...)
	}
}

// close closes every session the run made, even after an interrupt.
func (m *markdownRun) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range m.sessions {
		if err := m.c.DeleteSession(ctx, id); err != nil {
			fmt.Fprintf(os.Stderr, "sandboxctl: closing session %s: %v\n", id, err)
		}
	}
}
