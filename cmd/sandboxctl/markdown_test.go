package main

import (
	"reflect"
	"testing"
)

func TestCodeBlocks(t *testing.T) {
	doc := "# Title\n" +
		"```python\nprint(1)\n```\n" + // 2
		"text ``inline`` and\n\n" +
		"    indented code is not fenced\n\n" +
		"1. item\n\n   ```JS {linenos}\n   console.log(2)\n   ```\n" + // 11
		"> ```bash\n> echo 3\n> ```\n" + // 14
		"~~~~ {.ruby}\nputs 4\n```\nstill ruby\n~~~~\n" + // 17
		"```\nno info\n```\n" + // 22
		"```go\n" // 25: unclosed, to the end
	want := []codeBlock{
		{Info: "python", Line: 2, Code: "print(1)\n"},
		{Info: "js", Line: 11, Code: "console.log(2)\n"},
		{Info: "bash", Line: 14, Code: "echo 3\n"},
		{Info: "ruby", Line: 17, Code: "puts 4\n```\nstill ruby\n"},
		{Info: "", Line: 22, Code: "no info\n"},
		{Info: "go", Line: 25, Code: ""},
	}
	if got := codeBlocks([]byte(doc)); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}
