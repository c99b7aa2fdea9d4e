package docsnippets

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Godoc code blocks are the indented blocks of a doc comment: gofmt writes
// them as "//\t" lines. A block that parses as Go (a file, declarations, or
// statements after its import lines) is Go and must compile; any other
// block (a shell command, a table, a grammar) is left alone. The blocks of
// the package clause's comment and of exported declarations count, since
// those are what godoc shows; internal packages, commands and tests do not.

// needsDirective names companions for every block of its doc comment, as
// the HTML comment before a Markdown fence does. It is a directive
// (//name:args), so godoc does not show it and gofmt keeps it last.
var needsDirective = regexp.MustCompile(`^//snippet:needs\s+([a-z0-9_, ]+?)\s*$`)

// textDirective says the blocks of its doc comment are not Go, though
// they parse as Go: a formula, say.
const textDirective = "//snippet:text"

// godocSnippets returns the Go code blocks of the doc comments of the
// non-test Go files under root, their imports resolved: the block's own
// import lines, then its home package under its name.
func godocSnippets(root string) ([]snippet, error) {
	var out []snippet
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "internal" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasPrefix(string(src), "//go:build snippet") {
			return nil // a companion
		}
		s, err := fileSnippets(root, path, src)
		out = append(out, s...)
		return err
	})
	return out, err
}

// fileSnippets returns the Go code blocks of one file's doc comments.
func fileSnippets(root, path string, src []byte) ([]snippet, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if f.Name.Name == "main" {
		return nil, nil // a command's doc is its usage
	}
	home := ""
	if rel, err := filepath.Rel(root, filepath.Dir(path)); err == nil {
		home = module
		if rel != "." {
			home += "/" + filepath.ToSlash(rel)
		}
	}
	var out []snippet
	for _, g := range docComments(f) {
		out = append(out, commentSnippets(fset, path, g, f.Name.Name, home)...)
	}
	return out, nil
}

// docComments returns the comments godoc shows: the package clause's and
// those of exported declarations.
func docComments(f *ast.File) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	add := func(g *ast.CommentGroup) {
		if g != nil {
			out = append(out, g)
		}
	}
	add(f.Doc)
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() {
				add(d.Doc)
			}
		case *ast.GenDecl:
			add(d.Doc)
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						add(s.Doc)
					}
				case *ast.ValueSpec:
					add(s.Doc)
				}
			}
		}
	}
	return out
}

// commentSnippets returns the Go code blocks of one doc comment of a file
// of package pkg (import path home).
func commentSnippets(fset *token.FileSet, path string, g *ast.CommentGroup, pkg, home string) []snippet {
	var needs []string
	for _, c := range g.List {
		if c.Text == textDirective {
			return nil
		}
		if m := needsDirective.FindStringSubmatch(c.Text); m != nil {
			for name := range strings.SplitSeq(m[1], ",") {
				if name = strings.TrimSpace(name); name != "" {
					needs = append(needs, name)
				}
			}
		}
	}
	var out []snippet
	var block []string
	line := 0
	flush := func() {
		// Trailing blank comment lines end a block, not belong to it.
		for len(block) > 0 && block[len(block)-1] == "" {
			block = block[:len(block)-1]
		}
		if len(block) > 0 {
			if s, ok := goBlock(path, line, strings.Join(block, "\n")+"\n", pkg, home); ok {
				s.needs = needs
				out = append(out, s)
			}
		}
		block = nil
	}
	for _, c := range g.List {
		switch {
		case strings.HasPrefix(c.Text, "//\t"):
			if block == nil {
				line = fset.Position(c.Slash).Line
			}
			block = append(block, c.Text[3:])
		case c.Text == "//" && block != nil:
			block = append(block, "")
		default:
			flush()
		}
	}
	flush()
	return out
}

// importLine is a block's import of a package the fragment uses.
var importLine = regexp.MustCompile(`^import\s+(?:([A-Za-z_][A-Za-z0-9_]*)\s+)?("[^"]+")\s*$`)

// majorSuffix is the last element of a module's major version 2 and up.
var majorSuffix = regexp.MustCompile(`^v[2-9][0-9]*$`)

// goBlock returns the snippet a godoc block compiles as, and whether the
// block is Go at all. Its import lines become the fragment's imports; the
// home package is importable under its name.
func goBlock(path string, line int, code, pkg, home string) (snippet, bool) {
	s := snippet{file: path, line: line, code: code, godoc: true, imports: map[string]string{pkg: home}}
	if s.isFile() {
		_, err := parser.ParseFile(token.NewFileSet(), "", code, parser.SkipObjectResolution)
		return s, err == nil
	}
	lines := strings.Split(strings.TrimSuffix(code, "\n"), "\n")
	body := 0
	for ; body < len(lines); body++ {
		l := strings.TrimSpace(lines[body])
		if l == "" {
			continue
		}
		m := importLine.FindStringSubmatch(l)
		if m == nil {
			break
		}
		p, err := strconv.Unquote(m[2])
		if err != nil {
			return s, false
		}
		name := m[1]
		if name == "" {
			// The last element, or the one before a major version
			// suffix (github.com/plutov/paypal/v4 is paypal).
			elems := strings.Split(p, "/")
			name = elems[len(elems)-1]
			if len(elems) > 1 && majorSuffix.MatchString(name) {
				name = elems[len(elems)-2]
			}
		}
		s.imports[name] = p
	}
	// Blank lines keep the code's line numbers.
	s.code = strings.Repeat("\n", body) + strings.Join(lines[body:], "\n") + "\n"
	fset := token.NewFileSet()
	if f, err := parser.ParseFile(fset, "", "package p\nfunc _() {\n"+s.code+"\n}", parser.SkipObjectResolution); err == nil {
		// A block shows how to build or call something, and stops
		// there: the names it declares count as used.
		for _, name := range declared(f.Decls[0].(*ast.FuncDecl).Body) {
			s.code += "_ = " + name + "\n"
		}
		return s, true
	}
	if _, err := parser.ParseFile(fset, "", "package p\n"+s.code, parser.SkipObjectResolution); err == nil {
		s.decls = true
		return s, true
	}
	return s, false
}

// declared returns the names a function body declares at its top level
// (:= and var), in order, without the blank identifier.
func declared(body *ast.BlockStmt) []string {
	var names []string
	seen := map[string]bool{"_": true}
	add := func(id *ast.Ident) {
		if !seen[id.Name] {
			seen[id.Name] = true
			names = append(names, id.Name)
		}
	}
	for _, stmt := range body.List {
		switch st := stmt.(type) {
		case *ast.AssignStmt:
			if st.Tok != token.DEFINE {
				continue
			}
			for _, e := range st.Lhs {
				if id, ok := e.(*ast.Ident); ok {
					add(id)
				}
			}
		case *ast.DeclStmt:
			if gd, ok := st.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, spec := range gd.Specs {
					for _, id := range spec.(*ast.ValueSpec).Names {
						add(id)
					}
				}
			}
		}
	}
	return names
}

// TestGodocSnippetsCompile compiles every Go code block of the doc
// comments of exported names and package clauses in this checkout, and
// fails naming the file and line of each one that does not compile or vet.
func TestGodocSnippetsCompile(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	all, err := godocSnippets(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no Go code blocks found in the doc comments")
	}
	compiles(t, root, all, "Go blocks of doc comments")
}
