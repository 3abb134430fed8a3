// Package doccheck holds the test that keeps the repository's Markdown
// true to the code: every ```go block of every Markdown file (README.md,
// docs/, the backends' READMEs, …) is compiled against the current
// packages, and a complete program shown under a link to its file must be
// that file, byte for byte.
//
// A block that starts with a package clause is compiled as it is. Any
// other block is a snippet: its declarations, or else its statements as the
// body of a function returning error, are compiled in a package of their
// own, with the imports its package names need and stand-ins for the
// variables a snippet may take as given (ctx, pool, k, scope, … in
// fixtures_test.go). The test lives in the examples module because that
// module requires every store; a block may import nothing that module
// cannot. Compile errors name the Markdown file and line.
package doccheck
