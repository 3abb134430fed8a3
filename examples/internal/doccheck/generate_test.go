package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
)

// packages maps the package names a snippet may use to their import paths:
// a snippet gets the import of each name it selects from (http.Handler).
var packages = map[string]string{
	"atomic":      "sync/atomic",
	"backends":    "github.com/stagedoor/once/backends",
	"backendtest": "github.com/stagedoor/once/backends/backendtest",
	"bytes":       "bytes",
	"context":     "context",
	"errors":      "errors",
	"fmt":         "fmt",
	"hashers":     "github.com/stagedoor/once/hashers",
	"http":        "net/http",
	"httptest":    "net/http/httptest",
	"io":          "io",
	"json":        "encoding/json",
	"localcache":  "github.com/stagedoor/once/backends/localcache",
	"log":         "log",
	"math":        "math",
	"consume":     "github.com/stagedoor/once/consume",
	"memory":      "github.com/stagedoor/once/backends/memory",
	"mysqlstore":  "github.com/stagedoor/once/backends/mysqlstore",
	"once":        "github.com/stagedoor/once",
	"oncehttp":    "github.com/stagedoor/once/oncehttp",
	"onceslog":    "github.com/stagedoor/once/onceslog",
	"os":          "os",
	"pgx":         "github.com/jackc/pgx/v5",
	"pgxpool":     "github.com/jackc/pgx/v5/pgxpool",
	"reconcile":   "github.com/stagedoor/once/reconcile",
	"postgres":    "github.com/stagedoor/once/backends/postgres",
	"redis":       "github.com/redis/go-redis/v9",
	"redisstore":  "github.com/stagedoor/once/backends/redisstore",
	"slog":        "log/slog",
	"sql":         "database/sql",
	"sqlitestore": "github.com/stagedoor/once/backends/sqlitestore",
	"strings":     "strings",
	"sync":        "sync",
	"testing":     "testing",
	"time":        "time",
}

// unit returns the files of the package that b compiles as, by name. A
// //line comment makes the compiler report the block's errors at their
// line of the Markdown file.
func unit(b block) (map[string]string, error) {
	at := fmt.Sprintf("//line %s:%d\n", b.file, b.line)
	fset := token.NewFileSet()
	if f, err := parser.ParseFile(fset, "", b.text, parser.PackageClauseOnly); err == nil && f.Name != nil {
		return map[string]string{"block.go": at + b.text}, nil
	}
	if f, err := parser.ParseFile(fset, "", "package snippet\n"+b.text, parser.SkipObjectResolution); err == nil {
		declared := topLevelNames(f)
		return map[string]string{
			"block.go":    "package snippet\n\n" + imports(f, nil) + at + b.text,
			"fixtures.go": fixtureFile(declared),
		}, nil
	}
	wrapped := "package snippet\n\nfunc _() error {\n" + at + b.text + "\nreturn nil\n}\n"
	f, err := parser.ParseFile(fset, "", wrapped, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("a block at %s:%d is neither a Go file, nor declarations, nor statements: %w", b.file, b.line, err)
	}
	var used strings.Builder
	for _, name := range localNames(f) {
		fmt.Fprintf(&used, "_ = %s\n", name)
	}
	return map[string]string{
		"block.go": "package snippet\n\n" + imports(f, localNames(f)) +
			"func _() error {\n" + at + b.text + "\n" + used.String() + "return nil\n}\n",
		"fixtures.go": fixtureFile(nil),
	}, nil
}

// imports is the import declaration of the packages f selects from, but
// for names it declares as local variables.
func imports(f *ast.File, locals []string) string {
	var paths []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && packages[id.Name] != "" && !slices.Contains(locals, id.Name) {
				paths = append(paths, packages[id.Name])
			}
		}
		return true
	})
	if len(paths) == 0 {
		return ""
	}
	slices.Sort(paths)
	var s strings.Builder
	s.WriteString("import (\n")
	for _, p := range slices.Compact(paths) {
		fmt.Fprintf(&s, "\t%q\n", p)
	}
	s.WriteString(")\n\n")
	return s.String()
}

// topLevelNames returns the names f declares at package level (functions
// without a receiver, types, variables, constants).
func topLevelNames(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names = append(names, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = append(names, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	return names
}

// localNames returns the variables declared by the top-level statements of
// f's one function (x := …, var x …), which the snippet may leave unused.
func localNames(f *ast.File) []string {
	var names []string
	add := func(id *ast.Ident) {
		if id.Name != "_" && !slices.Contains(names, id.Name) {
			names = append(names, id.Name)
		}
	}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, s := range g.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						add(n)
					}
				}
			}
		}
	}
	return names
}
