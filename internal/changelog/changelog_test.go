package changelog

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write the checkout's exported API to testdata/api.txt")

// apiFile is the recorded API, relative to this package.
const apiFile = "testdata/api.txt"

// skipDir reports whether the directory rel (slash-separated, relative to
// the checkout) holds no public API: internal packages, test data, the
// examples, benchmarks and the end-to-end suite.
func skipDir(rel string) bool {
	base := filepath.Base(rel)
	if base == "testdata" || base == "internal" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") {
		return true
	}
	for _, top := range []string{"examples", "bench", "e2e", "cmd"} {
		if rel == top || strings.HasPrefix(rel, top+"/") {
			return true
		}
	}
	return false
}

// exported returns the exported names of the Go files under root as
// "dir package.Name" lines, sorted; dir is the package's directory
// relative to root ("." for the root package), which keeps two packages of
// one name apart.
func exported(root string) ([]string, error) {
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skipDir(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, n := range fileNames(f) {
			seen[dir+" "+f.Name.Name+"."+n] = true
		}
		return nil
	})
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, err
}

// fileNames returns the exported names a file declares: functions, types,
// variables and constants, methods of exported types (Type.Method) and the
// named fields and methods of exported structs and interfaces.
func fileNames(f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				out = append(out, d.Name.Name)
				continue
			}
			if recv := receiverName(d.Recv.List[0].Type); ast.IsExported(recv) {
				out = append(out, recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					out = append(out, s.Name.Name)
					var fields *ast.FieldList
					switch t := s.Type.(type) {
					case *ast.StructType:
						fields = t.Fields
					case *ast.InterfaceType:
						fields = t.Methods
					}
					if fields == nil {
						continue
					}
					for _, field := range fields.List {
						for _, n := range field.Names {
							if n.IsExported() {
								out = append(out, s.Name.Name+"."+n.Name)
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// receiverName returns the type name of a method's receiver.
func receiverName(t ast.Expr) string {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// unrecorded returns the names of recorded (lines of api.txt) that current
// lacks and changelog does not mention as "package.Name". A member of a
// type that is gone with it (package.Type.Field) is mentioned by the
// type's entry.
func unrecorded(recorded, current []string, changelog string) []string {
	have := map[string]bool{}
	for _, n := range current {
		have[n] = true
	}
	var missing []string
	for _, n := range recorded {
		if n == "" || have[n] {
			continue
		}
		dir, qualified, _ := strings.Cut(n, " ")
		if mentions(changelog, qualified) {
			continue
		}
		if pkg, member, ok := strings.Cut(qualified, "."); ok {
			if typ, _, ok := strings.Cut(member, "."); ok && !have[dir+" "+pkg+"."+typ] && mentions(changelog, pkg+"."+typ) {
				continue
			}
		}
		missing = append(missing, qualified)
	}
	return missing
}

// mentions reports whether text names the qualified name whole: not as
// the start of a longer name (Config.Lease is not mentioned by
// Config.LeaseTTL).
func mentions(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		end := i + j + len(name)
		if end == len(text) || !isIdentByte(text[end]) {
			return true
		}
		i = end
	}
}

func isIdentByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// TestChangelogNamesEveryRemovedName fails for each exported name of the
// recorded API that is gone from the checkout while CHANGELOG.md does not
// name it.
func TestChangelogNamesEveryRemovedName(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	current, err := exported(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(current) < 100 {
		t.Fatalf("found %d exported names in %s; the walk missed the packages", len(current), root)
	}
	if *update {
		if err := os.WriteFile(apiFile, []byte(strings.Join(current, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %d exported names in %s", len(current), apiFile)
		return
	}
	data, err := os.ReadFile(apiFile)
	if err != nil {
		t.Fatal(err)
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	recorded := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, n := range unrecorded(recorded, current, string(changelog)) {
		t.Errorf("%s is gone from the API and CHANGELOG.md does not name it: add it under Unreleased with its successor", n)
	}
}

// TestUnrecordedFindsARemovedName checks the rule on a made-up API: a
// removed name counts as recorded only when the changelog names it whole.
func TestUnrecordedFindsARemovedName(t *testing.T) {
	recorded := []string{". retrybudget.Config", ". retrybudget.Config.Lease", ". retrybudget.New", "budget budget.Local", "budget budget.Local.Deposit"}
	current := []string{". retrybudget.Config", ". retrybudget.New"}
	for _, tt := range []struct {
		changelog string
		want      []string
	}{
		{"", []string{"retrybudget.Config.Lease", "budget.Local", "budget.Local.Deposit"}},
		{"- `retrybudget.Config.LeaseTTL` → x\n- `budget.LocalBudget` → y", []string{"retrybudget.Config.Lease", "budget.Local", "budget.Local.Deposit"}},
		// A type that stays does not vouch for its removed member.
		{"- `retrybudget.Config` is documented\n- `budget.Local` → `budget.New`", []string{"retrybudget.Config.Lease"}},
		{"- `retrybudget.Config.Lease` → `Ledger.Lease`\n- `budget.Local` → `budget.New`", nil},
	} {
		if got := unrecorded(recorded, current, tt.changelog); !slices.Equal(got, tt.want) {
			t.Errorf("unrecorded with changelog %q = %v, want %v", tt.changelog, got, tt.want)
		}
	}
}

// TestExportedReadsMethodsFieldsAndSkipsMain checks what counts as API.
func TestExportedReadsMethodsFieldsAndSkipsMain(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lib.go", "package lib\ntype T struct{ A int; b int }\nfunc (*T) M() {}\nfunc (t T) m() {}\ntype u struct{ C int }\nfunc (u) D() {}\ntype G[K any] struct{}\nfunc (G[K]) N() {}\nconst X, y = 1, 2\ntype I interface{ P() }\n")
	write("lib_test.go", "package lib\nfunc TestOnly() {}\n")
	write("cmd/tool/main.go", "package main\nfunc Exported() {}\n")
	write("sub/internal/x/x.go", "package x\nfunc Hidden() {}\n")
	write("sub/sub.go", "package sub\nvar V int\n")
	got, err := exported(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{". lib.G", ". lib.G.N", ". lib.I", ". lib.I.P", ". lib.T", ". lib.T.A", ". lib.T.M", ". lib.X", "sub sub.V"}
	if !slices.Equal(got, want) {
		t.Errorf("exported = %q, want %q", got, want)
	}
}
