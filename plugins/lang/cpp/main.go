// Command sandbox-lang-cpp is the C++ language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/lang/internal/bashwarm"
	"github.com/sandboxd/sandboxd/plugins/language"
)

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "cpp",
			DisplayName:    "C++ (g++)",
			Version:        "1.0.0",
			Extensions:     []string{"cpp", "cc", "cxx"},
			Aliases:        []string{"c++", "g++"},
			DefaultImage:   "sandboxd/c:latest",
			VersionCommand: []string{"g++", "--version"},
			// The compile step links with gold.
			Warm: []language.Warm{bashwarm.Link("g++", "-fuse-ld=gold")},
		},
		MainFile: "main.cpp",
		// The image's precompiled <iostream> and <bits/stdc++.h> are made
		// with these flags (images/c/Dockerfile): keep them alike.
		Compile: []string{"g++", "-O2", "-std=c++20", "-I/usr/local/lib/sandboxd/pch", "-o", "{out}", "{sources}"},
		Run:     []string{"{out}"},
	})
}
