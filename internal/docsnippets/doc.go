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
// The Go code blocks of doc comments (the package clause's and those of
// exported names, outside internal packages and commands) compile the same
// way: a block that parses as Go is Go, its import lines are its imports,
// its home package is importable under its name, and the names it
// declares count as used, as a block shows how to build something and
// stops. A directive in the comment, which godoc does not show, names its
// companions (//snippet:needs app, sdk) or says its blocks are not Go
// though they parse (//snippet:text, for a formula).
//
// All blocks build in one scratch module, one package per block, with one
// "go vet ./...", whose errors carry the Markdown file and line of the code
// (through //line directives).
package docsnippets
