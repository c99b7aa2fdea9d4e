// Package docsnippets holds the test that compiles every fenced Go block of
// README.md and docs/*.md against this checkout, so that the documentation's
// code cannot drift from the API.
//
// A block that starts with a package clause is a whole file and is compiled
// as it is. Any other block is a fragment: it becomes the body of func main
// in a package of its own, importing the packages it names (by their usual
// names: http, retrybudget, ledger, limiter, redis, riverjobs, ...). A
// fragment that uses names it does not declare (a store, a pool, a logger)
// names a companion file in an HTML comment on the line before its fence,
//
//	<!-- snippet: needs worker -->
//
// and the companion, docs/snippets/worker.go, declares them. Companions are
// Go files of package main behind the build tag "snippet", so the module's
// own build ignores them; the test compiles them with their fragments.
//
// All blocks build in one scratch module, one package per block, with one
// "go vet ./...", whose errors carry the Markdown file and line of the code
// (through //line directives).
package docsnippets
