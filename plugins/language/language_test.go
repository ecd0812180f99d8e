package language

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"
)

var python = &Template{
	Meta:     Info{Name: "python", Extensions: []string{"py"}, Aliases: []string{"py"}, DefaultImage: "img", VersionCommand: []string{"python3", "--version"}},
	MainFile: "main.py",
	Run:      []string{"python3", "{entry}"},
	Env:      map[string]string{"PYTHONUNBUFFERED": "1"},
}

// dial serves impl over real gRPC in-process and returns the host's view.
func dial(t *testing.T, impl Language) Language {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{PluginName: &Plugin{Impl: impl}})
	t.Cleanup(func() { client.Close() })
	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(Language)
}

func TestShimsRoundTrip(t *testing.T) {
	l := dial(t, python)
	info, err := l.Info(context.Background())
	if err != nil || !reflect.DeepEqual(info, python.Meta) {
		t.Fatalf("info %+v, %v", info, err)
	}
	plan, err := l.Plan(context.Background(), PlanRequest{
		Files: []File{{Path: "app.py", Content: []byte{0xff, 0}}, {Path: "lib.py", Content: []byte("x"), Mode: 0o600}},
		Entry: "app.py", Args: []string{"a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan.Steps, []Step{{Name: "run", Argv: []string{"python3", "app.py", "a"}}}) ||
		plan.CodeFile != "" || plan.Env["PYTHONUNBUFFERED"] != "1" {
		t.Fatalf("plan %+v", plan)
	}
	plan, err = l.Plan(context.Background(), PlanRequest{Code: "print(1)", Files: []File{{Path: "lib.py", Content: []byte("x")}}})
	if err != nil || plan.CodeFile != "main.py" || !reflect.DeepEqual(plan.Steps[0].Argv, []string{"python3", "main.py"}) {
		t.Fatalf("plan of code: %+v, %v", plan, err)
	}
}

func TestInvalidProgramKeepsItsMeaningAcrossGRPC(t *testing.T) {
	l := dial(t, python)
	for _, req := range []PlanRequest{
		{},
		{Files: []File{{Path: "a.py"}, {Path: "b.py"}}},
		{Files: []File{{Path: "a.py"}}, Entry: "missing.py"},
	} {
		_, err := l.Plan(context.Background(), req)
		if !errors.Is(err, ErrInvalidProgram) {
			t.Errorf("%+v: want ErrInvalidProgram, got %v", req, err)
		}
	}
}

func TestInterpreterPlans(t *testing.T) {
	plan, err := python.Plan(context.Background(), PlanRequest{Code: "print(1)"})
	if err != nil || plan.Steps[0].Argv[1] != "main.py" || plan.CodeFile != "main.py" {
		t.Fatalf("code: %+v %v", plan, err)
	}
	plan, err = python.Plan(context.Background(), PlanRequest{Files: []File{{Path: "./solo.py"}}})
	if err != nil || plan.Steps[0].Argv[1] != "./solo.py" {
		t.Fatalf("single file: %+v %v", plan, err)
	}
	plan, err = python.Plan(context.Background(), PlanRequest{Code: "import lib", Files: []File{{Path: "lib.py"}}})
	if err != nil || plan.Steps[0].Argv[1] != "main.py" || plan.CodeFile != "main.py" {
		t.Fatalf("code with companions: %+v %v", plan, err)
	}
}

var java = &Template{
	Meta:     Info{Name: "java", Extensions: []string{"java"}},
	MainFile: "{class}.java",
	Compile:  []string{"javac", "-d", "{outdir}", "{sources}"},
	Run:      []string{"java", "-cp", "{outdir}", "{class}"},
}

func TestCompiledPlans(t *testing.T) {
	plan, err := java.Plan(context.Background(), PlanRequest{
		Code: "// public class Wrong {}\n/* public class AlsoWrong */\npackage app;\npublic final class Solver {\n}\n", Args: []string{"x"},
		Files: []File{{Path: "util/Helper.java"}, {Path: "notes.txt"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{
		{Name: "compile", Argv: []string{"javac", "-d", "/tmp/.sandboxd", "Solver.java", "util/Helper.java"}},
		{Name: "run", Argv: []string{"java", "-cp", "/tmp/.sandboxd", "app.Solver", "x"}},
	}
	if !reflect.DeepEqual(plan.Steps, want) || plan.CodeFile != "Solver.java" {
		t.Fatalf("steps %+v, code file %v", plan.Steps, plan.CodeFile)
	}
	if _, err := java.Plan(context.Background(), PlanRequest{Files: []File{{Path: "a.txt"}}}); !errors.Is(err, ErrInvalidProgram) {
		t.Fatalf("no sources: %v", err)
	}

	// A file whose public class is not its name is written under the
	// class's name, as code is.
	plan, err = java.Plan(context.Background(), PlanRequest{Files: []File{
		{Path: "test.java", Content: []byte("public class HelloWorld { public static void main(String[] a) {} }")},
		{Path: "lib/x.java", Content: []byte("package lib;\npublic class Util {}")},
	}, Entry: "test.java"})
	if err != nil {
		t.Fatal(err)
	}
	want = []Step{
		{Name: "compile", Argv: []string{"javac", "-d", "/tmp/.sandboxd", "HelloWorld.java", "lib/Util.java"}},
		{Name: "run", Argv: []string{"java", "-cp", "/tmp/.sandboxd", "HelloWorld"}},
	}
	if !reflect.DeepEqual(plan.Steps, want) || !reflect.DeepEqual(plan.Renames, map[string]string{"test.java": "HelloWorld.java", "lib/x.java": "lib/Util.java"}) {
		t.Fatalf("steps %+v, renames %v", plan.Steps, plan.Renames)
	}
	_, err = java.Plan(context.Background(), PlanRequest{Files: []File{
		{Path: "a.java", Content: []byte("public class B {}")}, {Path: "B.java", Content: []byte("class C {}")},
	}, Entry: "a.java"})
	if !errors.Is(err, ErrInvalidProgram) || !strings.Contains(err.Error(), "B.java is another file") {
		t.Fatalf("a rename onto another file: %v", err)
	}
}
