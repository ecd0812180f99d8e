package config

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// schemaFields lists "block field" for every attribute the decoder takes,
// a struct used by several blocks (limits) under the first block's name.
func schemaFields(t reflect.Type, block string, seen map[reflect.Type]bool, out map[string]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		name, kind, _ := strings.Cut(t.Field(i).Tag.Get("hcl"), ",")
		switch kind {
		case "optional", "": // "": a required attribute
			out[block+" "+name] = true
		case "block":
			inner := t.Field(i).Type
			for inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Slice {
				inner = inner.Elem()
			}
			sub := name
			if block != "(top)" {
				sub = block + "." + name
			}
			schemaFields(inner, sub, seen, out)
		}
	}
}

// TestConfigReference checks docs/configuration.md's reference against
// the decoder: every field documented, nothing documented that is not one.
func TestConfigReference(t *testing.T) {
	want := map[string]bool{}
	schemaFields(reflect.TypeFor[fileSchema](), "(top)", map[reflect.Type]bool{}, want)

	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "## Configuration reference\n")
	if !ok {
		t.Fatal("docs/configuration.md has no ## Configuration reference")
	}
	got := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(cells[1], "---") || strings.TrimSpace(cells[1]) == "Block" {
			continue
		}
		got[strings.TrimSpace(cells[1])+" "+strings.Trim(strings.TrimSpace(cells[2]), "`")] = true
	}
	var missing, extra []string
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("docs/configuration.md reference: undocumented fields %v; documented fields the decoder lacks %v", missing, extra)
	}
}
