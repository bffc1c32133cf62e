package hourglass_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every Go block of README.md is the body of an Example function of
// readme_example_test.go, and every such Example is in the README, so the
// README's code compiles and runs as the examples do.
func TestREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{} // Example name → body up to its Output comment, one tab less
	for _, m := range regexp.MustCompile(`(?ms)^func (Example\w*)\(\) \{\n(.*?)^\}\n`).FindAllStringSubmatch(string(src), -1) {
		var lines []string
		for _, l := range strings.Split(strings.TrimSuffix(m[2], "\n"), "\n") {
			if strings.HasPrefix(l, "\t// Output:") {
				break // the expected output is the test's, not the README's
			}
			lines = append(lines, strings.TrimPrefix(l, "\t"))
		}
		bodies[m[1]] = strings.Join(lines, "\n")
	}
	if len(bodies) < 4 {
		t.Fatalf("found %d examples in readme_example_test.go, want 4", len(bodies))
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile("(?ms)^```go\n(.*?)^```\n").FindAllStringSubmatch(string(readme), -1) {
		block := strings.TrimSuffix(m[1], "\n")
		found := ""
		for name, body := range bodies {
			if body == block {
				found = name
			}
		}
		if found == "" {
			t.Errorf("this README Go block is no Example's body in readme_example_test.go:\n%s", block)
			continue
		}
		seen[found] = true
	}
	for name := range bodies {
		if !seen[name] {
			t.Errorf("%s is not in the README", name)
		}
	}
}
