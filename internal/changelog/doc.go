// Package changelog holds the test that keeps CHANGELOG.md honest: every
// exported name of the recorded API (testdata/api.txt, one
// "package.Name" or "package.Type.Member" a line) that no longer exists
// must be named in CHANGELOG.md, with its successor. Additions need no
// entry. After a release, "go test ./internal/changelog -update" records
// the API as it is.
//
// The API is read from the source (go/parser), over every package of the
// checkout's modules but commands, examples, benchmarks, the end-to-end
// suite, internal packages and tests.
package changelog
