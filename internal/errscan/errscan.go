// Package errscan reads a Go file's sentinel errors from its source, for
// the tests that check every sentinel a package declares is mapped where
// it must be (redisstore's error tables, the HTTP error table).
package errscan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
)

// Sentinels returns the messages of the variables of the Go file at path
// that are set to errors.New of a string literal, by name.
func Sentinels(path string) (map[string]string, error) {
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, v := range vs.Values {
			call, ok := v.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 || i >= len(vs.Names) {
				continue
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "New" {
				continue
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "errors" {
				continue
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					out[vs.Names[i].Name] = s
				}
			}
		}
		return true
	})
	return out, nil
}
