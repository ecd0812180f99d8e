package client_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestMain runs the examples against a real sandboxd, which they find
// through SANDBOXD_SOCKET as a program of yours would.
func TestMain(m *testing.M) {
	if why := testutil.DockerMissing(testutil.TestImages...); why != "" && os.Getenv("CI") != "true" {
		// Run nothing, so that go test says "no tests to run", not ok.
		fmt.Println("SKIP: the client examples need a real daemon:", why)
		flag.Parse()
		_ = flag.Set("test.run", "^$")
		os.Exit(m.Run())
	}
	suite := &testutil.Main{}
	d := testutil.StartDaemon(suite, testutil.Options{})
	os.Setenv("SANDBOXD_SOCKET", d.Socket)
	code := m.Run()
	suite.Close()
	testutil.RemoveBinaries()
	os.Exit(code)
}

// Run a program once and read its result.
func ExampleClient_Run() {
	c := client.New("") // $SANDBOXD_SOCKET, else /run/sandboxd/sandboxd.sock
	res, err := c.Run(context.Background(), api.RunRequest{
		Language: "python",
		Code:     "import sys\nprint('hello from', sys.argv[1])\nsys.exit(3)",
		Args:     []string{"the sandbox"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Stdout)
	fmt.Println("exit code:", res.ExitCode, "timed out:", res.TimedOut)
	// Output:
	// hello from the sandbox
	// exit code: 3 timed out: false
}

// Errors from the daemon are *api.Error with a stable code.
func ExampleClient_Run_errors() {
	c := client.New("")
	_, err := c.Run(context.Background(), api.RunRequest{Language: "cobol", Code: "DISPLAY 'HI'."})
	var ae *api.Error
	if errors.As(err, &ae) {
		fmt.Println(ae.Code)
	}
	// Output:
	// unknown_language
}

// Stream output as the program produces it, then get the result.
func ExampleClient_RunStream() {
	c := client.New("")
	res, err := c.RunStream(context.Background(), api.RunRequest{
		Language: "node",
		Code:     "for (const n of [1, 2, 3]) console.log(`line ${n}`)",
	}, func(ev api.Event) {
		if ev.Type == api.EventStdout {
			text, _ := api.DecodeBytes(ev.Data, ev.Encoding)
			fmt.Print(string(text))
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("exit code:", res.ExitCode)
	// Output:
	// line 1
	// line 2
	// line 3
	// exit code: 0
}

// A session keeps its files (and processes) between executions.
func ExampleClient_CreateSession() {
	ctx := context.Background()
	c := client.New("")
	s, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.DeleteSession(ctx, s.ID)

	// A program in the session's language...
	if _, err := c.Exec(ctx, s.ID, api.ExecRequest{Code: "open('state.txt', 'w').write('kept')"}); err != nil {
		log.Fatal(err)
	}
	// ...and a command, which sees what the program left.
	res, err := c.Exec(ctx, s.ID, api.ExecRequest{Argv: []string{"cat", "state.txt"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Stdout)
	// Output:
	// kept
}

// Put files into a session, run something over them, and fetch the output.
func ExampleClient_PutFile() {
	ctx := context.Background()
	c := client.New("")
	s, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.DeleteSession(ctx, s.ID)

	if _, err := c.PutFile(ctx, s.ID, "data/prices.csv", strings.NewReader("apple,3\npear,4\n"), 0); err != nil {
		log.Fatal(err)
	}
	_, err = c.Exec(ctx, s.ID, api.ExecRequest{Code: `
total = sum(int(line.split(",")[1]) for line in open("data/prices.csv"))
open("outputs/total.txt", "w").write(str(total))`})
	if err != nil {
		log.Fatal(err)
	}
	list, err := c.ListFiles(ctx, s.ID, "data", false)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range list.Entries {
		fmt.Println(e.Type, e.Path, e.Size)
	}
	body, _, err := c.GetFile(ctx, s.ID, "outputs/total.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer body.Close()
	total, _ := io.ReadAll(body)
	fmt.Println("total:", string(total))
	// Output:
	// file data/prices.csv 15
	// total: 7
}
