package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// imageRoot is a language image's files unpacked on the host, for running
// programs as plain processes with the image's own toolchain: chrooted
// into it, with the image's environment, and nothing of a container (no
// namespaces, cgroups or seccomp), so that comparing sandboxd with it
// measures the sandbox and not another version of an interpreter.
type imageRoot struct {
	dir string
	env []string
}

// exportImage unpacks sandboxd/NAME:latest (docker export of a container
// never started) with /dev and /proc of the host's mounted in.
func exportImage(name string) (*imageRoot, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("chroot needs root: run the bench as root")
	}
	image := "sandboxd/" + name + ":latest"
	out, err := exec.Command("docker", "image", "inspect", "--format", "{{json .Config.Env}}", image).Output()
	if err != nil {
		return nil, fmt.Errorf("docker image inspect %s: %w", image, err)
	}
	r := &imageRoot{}
	if err := json.Unmarshal(out, &r.env); err != nil {
		return nil, err
	}
	r.env = append(r.env, "HOME=/tmp", "LANG=C.UTF-8")
	if r.dir, err = os.MkdirTemp("", "bench-root-"); err != nil {
		return nil, err
	}
	id, err := exec.Command("docker", "create", image, "true").Output()
	if err != nil {
		r.remove()
		return nil, fmt.Errorf("docker create %s: %w", image, err)
	}
	container := strings.TrimSpace(string(id))
	defer exec.Command("docker", "rm", "-f", container).Run()
	export := exec.Command("sh", "-c", `docker export "$1" | tar -x -C "$2"`, "export", container, r.dir)
	var stderr bytes.Buffer
	export.Stderr = &stderr
	if err := export.Run(); err != nil {
		r.remove()
		return nil, fmt.Errorf("docker export %s: %w: %s", image, err, stderr.String())
	}
	// Written out now: the image's gigabyte of new pages would otherwise be
	// written back while the first stream runs, slowing it alone.
	syscall.Sync()
	for _, m := range []struct{ source, target, fstype string }{{"/dev", "dev", ""}, {"proc", "proc", "proc"}} {
		flags := uintptr(0)
		if m.fstype == "" {
			flags = syscall.MS_BIND | syscall.MS_REC
		}
		if err := syscall.Mount(m.source, filepath.Join(r.dir, m.target), m.fstype, flags, ""); err != nil {
			r.remove()
			return nil, fmt.Errorf("mount %s in %s: %w", m.source, r.dir, err)
		}
	}
	return r, nil
}

// run builds and runs a program as the image's Dockerfile would, in a
// directory of its own under the image's /tmp.
func (r *imageRoot) run(l corpusLanguage, prog string) error {
	dir, err := writeProgram(filepath.Join(r.dir, "tmp"), l, prog)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("/bin/sh", "-c", l.imageSteps)
	cmd.Env = r.env
	cmd.Dir = strings.TrimPrefix(dir, r.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: r.dir}
	out, err := cmd.Output()
	return checkOut(out, err, "ok\n")
}

// remove unmounts what exportImage mounted and deletes the files.
func (r *imageRoot) remove() {
	for _, m := range []string{"proc", "dev"} {
		_ = syscall.Unmount(filepath.Join(r.dir, m), syscall.MNT_DETACH)
	}
	// Only once nothing is mounted in it: removing a bind mount of the
	// host's /dev would empty the host's.
	if mounted(r.dir) {
		fmt.Fprintf(os.Stderr, "bench: %s still has mounts; left in place\n", r.dir)
		return
	}
	_ = os.RemoveAll(r.dir)
}

// mounted says whether anything is mounted at or under dir.
func mounted(dir string) bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			return true
		}
	}
	return false
}
