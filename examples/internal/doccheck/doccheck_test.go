package doccheck

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository, from this package's directory.
const root = "../../.."

// markdownBlocks returns the ```go blocks of every Markdown file of the
// repository, with paths relative to its root. Hidden directories and
// testdata are skipped.
func markdownBlocks(t *testing.T) []block {
	t.Helper()
	var blocks []block
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".md" {
			return nil
		}
		md, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		blocks = append(blocks, goBlocks(filepath.ToSlash(rel), string(md))...)
		return nil
	})
	require.NoError(t, err)
	return blocks
}

// compile builds every block as a package of its own, placed by an
// overlay under this directory (so inside the examples module, with its
// requirements) without writing into the tree, and returns the go
// command's output.
func compile(t *testing.T, blocks []block) (string, error) {
	t.Helper()
	here, err := filepath.Abs(".")
	require.NoError(t, err)
	tmp := t.TempDir()
	replace := map[string]string{}
	var pkgs []string
	for i, b := range blocks {
		files, err := unit(b)
		if err != nil {
			return "", err
		}
		dir := filepath.Join(here, "blocks", fmt.Sprintf("b%03d", i))
		for name, text := range files {
			backing := filepath.Join(tmp, fmt.Sprintf("b%03d_%s", i, name))
			require.NoError(t, os.WriteFile(backing, []byte(text), 0o600))
			replace[filepath.Join(dir, name)] = backing
		}
		pkgs = append(pkgs, dir)
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	require.NoError(t, err)
	overlayFile := filepath.Join(tmp, "overlay.json")
	require.NoError(t, os.WriteFile(overlayFile, overlay, 0o600))
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"build", "-overlay", overlayFile}, pkgs...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestGoBlocksCompile compiles every Go block of every Markdown file.
func TestGoBlocksCompile(t *testing.T) {
	blocks := markdownBlocks(t)
	var files []string
	for _, b := range blocks {
		files = append(files, b.file)
	}
	require.Contains(t, files, "README.md", "the README shows Go code")
	out, err := compile(t, blocks)
	require.NoError(t, err, "a Go block of the Markdown does not compile:\n%s", out)
	slices.Sort(files)
	t.Logf("%d Go blocks compiled, from %d files", len(blocks), len(slices.Compact(files)))
}

// TestShownProgramsAreTheirFiles checks that a block introduced by a link
// to a .go file is that file.
func TestShownProgramsAreTheirFiles(t *testing.T) {
	shown := 0
	for _, b := range markdownBlocks(t) {
		if b.shows == "" {
			continue
		}
		shown++
		want, err := os.ReadFile(filepath.Join(root, filepath.Dir(b.file), b.shows))
		require.NoError(t, err, "%s:%d links to %s", b.file, b.line, b.shows)
		if line, w, g, differ := firstDifference(string(want), b.text); differ {
			t.Errorf("%s:%d must show %s as it is; its line %d is\n\t%q\nand the block's\n\t%q", b.file, b.line, b.shows, line, w, g)
		}
	}
	require.NotZero(t, shown, "the README shows the getting-started program")
}

// TestBrokenBlockFails checks that the check fails on a block that does
// not compile, naming its Markdown line, and passes every kind of block
// that does.
func TestBrokenBlockFails(t *testing.T) {
	md := "# A page\n\n" +
		"```go\nk := once.New(nil)\nv, err := once.Do(ctx, k.Scope(userID), key, fp, func(ctx context.Context) (int, error) { return 1, nil })\n```\n\n" +
		"```go\nfunc handler(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, time.Now()) }\n```\n\n" +
		"```go\npackage main\n\nfunc main() {}\n```\n"
	good := goBlocks("page.md", md)
	require.Len(t, good, 3)
	out, err := compile(t, good)
	require.NoError(t, err, out)

	broken := goBlocks("page.md", md+"\nText.\n\n```go\nstore, err := postgres.New(pool, nil)\nstore.NoSuchMethod()\n```\n")
	require.Len(t, broken, 4)
	out, err = compile(t, broken)
	require.Error(t, err)
	assert.Contains(t, out, "page.md:22:", "the error names the Markdown line")
	assert.Contains(t, out, "NoSuchMethod")
}

// TestGoBlocks checks the Markdown reading: other fences skipped, indented
// blocks dedented, the link to a shown file found.
func TestGoBlocks(t *testing.T) {
	md := "Intro.\n\n```sh\n```go\n```\n\n" +
		"[main.go](main.go):\n\n```go\npackage main\n```\n\n" +
		"- a list item:\n\n  ```go\n  x := 1\n  ```\n"
	blocks := goBlocks("a.md", md)
	require.Len(t, blocks, 2)
	assert.Equal(t, block{file: "a.md", line: 10, text: "package main\n", shows: "main.go"}, blocks[0])
	assert.Equal(t, block{file: "a.md", line: 16, text: "x := 1\n"}, blocks[1])
}

// firstDifference returns the first line, from 1, where want and got
// differ, and that line of each ("" past the end).
func firstDifference(want, got string) (line int, w, g string, differ bool) {
	ws, gs := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(ws), len(gs)); i++ {
		w, g = "", ""
		if i < len(ws) {
			w = ws[i]
		}
		if i < len(gs) {
			g = gs[i]
		}
		if w != g || i >= len(ws) || i >= len(gs) {
			return i + 1, w, g, true
		}
	}
	return 0, "", "", false
}
