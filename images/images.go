// Package images says which images sandboxd can build and how: a
// language's image from its Dockerfile in the images directory, and an
// image derived from it with a language block's packages baked in. A
// derived image is tagged with the hash of everything that went into it
// (the base image's ID, the install command, the package list), so one
// build serves until any of them changes.
//
// The Dockerfiles beside this file build the shipped languages' images;
// build.sh makes their Debian base offline. Builds themselves go through
// runtime.Runtime; Build orders them and Resolve finds what a language runs.
package images

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
)

// Labels of derived images.
const (
	LabelBase     = "io.sandboxd.base"
	LabelPackages = "io.sandboxd.packages"
)

// BuildCAFile is the file a Dockerfile's build context holds beside it:
// the CA bundle the build trusts for HTTPS (build_ca_file; empty when
// there is none), for a step that fetches over HTTPS, such as node's npm
// install of its tools.
const BuildCAFile = "build-ca.crt"

// Source is the build of ref from dir/<name>/Dockerfile, where ref is
// sandboxd/<name>[:tag], with ca as BuildCAFile; ok is false when dir
// builds no such image.
func Source(dir, ref string, ca []byte) (b runtime.ImageBuild, ok bool) {
	name, found := strings.CutPrefix(ref, "sandboxd/")
	if !found || dir == "" {
		return b, false
	}
	name, _, _ = strings.Cut(name, ":")
	if name == "" || strings.ContainsAny(name, `/\.`) {
		return b, false
	}
	ctx := filepath.Join(dir, name)
	if _, err := os.Stat(filepath.Join(ctx, "Dockerfile")); err != nil {
		return b, false
	}
	return runtime.ImageBuild{Tag: ref, Dir: ctx, Files: map[string][]byte{BuildCAFile: ca}}, true
}

// CAPath is where a derived image's build finds the CA bundle it trusts
// for HTTPS (the host's, for machines behind a TLS-inspecting proxy).
const CAPath = "/usr/local/share/sandboxd/build-ca.crt"

// CAVariables point the usual installers and HTTPS clients at a CA
// bundle. In a derived image's build they are build arguments naming
// CAPath, so they hold for the install step and stay out of the image.
var CAVariables = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"}

// Derived is the build of the image that adds packages to base (as the
// engine describes baseRef), installed by install (language.Info's
// InstallCommand); ca, when not empty, is the CA bundle the install
// trusts. The tag hashes the base image's id and the install command with
// the packages, so an image is reused until one of them changes.
func Derived(lang, baseRef string, base runtime.Image, install, packages []string, ca []byte) runtime.ImageBuild {
	argv, _ := json.Marshal(language.InstallArgv(install, packages))
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\n%s\n", base.ID, argv)
	files := map[string][]byte{}
	var df strings.Builder
	fmt.Fprintf(&df, "FROM %s\nUSER root\n", base.ID)
	if len(ca) > 0 {
		files["ca.crt"] = ca
		fmt.Fprintf(&df, "COPY ca.crt %s\n", CAPath)
		for _, v := range CAVariables {
			fmt.Fprintf(&df, "ARG %s=%s\n", v, CAPath)
		}
	}
	fmt.Fprintf(&df, "RUN %s\n", argv)
	if base.User != "" {
		fmt.Fprintf(&df, "USER %s\n", base.User)
	}
	files["Dockerfile"] = []byte(df.String())
	return runtime.ImageBuild{
		Tag:    fmt.Sprintf("sandboxd-packages/%s:%s", strings.ToLower(lang), hex.EncodeToString(sum.Sum(nil))[:16]),
		Files:  files,
		Labels: map[string]string{LabelBase: baseRef, LabelPackages: strings.Join(packages, " ")},
	}
}

// SupervisorPath is where a pushed image holds the supervisor: where the
// Docker runtime bind-mounts it.
const SupervisorPath = "/.sandboxd/init"

// Pushed is the build of registry/ref, the image a cluster pulls: the
// engine's image id (ref's) with the supervisor in it, pushed. A pod
// cannot mount a file of sandboxd's host, so the supervisor travels in
// the image.
func Pushed(registry, ref, id string, supervisor []byte) runtime.ImageBuild {
	return runtime.ImageBuild{
		Tag: registry + "/" + ref,
		Files: map[string][]byte{
			"Dockerfile": fmt.Appendf(nil, "FROM %s\nCOPY init %s\n", id, SupervisorPath),
			"init":       supervisor,
		},
		Executables: []string{"init"},
		Push:        true,
	}
}
