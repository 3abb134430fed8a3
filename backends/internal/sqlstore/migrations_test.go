package sqlstore

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	files := fstest.MapFS{
		"migrations/002_more.up.sql":   {Data: []byte(`ALTER "t"`)},
		"migrations/001_init.up.sql":   {Data: []byte(`CREATE "t"`)},
		"migrations/001_init.down.sql": {Data: []byte(`DROP "t"`)},
	}
	ms, err := Load(files, strings.NewReplacer(`"t"`, `"u"`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Migration{{1, "init", `CREATE "u"`}, {2, "more", `ALTER "u"`}}
	if len(ms) != len(want) || ms[0] != want[0] || ms[1] != want[1] {
		t.Fatalf("Load = %+v, want %+v", ms, want)
	}
	files["migrations/x_bad.up.sql"] = &fstest.MapFile{}
	if _, err := Load(files, strings.NewReplacer()); err == nil {
		t.Fatal("a file name without a version was accepted")
	}
}
