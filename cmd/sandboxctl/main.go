// Command sandboxctl drives sandboxd from the shell. It talks to the daemon
// only through the public client package.
//
// Exit codes follow docker run: the program's own code; 124 when it timed
// out; 137 when it was killed for memory; 125 when sandboxctl or sandboxd
// failed (unreachable daemon, bad request), with the reason on stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// Exit codes of sandboxctl's own failures.
const (
	exitFailed    = 125
	exitDenied    = 126 // a policy denied the request
	exitTimeout   = 124
	exitOOM       = 137
	exitUnhealthy = 1
)

// exitError carries an exit code and, optionally, a message for stderr.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func fail(format string, args ...any) error {
	return &exitError{code: exitFailed, msg: fmt.Sprintf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRoot().ExecuteContext(ctx)
	stop()
	if err == nil {
		return
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		ee = &exitError{code: exitFailed, msg: err.Error()}
	}
	if ee.msg != "" {
		fmt.Fprintln(os.Stderr, "sandboxctl:", ee.msg)
	}
	os.Exit(ee.code)
}

// version is sandboxctl's, set at build time.
var version = "dev"

type globals struct {
	socket string
}

func (g *globals) client() *client.Client { return client.New(g.socket) }

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "sandboxctl",
		Version:       version,
		Short:         "Run untrusted code in sandboxd's containers",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	socket := os.Getenv("SANDBOXD_SOCKET")
	if socket == "" {
		socket = client.DefaultSocket
	}
	root.PersistentFlags().StringVar(&g.socket, "socket", socket, "sandboxd's Unix socket (env SANDBOXD_SOCKET)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fail("%v (see --help)", err) })
	root.AddCommand(newRunCmd(g), newStatusCmd(g), newLanguagesCmd(g), newPoolsCmd(g), newSecretsCmd(g),
		newPluginsCmd(g), newHistoryCmd(g), newStatsCmd(g),
		newSessionCmd(g), newExecCmd(g), newShellCmd(g), newPortForwardCmd(g), newWatchCmd(g), newContextCmd(g), newSnapshotCmd(g), newCpCmd(g), newProjectCmd(g), newImagesCmd(g), newValidateCmd(g),
		newDesktopCmd(g), newApprovalsCmd(g), newDashboardCmd(g), newMCPCmd(g))
	addCompletions(root, g)
	return root
}

// apiFailure turns a client error into exit 125 with the daemon's words,
// or 126 with the findings when a policy denied the request.
func apiFailure(err error) error {
	if errors.Is(err, context.Canceled) {
		return &exitError{code: 130, msg: "interrupted"}
	}
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code == api.CodePolicyDenied {
		printFindings(os.Stderr, "sandboxctl: ", ae.Findings)
		return &exitError{code: exitDenied, msg: ae.Message}
	}
	if errors.As(err, &ae) && (ae.Code == api.CodeApprovalDenied || ae.Code == api.CodeApprovalTimeout) {
		return &exitError{code: exitDenied, msg: ae.Message}
	}
	return fail("%v", err)
}

// printFindings writes policy findings one per line, as compilers do.
func printFindings(w io.Writer, prefix string, findings []api.Finding) {
	for _, f := range findings {
		fmt.Fprintf(w, "%s%s\n", prefix, f)
	}
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
