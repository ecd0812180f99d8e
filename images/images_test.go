package images

import (
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/runtime"
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
	if b, ok := Source(".", "sandboxd/python:latest"); !ok || b.Dir != "python" || b.Tag != "sandboxd/python:latest" {
		t.Errorf("python: %+v %v", b, ok)
	}
	for _, ref := range []string{"sandboxd/nope:latest", "other/python:latest", "sandboxd/../images:x", "sandboxd/:x", "python"} {
		if _, ok := Source(".", ref); ok {
			t.Errorf("%s: found", ref)
		}
	}
}
