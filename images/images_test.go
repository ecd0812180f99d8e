package images

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/fake"
)

func TestDerivedTagsHashWhatWentIn(t *testing.T) {
	base := runtime.Image{ID: "sha256:aaa", User: "nobody"}
	a := Derived("Python", "sandboxd/python:latest", base, nil, []string{"scipy"}, nil)
	if a.Tag != Derived("Python", "sandboxd/python:latest", base, nil, []string{"scipy"}, []byte("ca")).Tag {
		t.Error("the CA bundle changed the tag")
	}
	for _, other := range []runtime.ImageBuild{
		Derived("python", "sandboxd/python:latest", runtime.Image{ID: "sha256:bbb"}, nil, []string{"scipy"}, nil),
		Derived("python", "sandboxd/python:latest", base, nil, []string{"scipy", "six"}, nil),
		Derived("python", "sandboxd/python:latest", base, []string{"pip", "install", "{packages}"}, []string{"scipy"}, nil),
	} {
		if other.Tag == a.Tag {
			t.Errorf("same tag %s for different inputs", a.Tag)
		}
	}
	df := string(a.Files["Dockerfile"])
	if !strings.HasPrefix(a.Tag, "sandboxd-packages/python:") || !strings.Contains(df, "FROM sha256:aaa\n") ||
		!strings.Contains(df, `"install","scipy"]`) || !strings.HasSuffix(df, "USER nobody\n") || strings.Contains(df, "ARG") {
		t.Errorf("tag %s Dockerfile:\n%s", a.Tag, df)
	}
	withCA := Derived("python", "sandboxd/python:latest", base, nil, []string{"scipy"}, []byte("ca"))
	if string(withCA.Files["ca.crt"]) != "ca" || !strings.Contains(string(withCA.Files["Dockerfile"]), "ARG PIP_CERT="+CAPath) {
		t.Errorf("with a CA: %+v", withCA.Files)
	}
}

func TestSourceFindsOnlyItsDockerfiles(t *testing.T) {
	if b, ok := Source(".", "sandboxd/python:latest", nil); !ok || b.Dir != "python" || b.Tag != "sandboxd/python:latest" {
		t.Errorf("python: %+v %v", b, ok)
	}
	for _, ref := range []string{"sandboxd/nope:latest", "other/python:latest", "sandboxd/../images:x", "sandboxd/:x", "python"} {
		if _, ok := Source(".", ref, nil); ok {
			t.Errorf("%s: found", ref)
		}
	}
}

// A build's progress is its last "Step" line, shortened; a run waiting on
// it is told to retry, and when.
func TestStepAndBuilding(t *testing.T) {
	if step, ok := Step("Step 3/9 : RUN apt-get update"); !ok || step != "Step 3/9 : RUN apt-get update" {
		t.Errorf("Step: %q %v", step, ok)
	}
	if _, ok := Step(" ---> Running in 4f1e"); ok {
		t.Error("a line that is no step was taken for one")
	}
	if step, _ := Step("Step 1/2 : RUN " + strings.Repeat("x", 200)); len(step) != 72 || !strings.HasSuffix(step, "...") {
		t.Errorf("a long step is not shortened: %q", step)
	}
	err := Building("python", "sandboxd/python:latest", "Step 2/5 : RUN x", 41*time.Second)
	if !errors.Is(err, ErrBuilding) || !strings.Contains(err.Error(), "41s so far") || !strings.Contains(err.Error(), "retry in 15s") {
		t.Errorf("Building: %v", err)
	}
}

// An image that builds on another of sandboxd's (code-interpreter on
// python, node and java) has it built first when the engine lacks it, and one
// that builds on a base the engine lacks is not built: it would be pulled
// from a registry, where sandboxd/... is anyone's.
func TestBuildMakesWhatAnImageBuildsOnFirst(t *testing.T) {
	rt := fake.New(t.TempDir(), "sandboxd/base:trixie", "sandboxd/python:latest")
	var built []string
	res := Build(context.Background(), rt, ".", nil, []Target{{Language: "code-interpreter", Base: "sandboxd/code-interpreter:latest"}},
		func(image, line string) {
			if !slices.Contains(built, image) {
				built = append(built, image)
			}
		})
	if strings.Join(built, " ") != "sandboxd/node:latest sandboxd/java:latest sandboxd/code-interpreter:latest" || len(res) != 3 || res[0].Error != "" || res[1].Error != "" || res[2].Error != "" {
		t.Errorf("built %v: %+v", built, res)
	}
	rt = fake.New(t.TempDir())
	res = Build(context.Background(), rt, ".", nil, []Target{{Language: "bash", Base: "sandboxd/bash:latest"}}, func(string, string) {})
	if len(res) != 1 || !strings.Contains(res[0].Error, "builds on sandboxd/base:trixie, which the engine lacks") {
		t.Errorf("a missing base: %+v", res)
	}
	if _, err := rt.Image(context.Background(), "sandboxd/bash:latest"); err == nil {
		t.Error("built on a base the engine lacks")
	}
}
