package sqlstore

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one embedded up migration, rendered for a Store's names.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Files returns the directory "migrations" of files, the golang-migrate
// layout every SQL store embeds (NNN_name.up.sql and NNN_name.down.sql).
func Files(files fs.FS) fs.FS {
	sub, err := fs.Sub(files, "migrations")
	if err != nil {
		panic(err) // the embedded directory always exists
	}
	return sub
}

// Load returns the up migrations of Files(files) in version order, each
// rendered by rep (the store's default names replaced by its Config's).
func Load(files fs.FS, rep *strings.Replacer) ([]Migration, error) {
	dir := Files(files)
	entries, err := fs.Glob(dir, "*.up.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, p := range entries {
		base := strings.TrimSuffix(path.Base(p), ".up.sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("once: bad migration file name %q", p)
		}
		b, err := fs.ReadFile(dir, p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: rep.Replace(string(b))})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	return ms, nil
}
