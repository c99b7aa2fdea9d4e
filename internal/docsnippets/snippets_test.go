package docsnippets

import (
	"bufio"
	"context"
	"fmt"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// module is the import path of the module this checkout holds.
const module = "github.com/retrybudget/retrybudget"

// knownImports maps the package names a fragment may use without an import
// line to their import paths. A fragment imports exactly the names it uses
// as a qualifier (name.Ident), outside comments and strings.
var knownImports = map[string]string{
	"bytes":        "bytes",
	"context":      "context",
	"errors":       "errors",
	"fmt":          "fmt",
	"io":           "io",
	"json":         "encoding/json",
	"log":          "log",
	"slog":         "log/slog",
	"http":         "net/http",
	"httptest":     "net/http/httptest",
	"os":           "os",
	"signal":       "os/signal",
	"strings":      "strings",
	"sync":         "sync",
	"syscall":      "syscall",
	"time":         "time",
	"retrybudget":  module,
	"budget":       module + "/budget",
	"idempotency":  module + "/idempotency",
	"ledger":       module + "/ledger",
	"limiter":      module + "/limiter",
	"otelretry":    module + "/otelretry",
	"plan":         module + "/plan",
	"presets":      module + "/presets",
	"rateheader":   module + "/rateheader",
	"slogretry":    module + "/slogretry",
	"pgledger":     module + "/ledger/pgledger",
	"riverjobs":    module + "/riverjobs",
	"integrations": module + "/integrations",
	"fakes":        module + "/integrations/fakes",
	"rbstripe":     module + "/integrations/stripe",
	"rbtwilio":     module + "/integrations/twilio",
	"rbgithub":     module + "/integrations/github",
	"rbopenai":     module + "/integrations/openai",
	"rbgoopenai":   module + "/integrations/goopenai",
	"rbslack":      module + "/integrations/slack",
	"rbpaypal":     module + "/integrations/paypal",
	"redis":        "github.com/redis/go-redis/v9",
	"pgx":          "github.com/jackc/pgx/v5",
	"pgxpool":      "github.com/jackc/pgx/v5/pgxpool",
	"river":        "github.com/riverqueue/river",
	"riverpgxv5":   "github.com/riverqueue/river/riverdriver/riverpgxv5",
	"rivertype":    "github.com/riverqueue/river/rivertype",
	"stripe":       "github.com/stripe/stripe-go/v85",
}

// snippet is one fenced Go block of a Markdown file.
type snippet struct {
	file  string   // the Markdown file, absolute
	line  int      // the line of the block's first code line, 1-based
	code  string   // the block, without its fences
	needs []string // companion names (docs/snippets/<name>.go)
	// imports maps names the block may qualify with to import paths,
	// beside knownImports: a godoc block's own import lines and its home
	// package.
	imports map[string]string
	godoc   bool // from a doc comment, not a Markdown fence
	decls   bool // top-level declarations, not statements
}

var needsComment = regexp.MustCompile(`^<!--\s*snippet:\s*needs\s+([a-z0-9_, ]+?)\s*-->$`)

// extract returns the ```go blocks of the Markdown file at path.
func extract(path string) ([]snippet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out  []snippet
		cur  *snippet
		prev string // the last non-blank line outside a block
		n    int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```go":
			cur = &snippet{file: path, line: n + 1}
			if m := needsComment.FindStringSubmatch(prev); m != nil {
				for name := range strings.SplitSeq(m[1], ",") {
					if name = strings.TrimSpace(name); name != "" {
						cur.needs = append(cur.needs, name)
					}
				}
			}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur, prev = nil, ""
		case cur != nil:
			cur.code += line + "\n"
		case trimmed != "":
			prev = trimmed
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: unterminated ```go block", path, cur.line-1)
	}
	return out, sc.Err()
}

// qualifiers returns the package names of knownImports or extra that
// code uses as qualifiers.
func qualifiers(code string, extra map[string]string) []string {
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile("", -1, len(code)), []byte(code), nil, 0)
	seen := map[string]bool{}
	var last string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.PERIOD && last != "" {
			if _, ok := knownImports[last]; ok {
				seen[last] = true
			}
			if _, ok := extra[last]; ok {
				seen[last] = true
			}
		}
		last = ""
		if tok == token.IDENT {
			last = lit
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// isFile reports whether the block is a whole file: its first line that is
// neither blank nor a comment is a package clause.
func (s snippet) isFile() bool {
	for line := range strings.SplitSeq(s.code, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		return strings.HasPrefix(line, "package ")
	}
	return false
}

// source returns the Go file a snippet compiles as. Its //line directives
// make the compiler report the Markdown file and line.
func (s snippet) source() string {
	if s.isFile() {
		return fmt.Sprintf("//line %s:%d\n%s", s.file, s.line, s.code)
	}
	var b strings.Builder
	b.WriteString("package main\n\n")
	if names := qualifiers(s.code, s.imports); len(names) > 0 {
		b.WriteString("import (\n")
		for _, name := range names {
			path, ok := s.imports[name]
			if !ok {
				path = knownImports[name]
			}
			fmt.Fprintf(&b, "\t%s %q\n", name, path)
		}
		b.WriteString(")\n\n")
	}
	if s.decls {
		fmt.Fprintf(&b, "func main() {}\n\n//line %s:%d\n%s\n", s.file, s.line, s.code)
		return b.String()
	}
	fmt.Fprintf(&b, "func main() {\n//line %s:%d\n%s}\n", s.file, s.line, s.code)
	return b.String()
}

// localModule is a module of this checkout.
type localModule struct{ path, dir string }

// localModules returns every module under root, testdata excluded.
func localModules(root string) ([]localModule, error) {
	var mods []localModule
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
				mods = append(mods, localModule{path: strings.Trim(p, `"`), dir: filepath.Dir(path)})
				break
			}
		}
		return nil
	})
	return mods, err
}

// scratch writes a module in dir holding one package per snippet, with
// every local module required and replaced by its directory, and the union
// of their go.sum files.
func scratch(dir, root string, snippets []snippet, mods []localModule) error {
	var gomod strings.Builder
	gomod.WriteString("module snippets\n\ngo 1.26.0\n\n")
	sums := map[string]bool{}
	for _, m := range mods {
		fmt.Fprintf(&gomod, "require %s v0.0.0\nreplace %s => %s\n", m.path, m.path, m.dir)
		data, err := os.ReadFile(filepath.Join(m.dir, "go.sum"))
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if line != "" {
				sums[line] = true
			}
		}
	}
	lines := make([]string, 0, len(sums))
	for line := range sums {
		lines = append(lines, line)
	}
	slices.Sort(lines)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	for i, s := range snippets {
		rel, err := filepath.Rel(root, s.file)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("s%03d_%s_%d", i, strings.NewReplacer("/", "_", ".", "_").Replace(rel), s.line)
		pkg := filepath.Join(dir, name)
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(pkg, "snippet.go"), []byte(s.source()), 0o644); err != nil {
			return err
		}
		for _, need := range s.needs {
			src := filepath.Join(root, "docs", "snippets", need+".go")
			data, err := os.ReadFile(src)
			if err != nil {
				return fmt.Errorf("%s:%d: companion %q: %w", rel, s.line-1, need, err)
			}
			// The companion keeps its own file name in errors.
			data = append([]byte(fmt.Sprintf("//line %s:1\n", src)), data...)
			if err := os.WriteFile(filepath.Join(pkg, "companion_"+need+".go"), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// vet runs "go vet ./..." with the snippet tag in the scratch module dir
// and returns its output, with absolute paths under root made relative.
func vet(t *testing.T, dir, root string) (string, error) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to compile the snippets: %v", err)
	}
	// The command must not outlive the test: it ends a minute before the
	// test's own deadline, so the failure still names the snippets.
	ctx := t.Context()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Minute))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, gobin, "vet", "-tags=snippet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"),
	)
	out, err := cmd.CombinedOutput()
	text := strings.ReplaceAll(string(out), root+string(filepath.Separator), "")
	// The go command prints a path relative to dir when that is shorter.
	if rel, relErr := filepath.Rel(dir, root); relErr == nil {
		text = strings.ReplaceAll(text, rel+string(filepath.Separator), "")
	}
	return text, err
}

// docFiles returns README.md and every docs/*.md under root.
func docFiles(root string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	return append([]string{filepath.Join(root, "README.md")}, files...), nil
}

// TestDocSnippetsCompile compiles every ```go block of README.md and
// docs/*.md against this checkout, and fails naming the file and line of
// each one that does not compile or vet.
func TestDocSnippetsCompile(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files, err := docFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var all []snippet
	for _, f := range files {
		s, err := extract(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, s...)
	}
	if len(all) == 0 {
		t.Fatal("no ```go blocks found in README.md and docs/*.md")
	}
	compiles(t, root, all, "Go snippets of README.md and docs/*.md")
}

// compiles vets the snippets all, named what in messages, in a scratch
// module that uses this checkout's modules (root), and fails naming the
// file and line of each one that does not compile or vet.
func compiles(t *testing.T, root string, all []snippet, what string) {
	t.Helper()
	mods, err := localModules(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := scratch(dir, root, all, mods); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := vet(t, dir, root)
	if err != nil {
		t.Fatalf("%d %s: go vet failed: %v\n%s", len(all), what, err, out)
	}
	t.Logf("%d %s compile and vet clean (%v)", len(all), what, time.Since(start).Round(time.Millisecond))
}

// TestBrokenSnippetNamesItsFileAndLine checks that a block that does not
// compile fails with the Markdown file and the line of the broken code.
func TestBrokenSnippetNamesItsFileAndLine(t *testing.T) {
	root := t.TempDir()
	doc := filepath.Join(root, "docs", "page.md")
	if err := os.MkdirAll(filepath.Dir(doc), 0o755); err != nil {
		t.Fatal(err)
	}
	page := "# Page\n\n```go\nfmt.Println(\"fine\")\n```\n\nText.\n\n```go\nn := 1\nvar s string = n\nfmt.Println(s)\n```\n"
	if err := os.WriteFile(doc, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	snippets, err := extract(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(snippets) != 2 || snippets[0].line != 4 || snippets[1].line != 10 {
		t.Fatalf("extract: got %+v, want blocks starting at lines 4 and 10", snippets)
	}
	dir := filepath.Join(t.TempDir(), "scratch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := scratch(dir, root, snippets, nil); err != nil {
		t.Fatal(err)
	}
	out, err := vet(t, dir, root)
	t.Logf("go vet: %v\n%s", err, out)
	if err == nil {
		t.Fatalf("go vet passed a block that does not compile:\n%s", out)
	}
	if !strings.Contains(out, "\nvet: "+filepath.Join("docs", "page.md")+":11:") {
		t.Fatalf("the error does not name docs/page.md:11, the broken line:\n%s", out)
	}
	if strings.Contains(out, "page.md:4:") {
		t.Fatalf("the error names the block that compiles:\n%s", out)
	}
}

// TestFragmentImportsWhatItQualifies checks the import rule: qualifiers in
// code count, those in comments and strings do not.
func TestFragmentImportsWhatItQualifies(t *testing.T) {
	code := "// http.Get is not called here\nctx := context.Background()\n_ = retrybudget.WithAction(ctx, retrybudget.Action{})\nfmt.Println(\"time.Now\")\nresp.Body.Close()\n"
	got := qualifiers(code, nil)
	want := []string{"context", "fmt", "retrybudget"}
	if !slices.Equal(got, want) {
		t.Fatalf("qualifiers = %v, want %v", got, want)
	}
}

// TestCompanionIsNamedBeforeTheFence checks that the needs comment on the
// line before a fence names the block's companions.
func TestCompanionIsNamedBeforeTheFence(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "page.md")
	page := "Intro.\n\n<!-- snippet: needs worker, river -->\n```go\nx := 1\n```\n\n```go\ny := 2\n```\n"
	if err := os.WriteFile(doc, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := extract(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got[0].needs, []string{"worker", "river"}) || got[1].needs != nil {
		t.Fatalf("extract: got %+v, want needs [worker river] on the first block only", got)
	}
}
