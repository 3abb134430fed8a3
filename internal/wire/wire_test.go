package wire

import (
	"math"
	"runtime"
	"strings"
	"testing"
)

func encodeSample() []byte {
	e := NewEncoder(64)
	e.Byte(7)
	e.Uvarint(300)
	e.String("héllo\x00")
	e.Multimap(map[string][]string{"b": {"2", ""}, "a": {"1"}, "c": {}})
	e.Multimap(nil)
	e.Raw([]byte("rest"))
	return e.Bytes()
}

const sample = "\x07\xac\x02\x07héllo\x00" +
	"\x03\x01a\x01\x011\x01b\x02\x012\x00\x01c\x00" +
	"\x00rest"

func TestEncoding(t *testing.T) {
	if got := string(encodeSample()); got != sample {
		t.Fatalf("encoding = %q, want %q", got, sample)
	}
	var e Encoder // the zero value works
	e.Multimap(map[string][]string{})
	e.Uvarint(math.MaxUint64)
	if got, want := string(e.Bytes()), "\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"; got != want {
		t.Fatalf("encoding = %q, want %q", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	d := NewDecoder([]byte(sample))
	if c := d.Byte(); c != 7 {
		t.Fatalf("Byte = %d", c)
	}
	if v := d.Uvarint(); v != 300 {
		t.Fatalf("Uvarint = %d", v)
	}
	if s := d.String(); s != "héllo\x00" {
		t.Fatalf("String = %q", s)
	}
	m := d.Multimap()
	if len(m) != 3 || len(m["a"]) != 1 || m["a"][0] != "1" || len(m["b"]) != 2 || m["b"][0] != "2" || m["b"][1] != "" ||
		m["c"] == nil || len(m["c"]) != 0 {
		t.Fatalf("Multimap = %#v", m)
	}
	if m := d.Multimap(); m != nil {
		t.Fatalf("empty Multimap = %#v, want nil", m)
	}
	if r := string(d.Rest()); r != "rest" || d.Err() != nil {
		t.Fatalf("Rest = %q, Err = %v", r, d.Err())
	}
	d = NewDecoder([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	if v := d.Uvarint(); v != math.MaxUint64 || d.Err() != nil {
		t.Fatalf("Uvarint = %d, %v", v, d.Err())
	}
}

// decodeSample reads sample's fields and returns the error.
func decodeSample(data []byte) error {
	d := NewDecoder(data)
	d.Byte()
	d.Uvarint()
	_ = d.String()
	d.Multimap()
	d.Multimap()
	if d.Err() == nil && len(d.Rest()) == 0 {
		return nil // only the raw tail was cut
	}
	return d.Err()
}

// TestTruncated: every cut of the encoding inside its fields is
// ErrCorrupt, and the error sticks.
func TestTruncated(t *testing.T) {
	fields := len(sample) - len("rest")
	for i := range fields {
		if err := decodeSample([]byte(sample[:i])); err != ErrCorrupt {
			t.Errorf("cut at %d: err = %v, want ErrCorrupt", i, err)
		}
	}
	d := NewDecoder(nil)
	d.Byte()
	if d.Uvarint() != 0 || d.String() != "" || d.Multimap() != nil || d.Rest() != nil || d.Err() != ErrCorrupt {
		t.Fatal("the error does not stick")
	}
}

// corrupt lists bad inputs, the read that fails on them, and how many
// allocations the fields before the bad count may take (a map whose key
// count was plausible, a values slice); the bad count itself takes none.
var corrupt = map[string]struct {
	data   string
	read   func(*Decoder)
	allocs float64
}{
	"overlong varint":      {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", func(d *Decoder) { d.Uvarint() }, 0},
	"varint overflow":      {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", func(d *Decoder) { d.Uvarint() }, 0},
	"string past the end":  {"\x05abcd", func(d *Decoder) { _ = d.String() }, 0},
	"huge string":          {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01abc", func(d *Decoder) { _ = d.String() }, 0},
	"keys past the end":    {"\x03\x01a\x00", func(d *Decoder) { d.Multimap() }, 0},
	"huge #keys":           {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x01a\x00", func(d *Decoder) { d.Multimap() }, 0},
	"values past the end":  {"\x01\x01a\x03\x01b\x01c", func(d *Decoder) { d.Multimap() }, 2},
	"huge #values":         {"\x01\x01a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x01b", func(d *Decoder) { d.Multimap() }, 1},
	"huge key length":      {"\x01\xff\xff\xff\xff\x0f\x00", func(d *Decoder) { d.Multimap() }, 1},
	"huge value length":    {"\x01\x01a\x01\xff\xff\xff\xff\x0fb", func(d *Decoder) { d.Multimap() }, 2},
	"truncated key varint": {"\x01\x80", func(d *Decoder) { d.Multimap() }, 0},
}

// TestCorruptCounts: a count or length the input cannot hold is
// ErrCorrupt, found before anything is allocated for it.
func TestCorruptCounts(t *testing.T) {
	for name, c := range corrupt {
		d := NewDecoder([]byte(c.data))
		c.read(d)
		if d.Err() != ErrCorrupt {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, d.Err())
		}
		data := []byte(c.data)
		allocs := testing.AllocsPerRun(100, func() {
			*d = Decoder{data: data}
			c.read(d)
		})
		if allocs > c.allocs {
			t.Errorf("%s: %v allocations, want at most %v", name, allocs, c.allocs)
		}
	}
}

// TestAllocationBound: counts as large as the input allows, followed by
// junk, cost memory proportional to the input's length only.
func TestAllocationBound(t *testing.T) {
	const n = 4096
	for name, data := range map[string][]byte{
		"#keys":   []byte("\x80\x10" + strings.Repeat("\x00\x00", n/2-1) + "\x00\x80"),       // 2048 keys, the last one's #values cut
		"#values": append([]byte{0x01, 0x01, 'a', 0xff, 0x1f}, strings.Repeat("\x80", n)...), // 4095 values, then an unterminated varint
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		const runs = 10
		for range runs {
			d := NewDecoder(data)
			d.Multimap()
			if d.Err() != ErrCorrupt {
				t.Fatalf("%s: err = %v, want ErrCorrupt", name, d.Err())
			}
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 64*uint64(len(data)) {
			t.Errorf("%s: %d bytes allocated for %d bytes of input", name, per, len(data))
		}
	}
}
